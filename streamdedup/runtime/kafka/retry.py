"""One deadline/retry helper for the Kafka client calls that may fail while a broker is away."""

from __future__ import annotations

import logging
import time
from typing import Callable, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


def retry(call: Callable[[], T], *, what: str, deadline_s: float, retriable: Callable[[BaseException], bool],
          pause_s: float = 0.5, on_retry: Callable[[], None] | None = None,
          clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()`` until it returns, retrying errors that ``retriable`` accepts until ``deadline_s``.

    The last error is raised once the deadline has passed, and any error ``retriable`` refuses
    at once. ``on_retry`` runs before each pause (the processor tells its watchdog it is alive).
    """
    deadline = clock() + deadline_s
    while True:
        try:
            return call()
        except Exception as exc:
            if not retriable(exc) or clock() >= deadline:
                raise
            log.warning("%s: %s; retrying", what, exc)
            if on_retry is not None:
                on_retry()
            sleep(pause_s)
