"""Rich renderings of the inspect model: a pair side by side with its word diff and the
why-matched table, and the clusters table (``streamdedup inspect``)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Sequence

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from streamdedup.config import VerifyConfig
from streamdedup.tools.inspection.pair import DELETE, INSERT, Explanation, Pair, Segment
from streamdedup.tools.inspection.pair import ELIDED as ELIDED_RUN
from streamdedup.tools.inspection.pair import side as side_runs
from streamdedup.tools.inspection.reader import Cluster

DELETED = "bold red strike"
INSERTED = "bold green"
ELIDED = "dim italic"


#: characters a terminal acts on instead of showing: C0 controls (ESC starts colour, title,
#: hyperlink and clear-screen sequences), DEL, C1 controls, and the bidirectional overrides
#: that make a text read differently from what it holds
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(text: str | None) -> str:
    r"""``text`` with every character a terminal would act on shown as its escape; ids and texts
    are untrusted input (a record id ``\x1b[2J`` cleared the operator's screen).

    >>> safe("a\x1b[2Jb\u202e")
    'a\\x1b[2Jb\\u202e'
    """
    if not text:
        return text or ""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def _when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def diff_text(diff: Sequence[Segment], side: str, context: int = 12) -> Text:
    """One column of a side-by-side diff: ``side`` ``"earlier"`` shows unchanged and deleted
    words (red, struck through), ``"copy"`` unchanged and inserted ones (green).

    ``context`` unchanged words are kept around each change; -1 keeps the whole text.
    """
    out = Text()
    for s in side_runs(diff, side, context):
        if out:
            out.append(" ")
        if s.op == ELIDED_RUN:
            out.append(f"[... {len(s.words)} words ...]", style=ELIDED)
        else:
            out.append(safe(" ".join(s.words)), style={DELETE: DELETED, INSERT: INSERTED}.get(s.op, ""))
    return out


def _doc_title(role: str, doc, fallback_id: str | None) -> str:
    # a column header is read as rich markup: "[" of an id must stay text
    if doc is None:
        return f"{role} {escape(safe(fallback_id)) or '?'} (not fetched)"
    where = f" @ {escape(safe(doc.position))}" if doc.position else ""
    return f"{role} {escape(safe(doc.id))}{where}" + (f"\n{_when(doc.time_ms)}" if doc.time_ms else "")


def _side_by_side(earlier_role: str, earlier, earlier_id: str | None, p: Pair, diff, context: int) -> Table:
    table = Table(show_header=True, show_lines=False, expand=True, header_style="bold")
    table.add_column(_doc_title(earlier_role, earlier, earlier_id), ratio=1)
    table.add_column(_doc_title("copy", p.copy, None), ratio=1)
    if diff is None:
        table.add_row(Text("(no text)", style=ELIDED), Text(safe(" ".join(p.copy.text.split()[: 2 * context + 1]))))
    else:
        table.add_row(diff_text(diff, "earlier", context), diff_text(diff, "copy", context))
    return table


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _why_rows(e: Explanation | None) -> list[str]:
    if e is None:
        return ["-"] * 11
    return [
        f"{e.relation} ({'duplicate' if e.is_duplicate else 'not a duplicate'})",
        _fmt(e.jaccard), _fmt(e.ld_similarity),
        f"{_fmt(e.containment_copy_in_earlier)} / {_fmt(e.containment_earlier_in_copy)}", e.containment_direction,
        f"{e.shared_bands} of {e.bands}", f"{e.shared_lead_bands} of {e.lead_bands}",
        f"{e.shared_char_bands} of {e.char_bands}", "yes" if e.same_canonical else "no",
        "-" if e.grams is None else f"{_fmt(e.grams[0])} (digits as 0: {e.grams[1] - e.grams[0]:+.3f}; own words one "
        f"edit away: {e.grams[2]:.2f})", "; ".join(e.reasons),
    ]


WHY_MEASURES = ("relation (recomputed)", "Jaccard (MinHash estimate)", "LD similarity (calibrated)",
                "containment copy in earlier / earlier in copy", "containment direction", "shared LSH bands",
                "shared lead bands", "shared character bands", "same canonical text",
                "exact 8-gram Jaccard (character noise)", "why")


def why_table(p: Pair) -> Table:
    """The estimates for the copy against the document that matched it (and its root)."""
    table = Table(show_header=True, header_style="bold", title_justify="left")
    table.add_column("measure")
    if p.matched_is_root or p.why_original is None:
        table.add_column("copy vs " + ("original" if p.matched_is_root else "matched"))
        for name, v in zip(WHY_MEASURES, _why_rows(p.why)):
            table.add_row(name, v)
    else:
        table.add_column("copy vs matched (decided)")
        table.add_column("copy vs original (root)")
        for name, a, b in zip(WHY_MEASURES, _why_rows(p.why), _why_rows(p.why_original)):
            table.add_row(name, a, b)
    return table


def thresholds_line(verify: VerifyConfig) -> Text:
    return Text(
        f"thresholds (verify.*): Jaccard >= {verify.jaccard_threshold}; LD similarity >= {verify.ld_similarity_threshold} "
        f"with Jaccard >= {verify.ld_min_jaccard}; containment >= {verify.containment_threshold} "
        f"(of a short copy in its original: >= {verify.contained_min_estimate} with the signature embedded); "
        f"below that Jaccard at LD >= {verify.exact_min_ld}: exact 8-gram Jaccard >= {verify.exact_gram_jaccard}, "
        f"digits as 0 adding <= {verify.exact_max_digit_gain}, own words one edit away >= {verify.exact_min_near_words}"
        f"{'' if verify.exact_evidence else ' (off)'}; "
        f"duplicate relations: {', '.join(verify.duplicate_relations)}", style="dim")


def render_pair(p: Pair, verify: VerifyConfig, context: int = 12) -> Group:
    """A duplicate, its original (and matched document) side by side with the word diff, why
    it matched and the thresholds that applied."""
    t = p.tags
    head = Text.assemble(("duplicate ", "bold"), (safe(p.copy.id), "bold cyan"), f" @ {safe(p.copy.position)}  ",
                         (safe(t.relation) or "?", "bold magenta"),
                         f"  recorded: Jaccard {_fmt(t.similarity)}, LD similarity {_fmt(t.ld_similarity)}, "
                         f"matched {safe(t.matched) or '?'}")
    parts: list = [head]
    if t.reason:
        parts.append(Text(f"engine's reason: {safe(t.reason)}", style="dim"))
    if t.malformed:
        parts.append(Text(f"malformed tags (not numbers or text; ignored): {', '.join('dedup.' + m for m in t.malformed)}",
                          style="yellow"))
    parts.append(_side_by_side("original", p.original, t.duplicate_of, p, p.diff, context))
    if not p.matched_is_root:
        parts.append(Text("matched a later copy of the original, not the original itself:", style="yellow"))
        parts.append(_side_by_side("matched", p.matched, t.matched, p, p.matched_diff, context))
    parts.append(why_table(p))
    parts.append(thresholds_line(verify))
    parts += [Text(safe(m), style="yellow") for m in p.missing]
    return Group(*parts)


def clusters_table(found: Sequence[Cluster], scanned: int, limit: int) -> Table:
    shown = list(found)[:limit]
    first = min((c.first_ms for c in found if c.first_ms is not None), default=None)
    last = max((c.last_ms for c in found if c.last_ms is not None), default=None)
    span = f", {_when(first)} .. {_when(last)}" if first is not None else ""
    table = Table(title=f"{len(found)} roots with copies among {scanned:,} duplicates read{span}", header_style="bold")
    for col in ("root", "copies", "relations", "lowest Jaccard", "first copy", "last copy", "root position"):
        table.add_column(col)
    for c in shown:
        table.add_row(Text(safe(c.root)), str(c.copies), Text(safe(", ".join(f"{k} {v}" for k, v in c.relations.most_common()))),
                      _fmt(c.min_similarity), _when(c.first_ms), _when(c.last_ms), Text(safe(c.position)))
    return table
