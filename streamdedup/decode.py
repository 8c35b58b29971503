"""Turning one raw input record into (id, text, event time), or a dead-letter reason (pure).

Shared by file mode and the Kafka runtime, so a record is judged the same way everywhere.
Stages named in dead-letter output: ``size``, ``utf8``, ``json``, ``fields``, ``text``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import orjson

from .config import InputConfig


@dataclass(frozen=True)
class Decoded:
    id: str
    text: str
    event_time_ms: int
    obj: dict | None  # the parsed JSON object (None for text input)


@dataclass(frozen=True)
class Rejected:
    stage: str
    reason: str


def _event_time(value: object, field: str) -> int | Rejected:
    if isinstance(value, bool):
        return Rejected("fields", f"{field} must be epoch milliseconds or an ISO-8601 string, got a boolean")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return Rejected("fields", f"{field} {value[:40]!r} is not an ISO-8601 time")
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return int(dt.timestamp() * 1000)
    return Rejected("fields", f"{field} must be epoch milliseconds or an ISO-8601 string, got {type(value).__name__}")


def decode_record(raw: bytes, cfg: InputConfig, fallback_id: str, now_ms: int, max_text_bytes: int) -> Decoded | Rejected:
    """Decode one record. ``fallback_id`` names records without an id (e.g. ``line:17``)."""
    if len(raw) > cfg.max_record_bytes:
        return Rejected("size", f"record of {len(raw)} bytes is over input.max_record_bytes ({cfg.max_record_bytes})")
    if cfg.format == "text":
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Rejected("utf8", f"not valid UTF-8 ({exc.reason} at byte {exc.start})")
        if not text.strip():
            return Rejected("text", "empty text")
        return Decoded(fallback_id, text, now_ms, None)
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as uexc:
            return Rejected("utf8", f"not valid UTF-8 ({uexc.reason} at byte {uexc.start})")
        return Rejected("json", f"invalid JSON: {exc}")
    if not isinstance(obj, dict):
        return Rejected("json", f"expected a JSON object, got {type(obj).__name__}")
    doc_id = obj.get(cfg.id_field)
    if doc_id is None:
        doc_id = fallback_id
    elif isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        return Rejected("fields", f"{cfg.id_field} must be a string or integer, got {type(doc_id).__name__}")
    else:
        doc_id = str(doc_id)
    parts = []
    for name in cfg.text_fields:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            return Rejected("fields", f"{name} must be a string, got {type(value).__name__}")
        parts.append(value)
    if not parts:
        return Rejected("fields", "missing text: none of " + ", ".join(cfg.text_fields) + " is present")
    text = cfg.text_separator.join(parts)
    if not text.strip():
        return Rejected("text", "empty text")
    if len(text) * 4 > max_text_bytes and len(text.encode("utf-8", "surrogatepass")) > max_text_bytes:
        return Rejected("size", f"text is over fingerprint.max_text_bytes ({max_text_bytes} bytes)")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return Rejected("utf8", "text contains unpaired surrogates (\\ud800-\\udfff escapes)")
    event_time = now_ms
    if cfg.time_field is not None and obj.get(cfg.time_field) is not None:
        t = _event_time(obj[cfg.time_field], cfg.time_field)
        if isinstance(t, Rejected):
            return t
        event_time = t
    return Decoded(doc_id, text, event_time, obj)
