"""The process supervisor: restart the processor when its main loop stops making progress.

librdkafka's transactional calls take a timeout, yet after a broker restart
``send_offsets_to_transaction`` was seen blocking for minutes (1 of 3 broker-restart test runs).
Nothing is lost by starting over: the state is committed and the open transaction is aborted
by the next producer (same transactional id), so the restarted process replays it.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Callable

log = logging.getLogger("streamdedup.runtime.kafka")


def exec_self() -> None:
    """Replace this process by a fresh run of the same command line."""
    for h in logging.getLogger("streamdedup").handlers:
        h.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


class Watchdog:
    """Calls ``restart`` when :meth:`touch` was not called for ``limit_s`` seconds."""

    def __init__(self, limit_s: float, restart: Callable[[], None] = exec_self, check_every_s: float = 2.0):
        self.limit_s = limit_s
        self._restart = restart
        self._every = check_every_s
        self._alive = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def touch(self) -> None:
        self._alive = time.monotonic()

    def start(self) -> "Watchdog":
        if self.limit_s > 0:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="watchdog")
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self._every):
            stalled = time.monotonic() - self._alive
            if stalled > self.limit_s:
                log.error("main loop stalled for %.0f s (a Kafka client call did not return); restarting the process", stalled)
                self._restart()
                return
