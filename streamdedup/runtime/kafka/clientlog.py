"""librdkafka's own log lines through our JSON logger, rate-limited.

Without a ``logger`` librdkafka writes to stderr itself: an unreachable bootstrap address gave
1,269 lines in a minute, each the same connection refusal with another retry time.
Every client we make gets :func:`client_logger` instead: its lines become JSON log records
(``logger: streamdedup.librdkafka``, with ``facility`` and ``client`` fields) and a line that
repeats (the same facility and text up to its numbers) passes once per ``period_s``; the next
one to pass says how many were held back. What a broker answers while it starts (its
coordinators loading), which the client retries by itself, is logged at debug level.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from streamdedup.config import KafkaConfig

LOGGER_NAME = "streamdedup.librdkafka"
_NUMBERS = re.compile(r"\d+")
#: a broker that has just started answers with these while it loads its coordinators; the
#: client retries by itself, so they are debug lines, not warnings a user has to read
_TRANSIENT = re.compile(r"Coordinator load in progress|COORDINATOR_LOAD_IN_PROGRESS|Coordinator not available")


class RateLimit(logging.Filter):
    """Pass a repeating line once per ``period_s``; count what it holds back.

    The key of a line is its facility and its text with every number blanked ("after 0ms" and
    "after 1ms" are the same refusal). A line that passes after others of its kind were held
    carries ``suppressed`` (how many). ``max_keys`` bounds the memory a stream of distinct
    lines can take: past it the oldest keys are forgotten (they pass again).
    """

    def __init__(self, period_s: float = 60.0, max_keys: int = 1024, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.period_s = period_s
        self.max_keys = max_keys
        self.clock = clock
        self._seen: dict[tuple[str, str], list] = {}  # key -> [last passed at, held since]
        self._lock = threading.Lock()  # librdkafka logs from the thread that polls each client

    def filter(self, record: logging.LogRecord) -> bool:
        _shape(record)
        if record.levelno > logging.DEBUG and _TRANSIENT.search(record.msg):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        key = (record.facility, _NUMBERS.sub("#", record.msg))
        now = self.clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is not None and now - entry[0] < self.period_s:
                entry[1] += 1
                return False
            held = entry[1] if entry is not None else 0
            if entry is None and len(self._seen) >= self.max_keys:
                self._seen.pop(next(iter(self._seen)))
            self._seen.pop(key, None)
            self._seen[key] = [now, 0]
        if held:
            record.suppressed = held
        return True


def _shape(record: logging.LogRecord) -> None:
    """confluent-kafka logs ``("%s [%s] %s", facility, client name, text)``: keep the text as
    the message and the rest as fields (idempotent: a record passes each filter once)."""
    args = record.args
    if isinstance(args, tuple) and len(args) == 3 and record.msg == "%s [%s] %s":
        record.facility, record.client, record.msg = (str(a) for a in args)
        record.args = None
    elif not hasattr(record, "facility"):
        record.facility = ""


_logger: logging.Logger | None = None


def client_logger() -> logging.Logger:
    """The logger every Kafka client gets (through :func:`client_settings`)."""
    global _logger
    if _logger is None:
        logger = logging.getLogger(LOGGER_NAME)
        logger.addFilter(RateLimit())
        _logger = logger
    return _logger


def client_settings(kcfg: "KafkaConfig", ours: dict | None = None, user_wins: bool = False) -> dict:
    """A client's librdkafka configuration: the user's (secrets revealed: hand it to a client,
    never log it), our logger, and ``ours``; on a clash ours win unless ``user_wins``."""
    user = kcfg.client_conf()
    ours = {"logger": client_logger(), **(ours or {})}
    return {**ours, **user} if user_wins else {**user, **ours}
