"""Where a record's CPU goes: stage timers and per-thread CPU, for ``streamdedup bench cost``.

Two sources, each honest about what it sees:

- :class:`ThreadCpu` reads every thread's time on a CPU from ``/proc/self/task`` (the
  kernel's accounting): Python's threads by their names, librdkafka's own threads
  (``rdk:*``) as the Kafka client's background work. The per-thread totals are the ground truth
  the stage timers are checked against.
- :class:`Stages` wraps functions and methods for the duration of a bench run only and sums
  ``time.thread_time()`` across each call, *exclusive* of the wrapped calls inside it (a stage
  called from another stage is not counted twice). The remainder of a thread's CPU outside every
  stage is that thread's glue: the loop, attribute lookups, calls nobody wrapped.

Nothing here touches a runtime's code: the wrappers are installed on the classes and modules
when the bench starts and removed when it ends.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator

from streamdedup.bench.proc_cpu import task_cpu


def _group(name: str) -> str:
    """Threads by role: a pool's numbered workers are one role, librdkafka's threads another."""
    if name.startswith("rdk:"):
        return "librdkafka threads"
    return name.rstrip("0123456789").rstrip("_") or name


class ThreadCpu:
    """CPU seconds per thread role between :meth:`start` and the last :meth:`mark`.

    Python threads are named from ``threading`` (their kernel name is the process's own on
    3.13); a thread seen once keeps its name after it ended.
    """

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._start: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self.seconds_overhead = 0.0

    def _snapshot(self) -> dict[int, tuple[str, float]]:
        for t in threading.enumerate():
            if t.native_id is not None:
                self._names[t.native_id] = t.name
        return task_cpu("self")

    def start(self) -> None:
        self._start = {tid: cpu for tid, (_, cpu) in self._snapshot().items()}
        self._last = {}

    def mark(self) -> None:
        t0 = time.thread_time()
        self._last = self._snapshot()
        self.seconds_overhead += time.thread_time() - t0

    def by_role(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for tid, (kname, cpu) in self._last.items():
            name = self._names.get(tid) or kname
            out[_group(name)] += cpu - self._start.get(tid, 0.0)
        return dict(out)


class Stages:
    """Exclusive ``thread_time`` per named stage, per thread role."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)
        self.calls: dict[tuple[str, str], int] = defaultdict(int)
        self._local = threading.local()
        self._undo: list[tuple[object, str, object]] = []

    def _timed(self, name: str, fn):
        local, seconds, calls = self._local, self.seconds, self.calls

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            t0 = time.thread_time()
            stack.append(0.0)  # CPU of the stages called inside this one
            try:
                return fn(*args, **kwargs)
            finally:
                inner = stack.pop()
                total = time.thread_time() - t0
                key = (_group(threading.current_thread().name), name)
                seconds[key] += total - inner
                calls[key] += 1
                if stack:
                    stack[-1] += total
        return timed

    def wrap(self, owner: object, attr: str, name: str) -> None:
        """Time ``owner.attr`` (a class's method or a module's function) as stage ``name``."""
        original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
        self._undo.append((owner, attr, original))
        setattr(owner, attr, self._timed(name, original))

    def restore(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()

    @contextmanager
    def installed(self, targets: list[tuple[object, str, str]]) -> Iterator["Stages"]:
        try:
            for owner, attr, name in targets:
                self.wrap(owner, attr, name)
            yield self
        finally:
            self.restore()


def table(stages: Stages, threads: dict[str, float], records: int, order: list[tuple[str, str]]) -> list[dict]:
    """Rows of (thread role, part, us per record): the named stages in ``order``, then per role
    the rest of its CPU as glue, then the roles no stage ran on (librdkafka's threads)."""
    rows = []
    us = 1e6 / max(records, 1)
    by_role: dict[str, float] = defaultdict(float)
    for (role, name), s in stages.seconds.items():
        by_role[role] += s
    seen = set()
    for role, name in order:
        s = stages.seconds.get((role, name), 0.0)
        if (role, name) in stages.seconds:
            rows.append({"thread": role, "part": name, "us": s * us})
            seen.add((role, name))
    for (role, name), s in sorted(stages.seconds.items()):
        if (role, name) not in seen:
            rows.append({"thread": role, "part": name, "us": s * us})
    for role, cpu in sorted(threads.items(), key=lambda kv: -kv[1]):
        rest = cpu - by_role.get(role, 0.0)
        if role in by_role:
            rows.append({"thread": role, "part": "glue (rest of the thread)", "us": rest * us})
        elif cpu * us >= 0.05:
            rows.append({"thread": role, "part": "all", "us": cpu * us})
    return rows
