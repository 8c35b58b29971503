"""The staged bench's CPU accounting of other processes (``streamdedup.bench.proc_cpu``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from streamdedup.bench.proc_cpu import ProcessCpu, role, task_cpu, work_us_per_record

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# burns 1.0 s of its main thread's CPU, then 0.6 s in a second thread, then idles so the sampler
# sees the end. The burns are long against the spread of a Python start-up's CPU on a loaded
# machine (up to ~0.1 s seen), which the work figure takes out by subtracting another start-up.
_CHILD = """
import threading, time
def burn(s):
    t0 = time.thread_time()
    while time.thread_time() - t0 < s:
        pass
burn(1.0)
t = threading.Thread(target=burn, args=(0.6,)); t.start(); t.join()
time.sleep(0.5)
"""


def test_roles_by_thread_id_and_kernel_name():
    assert role(100, 100, "python") == "main thread"
    assert role(100, 101, "rdk:broker1") == "librdkafka"
    assert role(100, 102, "rocksdb:low") == "RocksDB"
    assert role(100, 103, "python") == "other threads"


def test_task_cpu_of_this_process_names_its_threads():
    mine = task_cpu("self")
    assert mine and all(cpu >= 0 for _, cpu in mine.values())
    assert task_cpu(2**22 + 12345) == {}  # no such process: nothing, no error


def _child(script: str) -> ProcessCpu:
    child = subprocess.Popen([sys.executable, "-c", script])
    cpu = ProcessCpu({"child": [child.pid]}, interval=0.02).start()
    child.wait(30)
    cpu.stop()
    return cpu


def test_a_child_process_cpu_by_role():
    cpu = _child(_CHILD)
    # the thread that ended and the process that exited keep their last samples
    life = cpu.lifetime()
    assert 0.98 < life[("child", "main thread")] < 1.6
    assert 0.58 < life[("child", "other threads")] < 1.0


def test_work_per_record_is_the_run_less_the_idle_processes():
    idle = _child("import time; time.sleep(0.3)")
    run = _child(_CHILD)
    work = work_us_per_record(run, idle, 7)["child"]
    assert 0.8e6 < work["main thread"] * 7 < 1.3e6  # Python's start-up is in both and taken out
    assert 0.5e6 < work["other threads"] * 7 < 0.8e6
    assert work["total"] == pytest.approx(work["main thread"] + work["other threads"])


def test_a_long_lived_process_counts_over_the_samples_less_its_idle_rate():
    me = [os.getpid()]
    idle = ProcessCpu({"broker": me}, interval=0.02).start()
    time.sleep(0.3)
    idle.stop()
    run = ProcessCpu({"broker": me}, interval=0.02).start()
    t0 = time.thread_time()
    while time.thread_time() - t0 < 0.2:
        pass
    run.stop()
    # the sampled interval's busy CPU, not this process's lifetime
    assert 0.15e6 < work_us_per_record(run, idle, 1)["broker"]["all threads"] < 0.6e6


def test_the_staged_bench_reports_medians_of_the_rounds_and_the_cores_bound(monkeypatch):
    from streamdedup.bench import staged
    from streamdedup.cli.bench import _cpu_lines

    rounds = [{"worker": {"main thread": 10.0, "total": 10.0}, "decider": {"RocksDB": 2.0, "total": 2.0}},
              {"worker": {"main thread": 30.0, "total": 30.0}},  # a round without a decider figure counts as 0
              {"worker": {"main thread": 20.0, "total": 20.0}, "decider": {"RocksDB": 4.0, "total": 4.0}}]
    med = staged._median_cpu(rounds)
    assert med == {"worker": {"main thread": 20.0, "total": 20.0}, "decider": {"RocksDB": 2.0, "total": 2.0}}
    monkeypatch.setattr(staged.os, "cpu_count", lambda: 2)
    assert staged._cpu_bound(med) == pytest.approx(2e6 / 22.0)
    lines = _cpu_lines({"cpu_us_per_record": {"staged": med}, "cpu_bound_docs_per_s": {"staged": 90_909.0}})
    assert "worker 20 (main thread 20.0)" in lines[1] and "90,909 docs/s" in lines[1]
    assert len(lines) == 2  # no warning when every figure is positive
    short = _cpu_lines({"cpu_us_per_record": {"single": {"single": {"main thread": -3.0, "total": -3.0}}},
                        "cpu_bound_docs_per_s": {"single": 0.0}})
    assert "too short" in short[-1]
