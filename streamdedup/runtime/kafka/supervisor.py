"""The process supervisor: restart the processor when its main loop stops making progress, or
when a Kafka client call has not returned well after its own timeout.

librdkafka's transactional calls take a timeout, yet after a broker restart
``send_offsets_to_transaction`` was seen blocking for minutes (librdkafka leaves a coordinator
request's timeout unchecked while the group coordinator is away: confluentinc/librdkafka#5456).
A call made through :meth:`Watchdog.bounded` restarts the process :data:`CALL_GRACE_S` after its
timeout; the main loop's own limit (``kafka.stall_restart_s``) catches the rest. Nothing is lost
by starting over: the state is committed and the open transaction is aborted by the next
producer (same transactional id), so the restarted process replays it. A consumer's fatal error
(:class:`ConsumerFatal`) restarts the process the same way: the client cannot consume again.

Deciding a batch is not a stall: its time is set by what the records carry (each record's steps
are bounded, a batch of the longest texts takes tens of seconds), and restarting would read the
same records again and overrun again. A step run inside :meth:`Watchdog.working` holds the
restart off; past the limit it is named in a warning, with its records, each limit it runs on.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)

#: seconds a bounded client call may run past its own timeout before the process restarts
#: (librdkafka returns within about a second of a timeout it honours)
CALL_GRACE_S = 10.0


def exec_self() -> None:
    """Replace this process by a fresh run of the same command line."""
    for h in logging.getLogger("streamdedup").handlers:
        h.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


class ConsumerFatal(Exception):
    """A consumer's fatal error: the client will never consume again. Seen after a broker
    restart on a loaded machine: the static member's session times out in librdkafka, which
    rejoins under a member id the broker has replaced and is fenced ("Static consumer fenced by
    other consumer with same group.instance.id"), then hands out nothing, forever."""


class Watchdog:
    """Calls ``restart`` when :meth:`touch` was not called for ``limit_s`` seconds, or when a call
    made through :meth:`bounded` runs ``grace_s`` past its timeout (0: never, either)."""

    def __init__(self, limit_s: float, restart: Callable[[], None] = exec_self, check_every_s: float = 2.0,
                 grace_s: float = CALL_GRACE_S):
        self.limit_s = limit_s
        self._restart = restart
        self._every = check_every_s
        self._grace = grace_s
        self._alive = time.monotonic()
        self._calls: dict[int, tuple[str, float, float]] = {}  # by thread: (what, timeout, deadline)
        self._work: dict[int, tuple[Callable[[], str], float]] = {}  # by thread: (what, since)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def touch(self) -> None:
        self._alive = time.monotonic()

    def bounded(self, what: str, timeout_s: float, call: Callable[[], T]) -> T:
        """``call()``, a client call given ``timeout_s``: the process restarts when it has not
        returned ``grace_s`` after that (from any thread; one call per thread at a time)."""
        if self.limit_s <= 0:
            return call()
        me = threading.get_ident()
        self._calls[me] = (what, timeout_s, time.monotonic() + timeout_s + self._grace)
        try:
            return call()
        finally:
            del self._calls[me]

    @contextmanager
    def working(self, what: Callable[[], str]) -> Iterator[None]:
        """A step of work on input (deciding a batch) runs inside: the loop waiting for it is not
        stalled. ``what()`` names the step and its records in the warning of one that runs past
        the limit; it is called only then."""
        me = threading.get_ident()
        self._work[me] = (what, time.monotonic())
        try:
            yield
        finally:
            del self._work[me]
            self.touch()

    def restarting(self, run: Callable[[], T], otherwise: T) -> T:
        """``run()``; when it ends with a consumer's fatal error, :meth:`restart_for` it (and,
        where restarting returns, as in a test, ``otherwise``)."""
        try:
            return run()
        except ConsumerFatal as exc:
            self.restart_for(exc)
            return otherwise

    def restart_for(self, exc: ConsumerFatal) -> None:
        """A fresh process for a consumer that cannot consume again: it joins under the same
        member id, replacing the fenced one, and replays from the committed offsets (nothing
        uncommitted was confirmed). With restarts off (``kafka.stall_restart_s: 0``, or no
        watchdog) the error is raised: the process's own supervisor restarts it."""
        if self.limit_s <= 0:
            raise exc
        log.error("%s; restarting the process (it rejoins under the same member id and replays from the committed "
                  "offsets)", exc)
        self._restart()

    def start(self) -> "Watchdog":
        if self.limit_s > 0:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="watchdog")
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self._every):
            now = time.monotonic()
            hung = [(what, timeout) for what, timeout, deadline in list(self._calls.values()) if now > deadline]
            if hung:
                log.error("%s did not return %.0f s after its %.0f s timeout; restarting the process", hung[0][0],
                          self._grace, hung[0][1])
                self._restart()
                return
            stalled = now - self._alive
            if stalled <= self.limit_s:
                continue
            work = list(self._work.values())
            if work:
                what, since = work[0]
                log.warning("%s has run for %.0f s (kafka.stall_restart_s %.0f); not restarting: the same records "
                            "would be read again", what(), now - since, self.limit_s)
                self._alive = now  # warn again one limit later
                continue
            log.error("main loop stalled for %.0f s outside the decide step (in a Kafka client call or the state "
                      "store); restarting the process", stalled)
            self._restart()
            return
