"""The worker processes of :func:`streamdedup.warmup.fill.fill`: forks of the command's process
where that is safe, else new interpreters, each compiling its share of the units into the cache."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path

from streamdedup.config import Config


#: what a worker runs: the parent's streamdedup (its directory first on the path, whatever the
#: current directory holds), its config sections and units from stdin
_WORKER = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from streamdedup.warmup.workers import worker_main; worker_main()"
)


def can_fork() -> bool:
    """A worker may be a fork of this process: on Linux (fork is unsafe on macOS), and while this
    process runs no other thread but the unnamed native ones of OpenBLAS's pool, which NumPy
    starts at import and which shuts itself down around a fork (its atfork handler). A Python
    thread, or a library's named native thread (a Kafka client's ``rdk:*``, RocksDB's), could
    hold a lock that would stay held in the child: then a new interpreter. A fork starts in
    ~0.05 s instead of a new interpreter's ~0.8 s of imports, on the cold start's critical path."""
    if sys.platform != "linux" or threading.active_count() > 1:
        return False
    try:
        own = Path("/proc/self/comm").read_text()
        return all(Path(f"/proc/self/task/{t}/comm").read_text() == own for t in os.listdir("/proc/self/task"))
    except OSError:  # no /proc, or a thread ended meanwhile: not now
        return False


class _Forked:
    """A forked worker, waited for like a ``subprocess.Popen``."""

    def __init__(self, pid: int):
        self.pid = pid

    def wait(self) -> int:
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


_STOPS = {signal.SIGINT, signal.SIGTERM}


def start_worker(cfg: Config, units: list[str], errors) -> subprocess.Popen | _Forked:
    if not can_fork():
        return _spawn_worker(cfg, units, errors)
    # a stop signal waits until the child is inside its try: raised before, it would run the
    # parent's cleanups (finally blocks, atexit) in the child
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return _spawn_worker(cfg, units, errors)
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return _Forked(pid)
    # the child: compile, and leave at once (no cleanup of the parent's objects, its atexit
    # handlers, nor a final walk of the compile's heap)
    code = 1
    try:
        gc.disable()  # never a collection here: it would finalize the parent's garbage
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(errors.fileno(), 2)  # as a spawned worker's: its warnings reach the parent's report
        from streamdedup.warmup.units import run_units

        run_units(cfg, units)
        code = 0
    except BaseException:  # noqa: BLE001 - whatever it was, the parent reports it
        os.write(errors.fileno(), traceback.format_exc().encode(errors="replace"))
    finally:
        os._exit(code)


def worker_job(cfg: Config, units: list[str]) -> dict:
    """What a spawned worker is sent: only the sections kernels depend on, so nothing secret
    leaves this process (a secret dumps as asterisks, which no config accepts: it goes as empty,
    the kernels take the key as an argument)."""
    job = {"config": cfg.model_dump(mode="json", include={"fingerprint", "verify", "engine", "input"}), "units": units}
    job["config"]["fingerprint"]["secret"] = ""
    return job


def _spawn_worker(cfg: Config, units: list[str], errors) -> subprocess.Popen:
    root = str(Path(__file__).resolve().parents[1])
    job = worker_job(cfg, units)
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, root], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=errors)
    assert proc.stdin is not None
    with proc.stdin:
        proc.stdin.write(json.dumps(job).encode())
    return proc


def worker_main() -> None:
    """A worker process: compile the units given on stdin into the cache."""
    from streamdedup.warmup.units import run_units

    job = json.loads(sys.stdin.buffer.read())
    run_units(Config.model_validate(job["config"]), job["units"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # without the interpreter's cleanup: a final walk of the compile's heap (~0.4 s)
