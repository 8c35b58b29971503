"""Turning one raw input record into (id, text, event time), or a dead-letter reason (pure).

Shared by file mode and the Kafka runtime, so a record is judged the same way everywhere.
Stages named in dead-letter output: ``size``, ``utf8``, ``json``, ``fields``, ``text``, ``time``.

Event times: the index forgets documents by event time, relative to the latest
event time it has seen, so one far-future time would expire the whole index and keep detection
off until the clock caught up; and a time beyond 64 bits stopped the pipeline. A time that is
not finite, before 1970, out of range or more than ``input.max_future_skew_hours`` past the
wall clock, or a value that is no time at all (``"soon"``, a boolean), is therefore not used: the record is decided at the stream's time (the latest
event time seen before it, :func:`stream_times`; ``input.invalid_time: stream``) or with its
arrival time (``arrival``: in a replay of old input that moves the window to the wall clock)
and tagged ``time_invalid`` with the reason, or is a dead letter of stage ``time``
(``dead_letter``). Never an exception.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import NamedTuple

import numpy as np
from orjson import JSONDecodeError, loads

from streamdedup.config import InputConfig


class Decoded(NamedTuple):
    id: str
    text: str
    event_time_ms: int
    obj: dict | None  # the parsed JSON object (None for text input)
    #: why the record's own event time was not used (arrival time instead); None when it was
    time_invalid: str | None = None


@dataclass(frozen=True)
class Rejected:
    stage: str
    reason: str


EMPTY_JSON = Rejected("json", "empty record")
EMPTY_TEXT = Rejected("text", "empty text")

#: ids are stored with every record; longer ones are refused (the engine checks the same bound)
MAX_ID_BYTES = 1024
_ID_LIMIT = f"{MAX_ID_BYTES} bytes"


HOUR_MS = 3_600_000
#: the event time of a record decided at the stream's time (its own, or its Kafka timestamp, is
#: unusable): the engine puts the latest event time it has seen there (:func:`stream_times`).
#: Below any real time (negative times are unusable), above the engine's "nothing seen yet"
#: watermark, and within the zigzag varints that carry times in fingerprint records.
STREAM_TIME = -(2 ** 61)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def stream_times(times: np.ndarray, watermark: int) -> np.ndarray:
    """``times`` with each :data:`STREAM_TIME` replaced by the stream's time there: the latest
    event time seen before it (the engine's ``watermark``, then the batch's own times in
    order), or the wall clock while no time has been seen. A record whose time is unusable so
    neither moves the index's window nor falls out of it: a replay of week-old input goes on
    detecting past one bad time."""
    at = times == STREAM_TIME
    if not at.any():
        return times
    seen = np.maximum.accumulate(np.where(at, watermark, np.maximum(times, watermark)))
    out = times.copy()
    out[at] = np.where(seen[at] > -(2 ** 62), seen[at], wall_clock_ms())
    return out


def _event_time(value: object, field: str) -> int | float | Rejected:
    """Epoch milliseconds as given (unchecked: see :func:`time_problem`), or why the value is no time."""
    if isinstance(value, bool):
        return Rejected("fields", f"{field} must be epoch milliseconds or an ISO-8601 string, got a boolean")
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return Rejected("fields", f"{field} {value[:40]!r} is not an ISO-8601 time")
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        try:
            return dt.timestamp() * 1000
        except (OverflowError, OSError, ValueError):  # defensive: near datetime's bounds; never an exception
            return math.inf if dt.year > 1970 else -math.inf
    return Rejected("fields", f"{field} must be epoch milliseconds or an ISO-8601 string, got {type(value).__name__}")


def time_problem(ms: int | float, limit_ms: int) -> str | None:
    """Why ``ms`` cannot be a record's event time (None: it can). ``limit_ms``: the latest allowed."""
    if isinstance(ms, float) and not math.isfinite(ms):
        return "is not a finite time"
    if ms < 0:
        return "is before 1970"
    if ms > limit_ms:
        return "is too far in the future (past the wall clock plus input.max_future_skew_hours)"
    return None


def _check_string(s: str, what: str, limit: int, stage: str, limit_text: str) -> Rejected | None:
    """Over ``limit`` UTF-8 bytes, or unencodable (JSON \\u escapes can carry lone surrogates)."""
    # len * 4 bounds the UTF-8 size: most strings are judged without encoding them
    if len(s) * 4 > limit and len(s.encode("utf-8", "surrogatepass")) > limit:
        return Rejected(stage, f"{what} is over {limit_text}")
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            return Rejected("utf8", f"{what} contains unpaired surrogates (\\ud800-\\udfff escapes)")
    return None


def _exact_int(raw: bytes, field: str) -> str | None:
    """``field``'s digits when the JSON gives it an integer too large for 64 bits (the standard
    library's parser keeps it whole); None when it is a real float."""
    value = json.loads(raw).get(field)
    return str(value) if type(value) is int else None


class RecordDecoder:
    """Decodes records with one configuration; file mode and Kafka call it once per record the
    JSON fast path (``scan.LineScanner``) leaves to it.

    ``decoder(raw, fallback_id, now_ms)`` returns :class:`Decoded` or :class:`Rejected`;
    ``fallback_id`` (a string, or a callable making one) names a record without an id
    (e.g. ``line:17``) and is only called when needed.
    """

    def __init__(self, cfg: InputConfig, max_text_bytes: int):
        self.cfg = cfg
        self.max_record = cfg.max_record_bytes
        self.max_text = max_text_bytes
        self._text_limit = f"fingerprint.max_text_bytes ({max_text_bytes} bytes)"
        self.json = cfg.format == "json"
        self.id_field = cfg.id_field
        self.text_fields = cfg.text_fields
        self.single_field = cfg.text_fields[0] if len(cfg.text_fields) == 1 else None
        self.separator = cfg.text_separator
        self.time_field = cfg.time_field
        self.max_future_skew_ms = int(cfg.max_future_skew_hours * HOUR_MS)
        self.invalid_time_dead = cfg.invalid_time == "dead_letter"
        self.invalid_time_at = STREAM_TIME if cfg.invalid_time == "stream" else None

    def blank(self) -> Rejected:
        """Why an empty or whitespace-only record is a dead letter (the same in every runtime)."""
        return EMPTY_JSON if self.json else EMPTY_TEXT

    def __call__(self, raw: bytes, fallback_id, now_ms: int) -> Decoded | Rejected:
        if len(raw) > self.max_record:
            return Rejected("size", f"record of {len(raw)} bytes is over input.max_record_bytes ({self.max_record})")
        if not raw.strip(b" \t\r\n"):
            return self.blank()
        if not self.json:
            return self._text(raw, fallback_id, now_ms)
        try:
            obj = loads(raw)
        except JSONDecodeError as exc:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as uexc:
                return Rejected("utf8", f"not valid UTF-8 ({uexc.reason} at byte {uexc.start})")
            return Rejected("json", f"invalid JSON: {exc}")
        if type(obj) is not dict:
            return Rejected("json", f"expected a JSON object, got {type(obj).__name__}")
        doc_id = obj.get(self.id_field)
        if doc_id is None:
            doc_id = fallback_id if isinstance(fallback_id, str) else fallback_id()
        elif type(doc_id) is int:
            doc_id = str(doc_id)
        elif type(doc_id) is float and _exact_int(raw, self.id_field) is not None:
            doc_id = _exact_int(raw, self.id_field)  # an integer beyond 64 bits, which orjson reads as a float
        elif type(doc_id) is not str:
            return Rejected("fields", f"{self.id_field} must be a string or integer, got {type(doc_id).__name__}")
        elif len(doc_id) * 4 > MAX_ID_BYTES or not doc_id.isascii():
            bad = _check_string(doc_id, "id", MAX_ID_BYTES, "fields", _ID_LIMIT)
            if bad is not None:
                return bad
        if self.single_field is not None:
            text = obj.get(self.single_field)
            if text is None:
                return Rejected("fields", f"missing text: {self.single_field} is not present")
            if type(text) is not str:
                return Rejected("fields", f"{self.single_field} must be a string, got {type(text).__name__}")
        else:
            parts = []
            for name in self.text_fields:
                value = obj.get(name)
                if value is None:
                    continue
                if type(value) is not str:
                    return Rejected("fields", f"{name} must be a string, got {type(value).__name__}")
                parts.append(value)
            if not parts:
                return Rejected("fields", "missing text: none of " + ", ".join(self.text_fields) + " is present")
            text = self.separator.join(parts)
        # the common text (ASCII, not blank, well under the limit) needs no call
        if len(text) * 4 > self.max_text or not text.isascii() or text.isspace() or not text:
            bad = self._check_text(text)
            if bad is not None:
                return bad
        if self.time_field is not None and obj.get(self.time_field) is not None:
            return self._with_time(doc_id, text, obj, now_ms)
        return Decoded(doc_id, text, now_ms, obj)

    def _with_time(self, doc_id: str, text: str, obj: dict, now_ms: int) -> Decoded | Rejected:
        value = obj[self.time_field]
        t = _event_time(value, self.time_field)
        # A value that is no time at all ("soon", a boolean) is as unusable as one out of range:
        # the record itself is sound, so the same policy decides it.
        if isinstance(t, Rejected):
            reason = t.reason
        else:
            problem = time_problem(t, wall_clock_ms() + self.max_future_skew_ms)
            if problem is None:
                return Decoded(doc_id, text, int(t), obj)
            shown = value[:40] if isinstance(value, str) else value
            reason = f"{self.time_field} {shown!r} {problem}"
        if self.invalid_time_dead:
            return Rejected("time", reason)
        if self.invalid_time_at is not None:
            return Decoded(doc_id, text, self.invalid_time_at, obj, reason + ": decided at the stream's time")
        return Decoded(doc_id, text, now_ms, obj, reason + ": decided with its arrival time")

    def _check_text(self, text: str) -> Rejected | None:
        if not text or text.isspace():
            return EMPTY_TEXT
        return _check_string(text, "text", self.max_text, "size", self._text_limit)

    def _text(self, raw: bytes, fallback_id, now_ms: int) -> Decoded | Rejected:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Rejected("utf8", f"not valid UTF-8 ({exc.reason} at byte {exc.start})")
        bad = self._check_text(text)
        if bad is not None:
            return bad
        return Decoded(fallback_id if isinstance(fallback_id, str) else fallback_id(), text, now_ms, None)

