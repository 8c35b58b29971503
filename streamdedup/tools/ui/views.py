"""What the web inspector's pages share (pure: no web framework here).

Cursors travel in links as ``partition:offset`` pairs (``0:120,1:98``); filters come from the
query string and are checked with the same messages as the command line's options.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping
from urllib.parse import urlencode

from streamdedup.tools.inspection.reader import Cursor, Filter

RELATIONS = ("exact", "near_duplicate", "contains", "contained_in")


class BadQuery(ValueError):
    """A query parameter the page cannot use (shown to the user with status 400)."""


def cursor_text(c: Cursor) -> str:
    """>>> cursor_text({1: 98, 0: 120})
    '0:120,1:98'
    """
    return ",".join(f"{p}:{o}" for p, o in sorted(c.items()))


def parse_cursor(text: str) -> Cursor:
    """>>> parse_cursor("0:120,1:98")
    {0: 120, 1: 98}
    """
    out: Cursor = {}
    for part in text.split(","):
        p, _, o = part.strip().partition(":")
        if not (p.isdecimal() and o.isdecimal()) or max(int(p), int(o)) > MAX_WHOLE_NUMBER:
            raise BadQuery(f"cursor {text!r}: expected partition:offset pairs such as 0:120,1:98")
        out[int(p)] = int(o)
    return out


def _float(q: Mapping[str, str], name: str) -> float | None:
    v = (q.get(name) or "").strip()
    if not v:
        return None
    try:
        x = float(v)
    except ValueError:
        raise BadQuery(f"{name} {v!r} is not a number") from None
    if not 0.0 <= x <= 1.0:
        raise BadQuery(f"{name} {v} is outside 0..1")
    return x


@dataclass(frozen=True)
class ListQuery:
    """The list page's filters, as given (kept to build the paging links)."""

    relation: str = ""
    min_similarity: float | None = None
    max_similarity: float | None = None
    id: str = ""

    @classmethod
    def parse(cls, q: Mapping[str, str]) -> "ListQuery":
        relation = (q.get("relation") or "").strip()
        if relation and relation not in RELATIONS:
            raise BadQuery(f"relation {relation!r} is not one of {', '.join(RELATIONS)}")
        lo, hi = _float(q, "min"), _float(q, "max")
        if lo is not None and hi is not None and lo > hi:
            raise BadQuery(f"min similarity {lo} is above max similarity {hi}")
        return cls(relation, lo, hi, (q.get("id") or "").strip())

    def filter(self) -> Filter:
        return Filter(frozenset({self.relation}) if self.relation else None, self.min_similarity, self.max_similarity,
                      frozenset({self.id}) if self.id else None)

    def params(self, **extra: str) -> str:
        """A query string with these filters and ``extra`` (paging)."""
        given = {"relation": self.relation, "min": "" if self.min_similarity is None else f"{self.min_similarity:g}",
                 "max": "" if self.max_similarity is None else f"{self.max_similarity:g}", "id": self.id, **extra}
        return urlencode({k: v for k, v in given.items() if v})


def when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def fig(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def settings_lines(text: str) -> list[str]:
    """The what-if form's ``setting=value`` lines (blank lines and ``#`` comments skipped).

    >>> settings_lines("verify.jaccard_threshold = 0.7\\n\\n# note\\n")
    ['verify.jaccard_threshold=0.7']
    """
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip():
            raise BadQuery(f"line {n}: {line!r} is not setting=value (e.g. verify.jaccard_threshold=0.7)")
        out.append(f"{key.strip()}={value.strip()}")
    if not out:
        raise BadQuery("give at least one setting=value line (e.g. verify.jaccard_threshold=0.7)")
    return out


def threshold_checks(verify, why) -> list[tuple[str, str, str, bool | None]]:
    """The ``verify.*`` thresholds next to this pair's recomputed figures: (setting, its value,
    the pair's figure, whether the figure clears it; None when there is no figure)."""
    if why is None:
        return [("verify.jaccard_threshold", f"{verify.jaccard_threshold:g}", "-", None)]
    contained = max(why.containment_copy_in_earlier, why.containment_earlier_in_copy)
    ld = why.ld_similarity
    return [
        ("verify.jaccard_threshold", f"{verify.jaccard_threshold:g}", f"Jaccard {fig(why.jaccard)}",
         why.jaccard >= verify.jaccard_threshold),
        ("verify.ld_similarity_threshold, with Jaccard >= verify.ld_min_jaccard",
         f"{verify.ld_similarity_threshold:g}, {verify.ld_min_jaccard:g}", f"LD {fig(ld)}, Jaccard {fig(why.jaccard)}",
         None if ld is None else ld >= verify.ld_similarity_threshold and why.jaccard >= verify.ld_min_jaccard),
        ("verify.containment_threshold", f"{verify.containment_threshold:g}", f"containment {fig(contained)}",
         contained >= verify.containment_threshold),
        # a short copy (teaser) may be contained_in with a lower estimate when its signature
        # embeds in the earlier one's (verify.py); the recomputed relation says whether it did
        ("verify.contained_min_estimate (contained_in, with the signature embedded)",
         f"{verify.contained_min_estimate:g}", f"copy in earlier {fig(why.containment_copy_in_earlier)}",
         why.containment_copy_in_earlier >= verify.contained_min_estimate),
        ("verify.exact_gram_jaccard, digits as 0 adding <= verify.exact_max_digit_gain, own words one edit away >= "
         "verify.exact_min_near_words (below ld_min_jaccard, LD >= verify.exact_min_ld)",
         f"{verify.exact_gram_jaccard:g}, {verify.exact_max_digit_gain:g}, {verify.exact_min_near_words:g}"
         + ("" if verify.exact_evidence else " (off)"),
         "-" if why.grams is None else f"8-gram {fig(why.grams[0])}, digits as 0 {why.grams[1] - why.grams[0]:+.3f}, "
         f"near words {fig(why.grams[2])}",
         None if why.grams is None else why.grams[0] >= verify.exact_gram_jaccard
         and why.grams[1] - why.grams[0] <= verify.exact_max_digit_gain and why.grams[2] >= verify.exact_min_near_words),
        ("verify.short_exact_containment, digits as 0 adding <= verify.exact_max_digit_gain (a text at most half "
         "the earlier's, containment estimate >= verify.short_exact_min_estimate)",
         f"{verify.short_exact_containment:g}, {verify.exact_max_digit_gain:g}" + ("" if verify.exact_evidence else " (off)"),
         "-" if why.grams is None else f"8-gram containment {fig(why.grams[3])}, digits as 0 {why.grams[4] - why.grams[3]:+.3f}",
         None if why.grams is None else why.grams[3] >= verify.short_exact_containment
         and why.grams[4] - why.grams[3] <= verify.exact_max_digit_gain),
        ("verify.duplicate_relations", ", ".join(verify.duplicate_relations), why.relation,
         why.relation in verify.duplicate_relations),
    ]


#: page and size parameters beyond this are refused (a 64-bit overflow was a 500)
MAX_WHOLE_NUMBER = 2**53


def whole_number(name: str, text: str, default: int) -> int:
    """A whole-number parameter (``default`` when blank).

    Raises:
        BadQuery: not a whole number, or beyond :data:`MAX_WHOLE_NUMBER`.
    """
    v = text.strip()
    if not v:
        return default
    try:
        n = int(v)
    except ValueError:
        raise BadQuery(f"{name} {v!r} is not a whole number") from None
    if abs(n) > MAX_WHOLE_NUMBER:
        raise BadQuery(f"{name} {v!r} is out of range")
    return n
