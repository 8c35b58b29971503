"""The pure parts of ``streamdedup bench soak``: percentiles, windows, the RSS rule, the delivery check."""

from __future__ import annotations

import numpy as np
import pytest

from streamdedup.bench.soak_probe import cpu_seconds, rss_mb
from streamdedup.bench.soak_stats import delivery_check, latency_windows, percentiles, rss_trend


def test_percentiles_match_numpy_and_keep_the_max() -> None:
    rng = np.random.default_rng(3)
    values = rng.exponential(100, 10_000)
    got = percentiles(values)
    assert got["n"] == 10_000
    for q in (50, 95, 99):
        assert got[f"p{q}_ms"] == pytest.approx(np.percentile(values, q), abs=1e-3)
    assert got["max_ms"] == pytest.approx(values.max(), abs=1e-3)
    assert got["p50_ms"] < got["p95_ms"] < got["p99_ms"] < got["max_ms"]


def test_windows_group_by_produce_time_and_show_a_slow_spell() -> None:
    # 90 s at 10 records/s: 20 ms everywhere except 2 s of 900 ms in the second window
    sent = np.arange(0, 90, 0.1)
    lat = np.where((sent >= 40) & (sent < 42), 900.0, 20.0)
    windows = latency_windows(sent, lat, 30)
    assert [(w["start_s"], w["end_s"], w["n"]) for w in windows] == [(0, 30, 300), (30, 60, 300), (60, 90, 300)]
    assert windows[0]["max_ms"] == windows[2]["max_ms"] == 20.0
    assert windows[1]["max_ms"] == 900.0 and windows[1]["p99_ms"] == 900.0 and windows[1]["p50_ms"] == 20.0
    assert sum(w["n"] for w in windows) == len(sent)


def test_windows_skip_empty_slots_and_reject_bad_input() -> None:
    windows = latency_windows([1.0, 95.0], [5.0, 7.0], 30)
    assert [w["start_s"] for w in windows] == [0, 90]
    assert latency_windows([], [], 30) == []
    with pytest.raises(ValueError, match="differ in length"):
        latency_windows([1.0, 2.0], [5.0], 30)
    with pytest.raises(ValueError, match="window_s"):
        latency_windows([1.0], [5.0], 0)


def _samples(rss_of_t, seconds: float = 300, every: float = 5):
    t = np.arange(0, seconds + every, every)
    return t, [rss_of_t(x) for x in t]


def test_rss_levelled_when_growth_stops_once_the_index_is_full() -> None:
    # grows 1 MB/s until the index fills at 100 s, then flat with +-1 MB of allocator noise
    t, rss = _samples(lambda x: 800 + min(x, 100) + (1 if int(x) % 10 else -1))
    trend = rss_trend(t, rss)
    assert trend.levelled is True
    assert trend.first_mb_per_min == pytest.approx(60, rel=0.05)
    assert abs(trend.last_mb_per_min) < 2


def test_rss_not_levelled_when_it_keeps_growing() -> None:
    # a growth once measured: 793 -> 1018 MB over 330 s, steadily
    t, rss = _samples(lambda x: 793 + 225 * x / 330, seconds=330)
    trend = rss_trend(t, rss)
    assert trend.levelled is False
    assert trend.last_mb_per_min == pytest.approx(trend.first_mb_per_min, rel=0.01) == pytest.approx(40.9, rel=0.01)


def test_rss_slow_late_growth_within_a_tenth_is_levelled_but_a_leak_is_not() -> None:
    fast_then_slow = _samples(lambda x: 800 + (x if x < 100 else 100 + 0.05 * (x - 100)))  # 60 then 3 MB/min
    assert rss_trend(*fast_then_slow).levelled is True
    flat_then_leak = _samples(lambda x: 800 + (0 if x < 200 else 0.2 * (x - 200)))  # 0 then 12 MB/min
    assert rss_trend(*flat_then_leak).levelled is False
    # an eighth of the start-up growth is still a leak: 120 then 15 MB/min
    steep_then_leak = _samples(lambda x: 800 + (2 * x if x < 100 else 200 + 0.25 * (x - 100)))
    assert rss_trend(*steep_then_leak).levelled is False


def test_rss_flat_from_the_start_is_levelled_and_few_samples_undetermined() -> None:
    assert rss_trend(*_samples(lambda x: 750.0)).levelled is True
    assert rss_trend(*_samples(lambda x: 900 - x)).levelled is True  # falling
    few = rss_trend([0, 5, 10, 15, 20], [1, 2, 3, 4, 5])
    assert few.levelled is None and "too few samples" in few.rule


def test_delivery_check_counts_lost_doubled_and_unknown() -> None:
    ok = delivery_check(["a", "b", "c"], ["c", "a", "b"])
    assert ok["ok"] and (ok["lost"], ok["doubled"], ok["unexpected"]) == (0, 0, 0)
    bad = delivery_check([f"n{i}" for i in range(100)], [f"n{i}" for i in range(1, 100)] + ["n5", "x"])
    assert not bad["ok"]
    assert (bad["lost"], bad["doubled"], bad["unexpected"], bad["seen"]) == (1, 1, 1, 101)
    assert bad["examples"] == {"lost": ["n0"], "doubled": ["n5"], "unexpected": ["x"]}
    with pytest.raises(ValueError, match="not unique"):
        delivery_check(["a", "a"], ["a"])


def test_proc_probes_read_this_process_and_none_for_a_gone_one() -> None:
    import os

    assert rss_mb(os.getpid()) > 10
    assert cpu_seconds(os.getpid()) > 0
    assert rss_mb(2**22 + 12345) is None and cpu_seconds(2**22 + 12345) is None
