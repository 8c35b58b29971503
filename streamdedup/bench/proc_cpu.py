"""CPU per record of other processes, split by thread role: the staged bench's cost model.

The staged and faust benches run each stage as a process of its own (``streamdedup run``, as a
user runs it). :class:`ProcessCpu` samples the kernel's accounting of every thread of those
processes (``/proc/PID/task/*/schedstat``, nanoseconds) in a background thread, and of the
broker's process when it runs on this machine. A round's cost per record is each stage's CPU over its
processes' lives less what the same processes cost on a few records (start-up, group join, the
kernels' first calls, the idle wait before exit), divided by the other records. The spread of
the start-up (a few tenths of a second of CPU a process on a shared machine) makes this a
measure for runs of several seconds of work, not for a thousand short records. Not the CPU between the first and the last
output: fingerprint workers run ahead of the decider, so on a short feed they have done most of
their work before the first decision is out.

Python names its threads only inside the interpreter (their kernel name is the process's own
before 3.14), so a stage process's threads are told apart by what the kernel sees: the main
thread (the Kafka loop), librdkafka's threads (``rdk:*``), RocksDB's (``rocksdb:*``) and the
other threads (the decide and state-commit threads, Numba's and NumPy's pools).
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict

def role(pid: int, tid: int, name: str) -> str:
    """A thread's role in its process, from its id and kernel name."""
    if tid == pid:
        return "main thread"
    if name.startswith("rdk:"):
        return "librdkafka"
    if name.startswith("rocksdb"):
        return "RocksDB"
    return "other threads"


def task_cpu(pid: int | str) -> dict[int, tuple[str, float]]:
    """Per thread of ``pid`` (or ``"self"``): its kernel name and seconds on a CPU so far; empty
    when the process has ended. ``schedstat`` counts nanoseconds (``stat``'s 10 ms ticks are too
    coarse for a few seconds' run)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", "rb") as f:
                name = f.read().strip().decode(errors="replace")
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):  # ended between listdir and open
            continue
        out[int(tid)] = (name, ns / 1e9)
    return out


def broker_pid() -> int | None:
    """The local Kafka broker's process (a JVM running ``kafka.Kafka``), if this machine runs one."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"kafka.Kafka" in args:
            return int(entry)
    return None


class ProcessCpu:
    """Samples the CPU of named processes every ``interval`` seconds until :meth:`stop`.

    A thread keeps the last reading it had: a thread that ended (a process that exited) still
    counts what it used up to its last sample.
    """

    def __init__(self, procs: dict[str, list[int]], interval: float = 0.05) -> None:
        self._procs = procs
        self._interval = interval
        self._seen: dict[tuple[int, int], tuple[str, str, float]] = {}
        #: (perf_counter, {(stage, role): seconds}) per sample
        self.samples: list[tuple[float, dict[tuple[str, str], float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-proc-cpu", daemon=True)

    def start(self) -> "ProcessCpu":
        self._sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        for stage, pids in self._procs.items():
            for pid in pids:
                for tid, (name, cpu) in task_cpu(pid).items():
                    r = "all threads" if stage == "broker" else role(pid, tid, name)
                    self._seen[(pid, tid)] = (stage, r, cpu)
        totals: dict[tuple[str, str], float] = defaultdict(float)
        for stage, r, cpu in self._seen.values():
            totals[(stage, r)] += cpu
        self.samples.append((time.perf_counter(), dict(totals)))

    @property
    def seconds(self) -> float:
        """Wall time between the first and the last sample."""
        return self.samples[-1][0] - self.samples[0][0]

    def lifetime(self) -> dict[tuple[str, str], float]:
        """CPU seconds per (stage, role): a stage process's whole life; the broker's over the samples."""
        first, last = self.samples[0][1], self.samples[-1][1]
        return {(stage, r): cpu - (first.get((stage, r), 0.0) if stage == "broker" else 0.0)
                for (stage, r), cpu in last.items()}


def work_us_per_record(run: ProcessCpu, base_run: ProcessCpu, records: int) -> dict[str, dict[str, float]]:
    """Microseconds of CPU per record, per stage and role, in total too: each stage's processes
    over their lives less what the same processes cost in ``base_run`` (a few records: start-up,
    group join, first kernel calls, the idle wait before exit); the broker's CPU over the run less
    its rate during ``base_run``, ``records`` the records of the run not in the base run."""
    busy, base = run.lifetime(), base_run.lifetime()
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for stage, r in sorted(busy):
        if stage == "broker":
            rest = base.get((stage, r), 0.0) / base_run.seconds * run.seconds if base_run.seconds > 0 else 0.0
        else:
            rest = base.get((stage, r), 0.0)
        out[stage][r] = (busy[(stage, r)] - rest) * 1e6 / max(records, 1)
    for parts in out.values():
        parts["total"] = sum(parts.values())
    return dict(out)
