"""Decision records: what the decider sends a worker about one input record (pure).

Key: ``topic:partition`` of the input record (the worker checks it against the partition it
consumes, so a decisions topic wired to other input topics is an error, not wrong tags).
Value: ``U<offset>`` for a unique record (most of them: a few bytes), ``D<json>`` for a
duplicate and ``X<json>`` for a dead letter, the JSON holding the offset and the tags as
``pipeline.tags`` defines them, so a decision reads the same in every runtime.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import orjson

from streamdedup.errors import StreamdedupError
from streamdedup.pipeline.tags import DeadLetterTags, DuplicateTags


class BadDecisionRecord(StreamdedupError):
    """A decisions-topic record this version cannot read (wrong topic wiring or another writer)."""


@dataclass(frozen=True)
class DecisionRecord:
    offset: int
    #: None for a unique record
    tags: DuplicateTags | DeadLetterTags | None = None


def encode(d: DecisionRecord) -> bytes:
    if d.tags is None:
        return b"U%d" % d.offset
    kind = b"D" if isinstance(d.tags, DuplicateTags) else b"X"
    return kind + orjson.dumps({"o": d.offset, **asdict(d.tags)})


def decode(value: bytes | None) -> DecisionRecord:
    """The record of ``value``; :class:`BadDecisionRecord` says what is wrong with one it cannot read."""
    if not value:
        raise BadDecisionRecord("empty decision record")
    kind, body = value[:1], value[1:]
    try:
        if kind == b"U":
            return DecisionRecord(int(body))
        if kind in (b"D", b"X"):
            obj = orjson.loads(body)
            offset = obj.pop("o")
            if kind == b"D" and "changed" in obj:
                obj["changed"] = tuple(obj["changed"])
            tags = DuplicateTags(**obj) if kind == b"D" else DeadLetterTags(**obj)
            return DecisionRecord(int(offset), tags)
    except (ValueError, TypeError, KeyError) as exc:
        raise BadDecisionRecord(f"unreadable decision record {value[:80]!r}: {exc}") from None
    raise BadDecisionRecord(f"unknown decision record kind {kind!r} (first bytes {value[:80]!r})")


def partition_key(topic: str, partition: int) -> bytes:
    return f"{topic}:{partition}".encode()


__all__ = ["BadDecisionRecord", "DecisionRecord", "decode", "encode", "partition_key"]
