"""The tags a record leaves with, in both encodings, and their parsing (pure).

One module owns the format, so Kafka headers, file mode's ``"_dedup"`` object, the demo, the
tests and the operator tools agree on it:

- Kafka: headers ``dedup.status`` (``unique`` | ``duplicate`` | ``revision`` | ``dead_letter``),
  then for a unique record ``dedup.duplicate_of``, ``dedup.relation``, ``dedup.similarity``
  (empty), for a duplicate those filled in plus ``dedup.ld_similarity``, ``dedup.matched``,
  ``dedup.reason``, ``dedup.original`` and ``dedup.matched_source`` (where the root and the
  matched document were read: ``topic:partition:offset`` of the input, ``line:N`` in file mode,
  empty when the engine no longer holds that document), for a revision (a duplicate whose
  content changed: it goes where ``verify.revisions`` says) the same plus ``dedup.changed``
  (what changed: items such as ``600 -> 500``, ``+not``, ``corrected``, joined by ``"; "``), for a dead letter ``dedup.stage``, ``dedup.reason`` and ``dedup.source``.
  A dead letter too large to produce whole (its value cut to a prefix, its own headers
  dropped) adds ``dedup.original_bytes``: the size of the original value. A record decided
  at the stream's time (or its arrival time) because its own event time was unusable adds
  ``dedup.time_invalid``: the reason (``decode``).
  Numbers are written with four decimals; an absent value is an empty header.
- File mode: the same fields as a JSON object spliced into the output line under ``"_dedup"``
  (absent values are ``null``; ``changed`` a list; ``time_invalid`` only when set); a dead-letter line is ``{"line", "stage", "reason", "raw"}``.

Incoming headers named ``dedup.*`` are renamed ``dedup.upstream.*`` before the tags are added
(:func:`passthrough_headers`): an upstream stage (or an attacker) cannot make a record look
decided, and a reader that takes the first ``dedup.status`` gets ours.

>>> t = DuplicateTags("a", "near_duplicate", 0.81234, None, "b", "estimated Jaccard 0.81")
>>> parse_headers(duplicate_headers(t)) == parse_file_tags(b"{" + file_tags(t))
True
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import orjson

PREFIX = "dedup."
UPSTREAM = "dedup.upstream."
#: dead-letter reasons are cut to this many bytes in a header (a reason quotes bad input)
MAX_REASON_BYTES = 4000


@dataclass(slots=True)  # not frozen: a frozen class's __init__ cost ~2 us, paid per duplicate
class DuplicateTags:
    duplicate_of: str
    relation: str
    similarity: float | None
    ld_similarity: float | None
    matched: str
    reason: str
    #: the root's (original's) input position and the matched document's: ``topic:partition:offset``
    #: or ``line:N``; empty when unknown (a document the engine no longer holds)
    original: str = ""
    matched_source: str = ""
    #: ``revision`` for a duplicate whose content changed (``changed`` says how)
    status: str = "duplicate"
    changed: tuple[str, ...] = ()


@dataclass(slots=True)  # not frozen: a frozen class's __init__ cost ~2 us, paid per duplicate
class DeadLetterTags:
    stage: str
    reason: str
    #: where the record came from: ``topic:partition:offset`` or ``line:N``
    source: str


@dataclass(frozen=True)
class Tags:
    """Tags as a reader sees them, from either encoding (None where a field is absent)."""

    status: str
    duplicate_of: str | None = None
    relation: str | None = None
    similarity: float | None = None
    ld_similarity: float | None = None
    matched: str | None = None
    reason: str | None = None
    stage: str | None = None
    source: str | None = None
    #: a truncated dead letter's original value size (None for a whole one)
    original_bytes: int | None = None
    #: a duplicate's root (original) and matched document: their input positions
    original: str | None = None
    matched_source: str | None = None
    #: why the record's own event time was not used (it was decided at the stream's time)
    time_invalid: str | None = None
    #: tags present but unreadable (not a number, not text): shown as malformed, never trusted
    malformed: tuple[str, ...] = ()
    #: what a revision changed
    changed: tuple[str, ...] = ()


def _num(x: float | None) -> bytes:
    return b"" if x is None else b"%.4f" % x


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


#: the headers of every unique record (constant: one list shared by all of them)
UNIQUE_HEADERS: list[tuple[str, bytes]] = [
    ("dedup.status", b"unique"), ("dedup.duplicate_of", b""), ("dedup.relation", b""), ("dedup.similarity", b"")]
#: the ``_dedup`` object of every unique record
UNIQUE_OBJECT = {"status": "unique", "duplicate_of": None, "relation": None, "similarity": None}
#: what file mode splices into a unique line before its closing brace
UNIQUE_SPLICE = b'"_dedup":' + orjson.dumps(UNIQUE_OBJECT) + b"}"


#: what joins a revision's changed items in its header
CHANGED_SEP = "; "


def duplicate_headers(t: DuplicateTags) -> list[tuple[str, bytes]]:
    out = [
        ("dedup.status", t.status.encode()),
        ("dedup.duplicate_of", t.duplicate_of.encode()),
        ("dedup.relation", t.relation.encode()),
        ("dedup.similarity", _num(t.similarity)),
        ("dedup.ld_similarity", _num(t.ld_similarity)),
        ("dedup.matched", t.matched.encode()),
        ("dedup.reason", t.reason.encode()),
        ("dedup.original", t.original.encode()),
        ("dedup.matched_source", t.matched_source.encode()),
    ]
    if t.status == "revision":
        out.append(("dedup.changed", CHANGED_SEP.join(t.changed).encode()))
    return out


def dead_letter_headers(t: DeadLetterTags) -> list[tuple[str, bytes]]:
    return [("dedup.status", b"dead_letter"), ("dedup.stage", t.stage.encode()),
            ("dedup.reason", t.reason.encode("utf-8", "replace")[:MAX_REASON_BYTES]), ("dedup.source", t.source.encode())]


def truncated_dead_letter_headers(t: DeadLetterTags, original_bytes: int, reason_bytes: int = MAX_REASON_BYTES) -> list:
    """The tags of a dead letter whose value was cut: no record headers before them (they may be
    what made it too large), the reason cut to ``reason_bytes``, and the original value's size."""
    return [("dedup.status", b"dead_letter"), ("dedup.stage", t.stage.encode()),
            ("dedup.reason", t.reason.encode("utf-8", "replace")[:reason_bytes]), ("dedup.source", t.source.encode()),
            ("dedup.original_bytes", str(original_bytes).encode())]


TIME_INVALID_HEADER = "dedup.time_invalid"


def time_invalid_header(reason: str) -> tuple[str, bytes]:
    return (TIME_INVALID_HEADER, reason.encode("utf-8", "replace")[:MAX_REASON_BYTES])


def with_time_invalid(spliced: bytes, reason: str) -> bytes:
    """``"_dedup":{...}}`` (file mode's tags) with ``"time_invalid": reason`` added to the object."""
    return spliced[:-2] + b',"time_invalid":' + orjson.dumps(reason) + b"}}"


def duplicate_object(t: DuplicateTags) -> dict:
    out = {"status": t.status, "duplicate_of": t.duplicate_of, "relation": t.relation, "similarity": _round(t.similarity),
           "ld_similarity": _round(t.ld_similarity), "matched": t.matched, "reason": t.reason,
           "original": t.original or None, "matched_source": t.matched_source or None}
    if t.status == "revision":
        out["changed"] = list(t.changed)
    return out


def file_tags(t: DuplicateTags) -> bytes:
    """``"_dedup":{...}}``: what file mode splices into a duplicate's line (ends the object)."""
    return b'"_dedup":' + orjson.dumps(duplicate_object(t)) + b"}"


def dead_letter_line(raw: bytes, line_no: int, t: DeadLetterTags) -> bytes:
    """File mode's dead-letter line: the raw input (base64 when it is not UTF-8) with the tags."""
    import base64

    out: dict = {"line": line_no, "stage": t.stage, "reason": t.reason}
    try:
        out["raw"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        out["raw_base64"] = base64.b64encode(raw).decode("ascii")
    return orjson.dumps(out)


def passthrough_headers(headers: list | None) -> list | None:
    """A record's own headers, with any ``dedup.*`` renamed ``dedup.upstream.*`` (None if none)."""
    if not headers:
        return None
    if not any(_ours(k) for k, _ in headers):
        return headers
    return [(UPSTREAM + k[len(PREFIX):] if _ours(k) else k, v) for k, v in headers]


def _ours(name: str) -> bool:
    # in any case: a reader that matches header names case-insensitively must not take an
    # upstream DEDUP.STATUS for ours
    return name[:len(PREFIX)].lower() == PREFIX


def with_tags(headers: list | None, tags: list) -> list:
    """The record's own headers (see :func:`passthrough_headers`), then the tags."""
    own = passthrough_headers(headers)
    return tags if not own else own + tags


def _float(b: object, name: str, malformed: list[str]) -> float | None:
    """A numeric tag; one that is not a finite number (a hostile or broken upstream wrote it)
    is None and its name goes to ``malformed``."""
    if b is None or b in (b"", ""):
        return None
    try:
        x = float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x):
        malformed.append(name)
        return None
    return x


def _text(v: object, name: str, malformed: list[str]) -> str | None:
    """A text tag of a file-mode object (JSON: any type); not a string is malformed."""
    if v is None or isinstance(v, str):
        return v or None
    malformed.append(name)
    return None


def parse_headers(headers: list | dict | None) -> Tags | None:
    """Our tags from a record's headers (the ``dedup.upstream.*`` ones are not ours); None if untagged."""
    items = headers.items() if isinstance(headers, dict) else (headers or [])
    h: dict[str, str] = {}
    for k, v in items:
        if k.startswith(PREFIX) and not k.startswith(UPSTREAM) and k not in h:
            h[k[len(PREFIX):]] = v.decode("utf-8", "replace") if isinstance(v, bytes) else (v or "")
    if "status" not in h:
        return None
    size = h.get("original_bytes")
    bad: list[str] = []
    sim, ld = _float(h.get("similarity"), "similarity", bad), _float(h.get("ld_similarity"), "ld_similarity", bad)
    return Tags(h["status"], h.get("duplicate_of") or None, h.get("relation") or None, sim, ld, h.get("matched") or None,
                h.get("reason") or None, h.get("stage") or None, h.get("source") or None,
                int(size) if size and size.isdecimal() else None, h.get("original") or None, h.get("matched_source") or None,
                h.get("time_invalid") or None, tuple(bad),
                tuple(h["changed"].split(CHANGED_SEP)) if h.get("changed") else ())


def parse_file_tags(obj: dict | bytes) -> Tags | None:
    """Our tags from a file-mode output object (or its line); a dead-letter line gives its stage and reason."""
    if isinstance(obj, (bytes, str)):
        obj = orjson.loads(obj)
    d = obj.get("_dedup")
    if d is None:
        if "stage" in obj and "reason" in obj and "line" in obj:
            return Tags("dead_letter", reason=obj["reason"], stage=obj["stage"], source=f"line:{obj['line']}")
        return None
    if not isinstance(d, dict) or not isinstance(d.get("status"), str):
        return Tags("?", malformed=("_dedup",))
    bad: list[str] = []
    text = {k: _text(d.get(k), k, bad) for k in ("duplicate_of", "relation", "matched", "reason", "stage", "source", "original",
                                                  "matched_source")}
    sim, ld = _float(d.get("similarity"), "similarity", bad), _float(d.get("ld_similarity"), "ld_similarity", bad)
    return Tags(d["status"], text["duplicate_of"], text["relation"], sim, ld, text["matched"], text["reason"], text["stage"],
                text["source"], None, text["original"], text["matched_source"],
                _text(d.get("time_invalid"), "time_invalid", bad), tuple(bad), _changed(d.get("changed"), bad))


def _changed(v: object, malformed: list[str]) -> tuple[str, ...]:
    """A revision's ``changed`` list of a file-mode object; anything but a list of strings is malformed."""
    if v is None:
        return ()
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(v)
    malformed.append("changed")
    return ()
