"""Where a read starts on each partition of a topic (or in a file): the one ``--since`` grammar of
``inspect``, ``tune --replay``, the web inspector's what-if and ``run --rebuild-from-input`` (pure).

``earliest``; an offset (``12000``: from that offset on); ``-N`` (the last N records of each
partition); an ISO-8601 time (``2026-11-20T06:00``, UTC unless it names a zone; ``Z`` allowed);
or an age (``90m``, ``48h``, ``7d``: that long before now). A time is turned into offsets by
the broker (the first record at or after it); in a file, by the records' event times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Kafka offsets are 64-bit
_MAX_OFFSET = 2**63 - 1


@dataclass(frozen=True)
class Since:
    """A start: the earliest record, an offset, the last ``value`` records, or a time (ms since
    the epoch)."""

    kind: Literal["earliest", "offset", "last", "time"]
    value: int = 0

    def start(self, lo: int, hi: int) -> int:
        """The start offset in a partition holding ``[lo, hi)``, for every kind but ``time``
        (the broker's answer, or the records' times, decide that one).

        >>> [Since(k, 5).start(10, 100) for k in ("earliest", "offset", "last")]
        [10, 10, 95]
        """
        if self.kind == "earliest":
            return lo
        if self.kind == "offset":
            return max(lo, min(self.value, hi))
        if self.kind == "last":
            return max(lo, hi - self.value)
        raise ValueError("a time's offsets come from the broker or the records")


def parse_since(text: str, now: datetime | None = None, option: str = "--since") -> Since:
    """The grammar of the module doc; ``option`` names the setting in the error.

    >>> parse_since("earliest"), parse_since("12000"), parse_since("-50")
    (Since(kind='earliest', value=0), Since(kind='offset', value=12000), Since(kind='last', value=50))
    >>> parse_since("2h", now=datetime(2026, 1, 1, 2, tzinfo=timezone.utc))
    Since(kind='time', value=1767225600000)
    >>> parse_since("2026-01-01T00:00Z")
    Since(kind='time', value=1767225600000)

    Raises:
        ValueError: not one of the forms, an offset beyond 64 bits, a time off the calendar.
    """
    s = text.strip()
    if s == "earliest":
        return Since("earliest")
    if s.lstrip("-").isdecimal() and s.count("-") <= 1:
        n = int(s)
        if abs(n) > _MAX_OFFSET:
            raise ValueError(f"{option} {text!r}: an offset beyond any partition's (at most 2^63 - 1)")
        return Since("last", -n) if s.startswith("-") else Since("offset", n)
    age = _AGE.fullmatch(s)
    if age:
        now = now or datetime.now(timezone.utc)
        try:
            start = now - timedelta(seconds=float(age.group(1)) * _UNIT_S[age.group(2)])
        except (OverflowError, ValueError):
            raise ValueError(f"{option} {text!r}: an age longer than the calendar") from None
        return _time(int(start.timestamp() * 1000), text, option)
    try:
        when = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        raise ValueError(f"{option} {text!r}: give earliest, an offset, -N (the last N records), an ISO time "
                         f"(2026-11-20T06:00) or an age (48h, 7d)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return _time(int(when.timestamp() * 1000), text, option)


def _time(ms: int, text: str, option: str) -> Since:
    # the broker reads -1 and -2 as "latest" and "earliest": a time before 1970 must not become one
    if ms < 0:
        raise ValueError(f"{option} {text!r}: a time before 1970")
    return Since("time", ms)
