"""Filling the kernel cache: the units compile exactly what the runs call (nothing compiles after
a fill), they are shared among processes, a failing worker costs only time; and the compile
listener fires on a compile, once, never on a cache load."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from streamdedup.warmup import fill as kernel_cache
from streamdedup.warmup import workers as kernel_workers
from streamdedup._kernels import cache
from streamdedup.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_units_are_shared_longest_first_to_the_process_that_finishes_first() -> None:
    """The first list is this process's, which collects the compile's garbage after its units;
    a worker's start counts: a new interpreter's (~0.8 s), or a fork's."""
    file = ("scan", "fingerprint", "engine")  # engine 9.0, fingerprint 4.5, scan 4.2
    assert kernel_cache.plan(file, 2, worker_start=0.8) == [["engine"], ["fingerprint", "scan"]]
    assert kernel_cache.plan(file, 2, worker_start=0.05) == [["fingerprint", "scan"], ["engine"]]
    assert kernel_cache.plan(file, 3, worker_start=0.05) == [["scan"], ["engine"], ["fingerprint"]]
    assert kernel_cache.plan(file, 1) == [["engine", "fingerprint", "scan"]]
    assert kernel_cache.plan(["scan", "growth", "fingerprint"], 2, worker_start=0.8) == [["fingerprint", "growth"], ["scan"]]
    assert kernel_cache.plan(["scan", "growth", "fingerprint"], 2, worker_start=0.05) == [["scan"], ["fingerprint", "growth"]]
    assert kernel_cache.plan(["scan", "explain"], 8, worker_start=0.8) == [["scan"], ["explain"]]
    assert kernel_cache.plan([], 2) == []


def test_every_pipeline_kernel_belongs_to_a_unit() -> None:
    covered = {k for need in kernel_cache.NEEDS["all"] for k in kernel_cache.UNITS[need].kernels}
    assert covered == set(cache.PIPELINE_KERNELS)


def test_a_cached_need_compiles_nothing_and_says_nothing(monkeypatch) -> None:
    monkeypatch.setattr(cache, "missing_kernels", lambda names=cache.PIPELINE_KERNELS: [])
    said = []
    assert kernel_cache.fill(load_config(environ={}), kernel_cache.NEEDS["all"], announce=lambda: said.append(1)) == []
    assert said == []


@pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only")
def test_a_worker_is_a_fork_only_while_this_process_runs_no_other_thread_native_ones_included() -> None:
    """A Kafka client's threads are librdkafka's, invisible to Python's threading module."""
    code = ("import confluent_kafka\n"
            "from streamdedup.warmup import workers as kernel_workers\n"
            "alone = kernel_workers.can_fork()\n"
            "client = confluent_kafka.Producer({'bootstrap.servers': '127.0.0.1:1'})\n"
            "print(alone, kernel_workers.can_fork())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.split() == ["True", "False"], out.stdout + out.stderr


@pytest.mark.parametrize("fork", [pytest.param(True, marks=pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")),
                                  False])
def test_a_failing_worker_is_a_warning_and_the_rest_is_done(fork: bool, monkeypatch, caplog) -> None:
    """A forked worker whose unit raises, a new interpreter that exits 3."""
    monkeypatch.setattr(kernel_workers, "can_fork", lambda: fork)
    if not fork:
        monkeypatch.setattr(kernel_workers, "_WORKER", "import sys; sys.stderr.write('worker broke\\n'); sys.exit(3)")
    parent, ran = os.getpid(), []

    def unit(name: str, seconds: float) -> kernel_cache.Unit:
        def run(cfg) -> None:
            if os.getpid() != parent:
                raise RuntimeError("worker broke")
            ran.append(name)
        return kernel_cache.Unit(run, (), seconds)

    monkeypatch.setitem(kernel_cache.UNITS, "explain", unit("explain", 2.5))
    monkeypatch.setitem(kernel_cache.UNITS, "fingerprint", unit("fingerprint", 4.5))
    mine, theirs = kernel_cache.plan(["explain", "fingerprint"], 2)
    said = []
    with caplog.at_level(logging.WARNING, logger="streamdedup.warmup.fill"):
        done = kernel_cache.fill(load_config(environ={}), ["explain", "fingerprint"], processes=2, force=True,
                                 announce=lambda: said.append(1))
    assert done == ["explain", "fingerprint"] and said == [1]
    assert ran == mine  # this process's share; the worker's failed
    assert str(theirs) in caplog.text and "worker broke" in caplog.text


#: a fill of the need named by argv[2] (a fresh cache, two processes), then a listener that
#: lists every compile that follows
_FILLED = """
import sys
import numpy as np
from numba.core import event
from streamdedup.warmup import fill as kernel_cache
from streamdedup._kernels import cache
from streamdedup.config import load_config

cfg = load_config()
need = kernel_cache.NEEDS[sys.argv[2]]
assert kernel_cache.fill(cfg, need, processes=2) == list(need)
missing_after_fill = cache.missing_kernels()
compiled = []

class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass

event.register("numba:compile", Listener())
"""


def _in_fresh_cache(code: str, tmp_path: Path, *args: str) -> None:
    """Run ``code`` in a new interpreter on an empty kernel cache; it must exit 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "STREAMDEDUP_"))}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), *args], capture_output=True, text=True, timeout=600,
                         cwd=ROOT, env=env)
    assert out.returncode == 0, out.stdout + out.stderr


_AFTER_FILL = _FILLED + """
# what the runs call: file mode (and again, restoring its state), Kafka's batch path, explain
from pathlib import Path
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.runtime.filemode import run_file
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline import Preparer
from streamdedup.pipeline.decide import FingerprintAndDecide, warm_up
from streamdedup.state import MemoryStore
from streamdedup.engine.verify import Fingerprint, compare

tmp = Path(sys.argv[1])
lines = kernel_cache.LINES
(tmp / "in.jsonl").write_bytes(b"\\n".join(lines) + b"\\n")
for _ in range(2):
    run_file(cfg, str(tmp / "in.jsonl"), str(tmp / "out"))
engine = Deduplicator(cfg, MemoryStore(), auto_sizing="full", explicit_confirm=True)
warm_up(cfg)
prep = Preparer(cfg)
data, scan = prep.scan_values(list(lines))
p = prep.prepare(data, scan, 0, scan.n, lambda k: str(k), 0)
ids, texts, times = p.gather()
n = len(p.docs)
FingerprintAndDecide(engine)(ids, texts, times, np.zeros(n, np.int64), np.arange(n, dtype=np.int64))
engine.process([Document("u", "a story nobody sent before", 0)])  # a batch without duplicates
# a staged topology: a worker's records of a Kafka batch, the decider's decode and decide
from streamdedup.engine.checkpoint import Source
from streamdedup.pipeline.fingerprints import FingerprintCodec, decide
codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
data, scan = prep.scan_values(list(lines))
p = prep.prepare(data, scan, 0, scan.n, lambda k: str(k), np.zeros(scan.n, np.int64))
values = codec.encode_prepared(p, [Source("in")], np.zeros(scan.n, np.int64), np.arange(scan.n, dtype=np.int64))
decider = Deduplicator(cfg, MemoryStore(), auto_sizing="full", explicit_confirm=True)
decide(decider, codec.decode([codec.encode_params(), *values]), {Source("fingerprints"): scan.n})
batch = Fingerprinter(cfg.fingerprint).fingerprint_batch(["one story", "one story again"])
# a noisy copy's question (exact evidence): the engine's answer from a batch's canonical texts
from streamdedup.engine.evidence import BatchTexts
hot = np.full(batch.anchors.shape, 255, np.uint8)  # counts that make boilerplate blocks: the block kernel too
for blocks in (False, True):  # and a question about boilerplate blocks (the block kernels)
    engine.evidence.answer(BatchTexts(batch.canon_buf, batch.canon_start, batch.lengths, batch.anchors, batch.anchor_n, hot),
                           1, np.array([0, -1]), 0, blocks=blocks)
compare(Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1), cfg.verify, cfg.fingerprint.signature, full=True)
print(compiled)
assert not compiled, compiled
"""


_SPAWNED = """
from streamdedup.warmup import fill as kernel_cache
from streamdedup._kernels import cache
from streamdedup.config import load_config

from streamdedup.warmup import workers as kernel_workers
kernel_workers.can_fork = lambda: False  # as in a process with other threads (the UI's server)
units = ["growth", "explain"]
assert kernel_cache.plan(units, 2) == [["explain"], ["growth"]], kernel_cache.plan(units, 2)
kernel_cache.fill(load_config(), units, processes=2)
missing = cache.missing_kernels(tuple(k for u in units for k in kernel_cache.UNITS[u].kernels))
assert not missing, missing
"""


@pytest.mark.cold_cache
def test_a_new_interpreter_compiles_its_share_into_the_cache(tmp_path: Path) -> None:
    """Where this process may not fork, a worker is a new interpreter (fresh cache: the worker's
    unit is in it only if that worker compiled it)."""
    _in_fresh_cache(_SPAWNED, tmp_path)


_AFTER_KAFKA_FILL = _FILLED + """
assert set(missing_after_fill) >= {"jsonscan.split_lines", "jsonscan.assemble"}  # file mode's, not compiled
# the processor's path: a full-size engine warmed up, a batch of values (a blank one among them)
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.pipeline import Preparer
from streamdedup.pipeline.decide import FingerprintAndDecide, warm_up
from streamdedup.state import MemoryStore

engine = Deduplicator(cfg, MemoryStore(), auto_sizing="full", explicit_confirm=True)
warm_up(cfg)
prep = Preparer(cfg)
data, scan = prep.scan_values(list(kernel_cache.LINES))
p = prep.prepare(data, scan, 0, scan.n, lambda k: str(k), 0)
ids, texts, times = p.gather()
n = len(p.docs)
FingerprintAndDecide(engine)(ids, texts, times, np.zeros(n, np.int64), np.arange(n, dtype=np.int64))
print(compiled)
assert not compiled, compiled
"""


@pytest.mark.cold_cache
def test_after_a_kafka_fill_the_processors_batches_compile_nothing(tmp_path: Path) -> None:
    """Kafka's need leaves out file mode's scan kernels (~0.4 s of its cold start), and
    nothing the processor's batch path calls."""
    _in_fresh_cache(_AFTER_KAFKA_FILL, tmp_path, "kafka")


@pytest.mark.cold_cache
def test_after_a_fill_the_runs_compile_nothing(tmp_path: Path) -> None:
    """The units' workloads pass the kernels the types the runs do: after a cold fill (empty cache,
    fresh interpreter, two processes) file mode, a restore, Kafka's batch path, a staged
    topology's worker and decider, explain and an exact-evidence answer load every kernel from
    the cache."""
    _in_fresh_cache(_AFTER_FILL, tmp_path, "all")


@njit
def _probe(x):
    return x + 1


def test_the_compile_listener_fires_once_on_a_compile_and_stops() -> None:
    said = []
    stop = cache.on_first_compile(lambda: said.append(1), package=__name__.rpartition(".")[0])
    try:
        _probe(np.int16(1))  # compiles (no cache=True: a compile every new interpreter)
        _probe(np.int32(1))  # compiles again: still one notice
        _probe(np.int16(2))  # compiled already
    finally:
        stop()
    assert said == [1]
    stop2 = cache.on_first_compile(lambda: said.append(2), package="somewhere.else")
    try:
        _probe(np.float32(1))  # a compile outside the package
    finally:
        stop2()
    assert said == [1]


def test_the_compile_listener_is_silent_on_a_cache_load(tmp_path: Path) -> None:
    """A kernel found in the cache loads without a "numba:compile" event (a fresh interpreter
    whose cache holds split_lines)."""
    code = ("import numpy as np\n"
            "from streamdedup._kernels import cache\n"
            "from streamdedup._kernels.jsonscan import split_lines\n"
            "said = []\n"
            "stop = cache.on_first_compile(lambda: said.append(1))\n"
            "split_lines(np.frombuffer(b'a\\nb\\n', np.uint8), np.zeros(3, np.int64), np.zeros(3, np.int64))\n"
            "print(len(said))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    first, second = (subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                                    env=env) for _ in range(2))
    assert (first.stdout.strip(), second.stdout.strip()) == ("1", "0"), first.stderr + second.stderr


@pytest.mark.parametrize("n", [1, 3])
def test_placeholder_fingerprints_have_the_arrays_of_real_ones(n: int) -> None:
    from streamdedup.sketch.fingerprint import Fingerprinter

    fp = Fingerprinter(load_config(environ={}).fingerprint)
    real, fake = fp.fingerprint_batch(["a story about nothing"] * n), fp.placeholder_batch(n)
    for name, value in vars(real).items():
        if isinstance(value, np.ndarray):
            other = getattr(fake, name)
            assert (other.dtype, other.ndim, other.flags.c_contiguous) == (value.dtype, value.ndim, value.flags.c_contiguous), name
    assert not fake.empty.any()


def test_the_demo_fills_what_its_next_steps_call() -> None:
    """inspect and ui, tune --replay (file mode's kernels) and both demo runs: after the demo's
    fill none of them compiles (their notice came again after the demo)."""
    import importlib

    inspect, ui = (importlib.import_module(f"streamdedup.cli.{m}") for m in ("inspect", "ui"))

    demo = set(kernel_cache.NEEDS["demo"])
    assert set(inspect._UNITS) <= demo and set(ui._UNITS) <= demo
    assert set(kernel_cache.NEEDS["run"]) <= demo
    kernels = {k for u in demo for k in kernel_cache.UNITS[u].kernels}
    assert {k for u in kernel_cache.NEEDS["kafka"] for k in kernel_cache.UNITS[u].kernels} <= kernels
