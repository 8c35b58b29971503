"""The cost bench's stage timers: exclusive CPU per stage, glue as the rest of a thread."""

import threading
import time
import types

from streamdedup.bench.cost_timers import Stages, ThreadCpu, table


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_stage_called_inside_another_is_not_counted_twice():
    mod = types.SimpleNamespace(inner=lambda: _spin(0.05), outer=None)
    mod.outer = lambda: (_spin(0.03), mod.inner())
    stages = Stages()
    with stages.installed([(mod, "inner", "inner"), (mod, "outer", "outer")]):
        mod.outer()
    inner, outer = stages.seconds[("MainThread", "inner")], stages.seconds[("MainThread", "outer")]
    assert 0.045 < inner < 0.08
    assert 0.025 < outer < 0.045  # its own 30 ms, not the 80 ms it took with inner


def test_wrappers_are_removed_after_the_run():
    class C:
        def f(self):
            return 1

    original = C.__dict__["f"]
    with Stages().installed([(C, "f", "f")]):
        assert C.__dict__["f"] is not original
        assert C().f() == 1
    assert C.__dict__["f"] is original


def test_thread_cpu_names_python_threads_and_the_table_adds_their_glue():
    stages = Stages()
    cpu = ThreadCpu()
    cpu.start()
    work = stages._timed("work", lambda: _spin(0.04))

    done, leave = threading.Event(), threading.Event()

    def body():
        work()
        _spin(0.02)  # outside any stage: glue
        done.set()
        leave.wait(10)  # an ended thread leaves /proc: the bench marks while its threads live

    t = threading.Thread(target=body, name="decide_0")
    t.start()
    done.wait(10)
    cpu.mark()
    leave.set()
    t.join()
    threads = cpu.by_role()
    assert 0.055 < threads["decide"] < 0.09
    rows = {(r["thread"], r["part"]): r["us"] for r in table(stages, threads, 1000, [("decide", "work")])}
    assert 35 < rows[("decide", "work")] < 50  # us per record over 1,000 records
    assert 15 < rows[("decide", "glue (rest of the thread)")] < 40
