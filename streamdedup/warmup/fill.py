"""Filling Numba's on-disk kernel cache, in parallel worker processes.

A kernel compiles on its first call: typing and LLVM, single-threaded under Numba's global
compiler lock, ~17 s of CPU for the kernels of a file-mode run. The kernels fall into *units*
that compile independently of each other:

- ``scan``: the JSON fast path of file mode and Kafka (split, scan, gather) and file mode's
  output lines (assemble); ``scan-values`` only Kafka's part;
- ``fingerprint``: the fingerprint kernel;
- ``engine`` (``engine+restore``): the decide loop and the records (and the restore of the
  index from state);
- ``growth``: index and arena growth (a long stream outgrows the first tables);
- ``evidence``: the exact-evidence kernels (a noisy copy's question to the engine, and explain);
- ``fprecords``: a staged topology's fingerprint records, encoded (worker) and decoded
  (decider); the decider's decide path (``run_fingerprinted``) is the engine's unit;
- ``explain``: the pair comparison called from Python;
- ``revisions``: the revision test of a linked pair (the largest unit: ~28 s of CPU alone).

Each unit runs a tiny workload through the same Python faces a run uses, so that the kernels
compile for exactly the argument types the run will pass them (Numba compiles per type, and
a kernel cached for other types compiles again). The engine's unit decides placeholder
fingerprints (:meth:`~streamdedup.sketch.fingerprint.Fingerprinter.placeholder_batch`): it neither
waits for nor compiles the fingerprint kernel.

:func:`fill` runs the units a command needs in up to one process per CPU, this one included
(the others forked from it where that is safe, else new interpreters), with the cyclic garbage
collector off, and returns when the cache holds them; the command then loads the workers'
kernels from the cache (~0.5 s).
``streamdedup run`` and ``demo`` fill what their run needs; ``streamdedup warm-up`` runs every
unit (the Docker image's build).
"""

from __future__ import annotations

import gc
import heapq
import logging
import os
import tempfile
from typing import Callable, Iterable

from streamdedup._kernels import cache
from streamdedup.config import Config
from streamdedup.warmup import workers as kernel_workers
from streamdedup.warmup.units import LINES, NEEDS, UNITS, Unit, run_units, sample_lines  # noqa: F401 (this module's API)

log = logging.getLogger(__name__)

#: a worker process's start in seconds, a new interpreter's (imports) and a fork's: this
#: process has it behind it
WORKER_START = 0.8
FORK_START = 0.05
#: what this process does after its units while the workers finish: a collection of the
#: compile's garbage (``fill``), which walks the ~10^6 objects the compile left (~0.4 s)
AFTER_UNITS = 0.4


def cold_units(units: Iterable[str]) -> list[str]:
    """The units of ``units`` with a kernel that has no usable entry in the cache."""
    return [u for u in units if cache.missing_kernels(UNITS[u].kernels)]


def plan(units: Iterable[str], processes: int, worker_start: float | None = None) -> list[list[str]]:
    """``units`` shared among at most ``processes`` processes: longest first, each to the process
    that would finish first, a worker counting its start-up (default: this platform's, see
    :func:`~streamdedup.warmup.workers.can_fork`) and this process its collection afterwards. The first list is this
    process's."""
    if worker_start is None:
        worker_start = FORK_START if kernel_workers.can_fork() else WORKER_START
    units = sorted(units, key=lambda u: -UNITS[u].seconds)
    heap = [(AFTER_UNITS if i == 0 else worker_start, i, []) for i in range(min(max(processes, 1), len(units)))]
    heapq.heapify(heap)
    for u in units:
        load, i, names = heapq.heappop(heap)
        names.append(u)
        heapq.heappush(heap, (load + UNITS[u].seconds, i, names))
    return [names for _, _, names in sorted(heap, key=lambda h: h[1]) if names]


def fill(cfg: Config, units: Iterable[str], *, processes: int | None = None, force: bool = False,
         announce: Callable[[], None] | None = None) -> list[str]:
    """Compile the ``units`` the cache lacks (all of them with ``force``), sharing them among
    ``processes`` processes (default: the CPUs this process may use), this one included.
    Calls ``announce`` first when there is anything to compile. Returns the units it compiled.

    A worker that fails costs only time (the kernels it did not cache compile on first use) and
    a warning in the log.
    """
    todo = list(units) if force else cold_units(units)
    if not todo:
        return []
    if announce is not None:
        announce()
    groups = plan(todo, processes or _cpus())
    with tempfile.TemporaryFile() as errors:
        workers = [(group, kernel_workers.start_worker(cfg, group, errors)) for group in groups[1:]]
        try:
            run_units(cfg, groups[0])
            # Compiling leaves ~10^6 live Python objects (Numba's typing and IR caches) that every
            # later full collection would walk again, the one at exit included (~0.3 s of a cold
            # run): free the garbage among them while the workers finish, keep the rest out of
            # the collector's way (below)
            gc.collect()
        finally:
            failed = [group for group, w in workers if w.wait() != 0]
        if failed:
            errors.seek(0)
            last = errors.read().decode(errors="replace").strip().splitlines()[-1:]
            log.warning("compiling kernels %s in a worker process failed (%s); they compile on first use", failed,
                        last[0] if last else "no message")
    gc.freeze()
    return todo


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
