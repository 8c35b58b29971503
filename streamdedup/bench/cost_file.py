"""``streamdedup bench cost --file``: file mode's CPU per record, in-process and as a user runs it.

Three measurements over the same Reuters JSONL file, alternating, medians:

- ``streamdedup run --input`` as its own process: wall and CPU seconds (the OS's accounting of
  the finished child);
- a process that only starts Python and imports what ``streamdedup run`` imports: the part of
  the whole process that is paid before the first line is read;
- ``run_file`` in this (warm) process with its stages timed (``cost_timers``): the per-record
  parts, and the CPU that does not scale with the input (state open, index allocation, close).

Whole process minus imports minus the in-process run is the per-run set-up the warm process
does not pay (kernel cache checks and loads, Unicode tables, exit).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from streamdedup.bench.cost_timers import Stages, ThreadCpu, table
from streamdedup.bench.engine import _write_reuters
from streamdedup.config import Config

#: what ``streamdedup run --input`` imports before it reads a line, under the command line's
#: start-up (``cli._startup``: the collector off, NumPy and Numba loaded as the command loads them)
_IMPORTS = ("from streamdedup.cli import _startup\n_startup.begin()\n_startup.load_numeric()\n"
            "import rich.console, streamdedup.cli.run, streamdedup._kernels.cache, streamdedup.config, "
            "streamdedup.runtime.filemode, streamdedup.warmup.fill\n_startup.done()")

_ORDER = [("MainThread", p) for p in (
    "decode/scan", "prepare (ids, times, dead letters)", "gather texts", "canonical + fingerprint kernel", "decide kernel",
    "matches: ids of originals", "state encode", "decide: arrays, puts, decisions", "route: tags and output lines",
    "state: submit commit")] + [("state-commit", p) for p in ("write output files", "RocksDB write")]


def _targets() -> list[tuple[object, str, str]]:
    from streamdedup._kernels import decide as KD
    from streamdedup._kernels import records as KR
    from streamdedup.engine import deduplicator, matches
    from streamdedup.pipeline.decide import FingerprintAndDecide
    from streamdedup.pipeline.prepare import Prepared, Preparer
    from streamdedup.runtime import filemode
    from streamdedup.state.pipelined import PipelinedStore
    from streamdedup.state.rocks import RocksStore
    from streamdedup.text.scan import LineScanner

    return [
        (LineScanner, "scan", "decode/scan"),
        (Preparer, "prepare", "prepare (ids, times, dead letters)"),
        (Prepared, "gather", "gather texts"),
        (FingerprintAndDecide, "fingerprint", "canonical + fingerprint kernel"),
        (KD, "decide_batch", "decide kernel"),
        (matches, "resolve", "matches: ids of originals"),
        (KR, "encode_batch", "state encode"),
        (deduplicator.Deduplicator, "_run_fingerprinted", "decide: arrays, puts, decisions"),
        (filemode._Writer, "batch", "route: tags and output lines"),
        (filemode._Writer, "_write", "write output files"),
        (PipelinedStore, "commit", "state: submit commit"),
        (RocksStore, "commit", "RocksDB write"),
    ]


def _child_cpu(argv: list[str]) -> tuple[float, float]:
    """(wall, user + system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _in_process(cfg: Config, path: str, out: str) -> dict:
    from streamdedup.runtime import filemode

    stages = Stages()
    cpu = ThreadCpu()
    flush = filemode._flush

    def flush_then_mark(*a, **kw):
        flush(*a, **kw)
        cpu.mark()  # while the commit thread lives: its CPU leaves /proc when it ends

    with stages.installed(_targets()):
        filemode._flush = flush_then_mark
        try:
            cpu.start()
            t0, c0 = time.perf_counter(), time.process_time()
            summary = filemode.run_file(cfg, path, out)
            wall, total = time.perf_counter() - t0, time.process_time() - c0
        finally:
            filemode._flush = flush
    threads = cpu.by_role()
    threads["MainThread"] = threads.get("MainThread", 0.0) - cpu.seconds_overhead
    return {"wall": wall, "cpu": total, "lines": summary.records, "rows": table(stages, threads, summary.records, _ORDER)}


def file_cost(cfg: Config, config_path: str | None, rounds: int = 3) -> dict:
    """Whole process, imports only and in-process ``run_file``, alternating ``rounds`` times."""
    exe = [sys.executable, "-m", "streamdedup.cli"] + (["--config", config_path] if config_path else [])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "reuters.jsonl")
        n = _write_reuters(path)
        _child_cpu([*exe, "run", "--input", path, "--output-dir", os.path.join(tmp, "warm")])  # kernel cache, page cache
        from streamdedup.runtime.filemode import run_file

        run_file(cfg, path, os.path.join(tmp, "warm-in"))
        whole, imports, inproc = [], [], []
        for r in range(rounds):
            whole.append(_child_cpu([*exe, "run", "--input", path, "--output-dir", os.path.join(tmp, f"w{r}")]))
            imports.append(_child_cpu([sys.executable, "-c", _IMPORTS]))
            inproc.append(_in_process(cfg, path, os.path.join(tmp, f"i{r}")))
    med = statistics.median
    rows = []
    for key in [(row["thread"], row["part"]) for row in inproc[0]["rows"]]:
        vals = [next((row["us"] for row in r["rows"] if (row["thread"], row["part"]) == key), 0.0) for r in inproc]
        rows.append({"thread": key[0], "part": key[1], "us": med(vals)})
    return {"records": n, "rounds": rounds,
            "whole_wall_s": med(w for w, _ in whole), "whole_cpu_s": med(c for _, c in whole),
            "imports_wall_s": med(w for w, _ in imports), "imports_cpu_s": med(c for _, c in imports),
            "in_process_wall_s": med(r["wall"] for r in inproc), "in_process_cpu_s": med(r["cpu"] for r in inproc),
            "rows": rows}
