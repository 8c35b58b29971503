"""The overview's charts as inline SVG, drawn on the server (pure: no web framework, no JavaScript).

No chart library and nothing fetched: the inspector works offline, and a chart is part of the
page's HTML. Colours come from ui.css (classes such as ``bar exact``). Every text that comes
from records (ids, dead-letter reasons, relation names) is escaped here, in text and in
attributes; a hover tooltip is an SVG ``<title>``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

from markupsafe import Markup, escape

from streamdedup.tools.inspection.overview import BINS, Histogram, Rate, Summary

#: relations in the order bars are stacked (others after them)
ORDER = ("exact", "near_duplicate", "contains", "contained_in")


def _svg(width: int, height: int, label: str, body: list[str]) -> Markup:
    return Markup(f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
                  f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _text(x: float, y: float, s: str, cls: str = "", anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" text-anchor="{anchor}">{escape(s)}</text>'


def _rect(x: float, y: float, w: float, h: float, cls: str, title: str) -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" class="{escape(cls)}">'
            f"<title>{escape(title)}</title></rect>")


def _clock(ms: int, step_ms: int) -> str:
    """A time as precise as ``step_ms`` needs (0: to the second, with the date)."""
    fmt = ("%Y-%m-%d %H:%M:%S" if step_ms == 0 else "%Y-%m-%d" if step_ms >= 86_400_000
           else "%m-%d %H:%M" if step_ms >= 60_000 else "%H:%M:%S")
    when = datetime.fromtimestamp(ms / 1000, timezone.utc)
    if 0 < step_ms < 1000:  # buckets within a second: their milliseconds tell them apart
        return when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    return when.strftime(fmt)


def _grid(x: float) -> tuple[float, int]:
    """Grid step and lines for a largest share ``x`` (0..1): at most five, at round percentages.

    >>> _grid(0.23), _grid(0.0), _grid(1.0)
    ((0.05, 5), (0.01, 1), (0.2, 5))
    """
    step = next(s for s in (0.01, 0.02, 0.05, 0.1, 0.2) if x <= 5 * s)
    return step, max(1, -int(-x // step))


def rate_chart(rate: Rate, width: int = 1300, height: int = 220) -> Markup:
    """Duplicate rate per bucket: a bar per bucket (its tooltip: the time, the counts)."""
    left, right, top, bottom = 44, 10, 12, 34
    body: list[str] = []
    rates = [b.rate for b in rate.buckets]
    step, lines = _grid(max((r for r in rates if r is not None), default=0.0))
    ymax = step * lines
    ph, pw = height - top - bottom, width - left - right
    for k in range(lines + 1):
        y = top + ph - ph * k / lines
        body.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        body.append(_text(left - 6, y + 4, f"{step * k:.0%}", "axis", "end"))
    n = max(1, len(rate.buckets))
    slot = pw / n
    for i, b in enumerate(rate.buckets):
        total = b.unique + b.duplicate
        tip = (f"{_clock(b.start_ms, 0)} UTC + {_step_text(rate.step_ms)}: {b.duplicate:,} duplicates of {total:,} "
               f"records" + ("" if b.rate is None else f" ({b.rate:.1%})"))
        h = 0.0 if b.rate is None else ph * b.rate / ymax
        body.append(_rect(left + i * slot + slot * 0.1, top + ph - h, slot * 0.8, h, "bar rate", tip))
    for i in sorted({0, n // 2, n - 1}) if rate.buckets else []:
        anchor = "start" if i == 0 else "end" if i == n - 1 and n > 1 else "middle"
        x = left + i * slot + (0 if anchor == "start" else slot if anchor == "end" else slot / 2)
        body.append(_text(x, height - bottom + 16, _clock(rate.buckets[i].start_ms, rate.step_ms), "axis", anchor))
    body.append(_text(left, height - 4, f"UTC, a bar per {_step_text(rate.step_ms)}", "axis"))
    return _svg(width, height, "duplicate rate over time", body)


def _step_text(ms: int) -> str:
    """>>> _step_text(1000), _step_text(300_000), _step_text(3 * 3_600_000), _step_text(86_400_000)
    ('1 second', '5 minutes', '3 hours', '1 day')
    """
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1000)):
        if ms % size == 0:
            k = ms // size
            return f"{k} {unit}" + ("" if k == 1 else "s")
    return f"{ms} ms"


def bars_chart(items: Sequence[tuple[str, int, str | None, str]], label: str, width: int = 420,
               row: int = 24, share: bool = True) -> Markup:
    """Horizontal bars: (label, count, link or None, css class) each, longest first as given;
    ``share``: each count's share of the items' sum is written next to it."""
    total = sum(n for _, n, _, _ in items) or 1
    most = max((n for _, n, _, _ in items), default=1) or 1
    text_w, num_w = 150, 90
    bar_w = width - text_w - num_w
    body: list[str] = []
    for i, (name, n, href, cls) in enumerate(items):
        y = i * row + 4
        shown = name if len(name) <= 24 else name[:23] + "\u2026"
        item = [_text(text_w - 6, y + row * 0.62, shown, "label", "end"),
                _rect(text_w, y + 3, bar_w * n / most, row - 8, f"bar {cls}", f"{name}: {n:,} ({n / total:.1%})"),
                _text(text_w + bar_w * n / most + 6, y + row * 0.62, f"{n:,} · {n / total:.0%}" if share else f"{n:,}", "num")]
        if href is not None:
            item = [f'<a href="{escape(href)}">', *item, "</a>"]
        body.extend(item)
    return _svg(width, max(row, len(items) * row + 8), label, body)


def histogram_chart(h: Histogram, thresholds: Sequence[tuple[str, float]], width: int = 420,
                    height: int = 230) -> Markup:
    """Bins over 0..1 stacked by relation, with a dashed line and its name at each threshold."""
    left, right, top, bottom = 36, 10, 12, 30
    pw, ph = width - left - right, height - top - bottom
    rels = [r for r in ORDER if r in h.counts] + sorted(r for r in h.counts if r not in ORDER)
    per_bin = [sum(h.counts[r][k] for r in rels) for k in range(BINS)]
    most = max(per_bin, default=0) or 1
    body = [f'<line x1="{left}" x2="{width - right}" y1="{top + ph}" y2="{top + ph}" class="grid"/>',
            _text(left - 4, top + 8, f"{most:,}", "axis", "end"), _text(left - 4, top + ph, "0", "axis", "end")]
    slot = pw / BINS
    for k in range(BINS):
        y = top + ph
        for r in rels:
            c = h.counts[r][k]
            if c:
                bh = ph * c / most
                y -= bh
                tip = f"{h.name} {k / BINS:.2f}-{(k + 1) / BINS:.2f}: {c:,} {r}"
                body.append(_rect(left + k * slot + 0.5, y, slot - 1, bh, f"bar {r}", tip))
    for x in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(_text(left + pw * x, height - bottom + 14, f"{x:g}", "axis", "middle"))
    for name, x in thresholds:
        px = left + pw * x
        body.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top - 4}" y2="{top + ph}" class="threshold">'
                    f"<title>{escape(name)} = {x:g}</title></line>")
        # along its line, reading upwards: labels of close thresholds never collide
        body.append(f'<text x="{px - 3:.1f}" y="{top + ph - 2}" class="threshold-label" text-anchor="start" '
                    f'transform="rotate(-90 {px - 3:.1f} {top + ph - 2})">{escape(name)} {x:g}</text>')
    also = f"; {h.unmeasured:,} more without one: short copies" if h.unmeasured else ""
    body.append(_text(left + pw / 2, height - 4, f"{h.name} ({h.total:,} duplicates{also})", "axis", "middle"))
    return _svg(width, height, f"{h.name} histogram", body)


def overview_charts(s: Summary, verify) -> dict[str, Markup | list[Markup] | None]:
    """The overview page's charts (None where there is nothing to draw); ``verify``: the config's
    ``verify`` section, whose thresholds are drawn on the histograms."""
    from urllib.parse import quote

    jac, ld, cont = s.histograms
    lines = {"Jaccard": [("jaccard_threshold", verify.jaccard_threshold), ("ld_min_jaccard", verify.ld_min_jaccard)],
             "LD similarity": [("ld_similarity_threshold", verify.ld_similarity_threshold)],
             "containment": [("contained_min_estimate", verify.contained_min_estimate),
                             ("containment_threshold", verify.containment_threshold)]}
    relations = [(r, n, f"/duplicates?relation={quote(r)}" if r in ORDER else None, r) for r, n in s.relations]
    clusters = [(c.root, c.copies, f"/duplicates?id={quote(c.root, safe='')}", "root") for c in s.clusters]
    return {
        "rate": rate_chart(s.rate) if s.rate.buckets else None,
        "relations": bars_chart(relations, "relations of the duplicates") if relations else None,
        "histograms": [histogram_chart(h, lines[h.name]) for h in (jac, ld, cont) if h.total or h.unmeasured],
        "dead": bars_chart([(st, n, None, "dead") for st, n in s.dead_stages], "dead letters by stage")
        if s.dead_stages else None,
        "clusters": bars_chart(clusters, "largest clusters", width=560, share=False) if clusters else None,
    }
