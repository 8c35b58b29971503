"""The pure parts of ``streamdedup bench soak``: latency percentiles, 30-second windows, the RSS
levelling rule and the delivery check. No Kafka and no processes here, so each rule is unit-tested
on made-up numbers."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np


def percentiles(values_ms: Iterable[float]) -> dict:
    """Count, p50/p95/p99 and max of latencies in ms (linear interpolation, as numpy does).

    >>> percentiles([10, 20, 30, 40, 50])
    {'n': 5, 'p50_ms': 30.0, 'p95_ms': 48.0, 'p99_ms': 49.6, 'max_ms': 50.0}
    >>> percentiles([])
    {'n': 0, 'p50_ms': None, 'p95_ms': None, 'p99_ms': None, 'max_ms': None}
    """
    arr = np.asarray(list(values_ms), dtype=np.float64)
    if arr.size == 0:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    p50, p95, p99 = (round(float(x), 3) for x in np.percentile(arr, [50, 95, 99]))
    return {"n": int(arr.size), "p50_ms": p50, "p95_ms": p95, "p99_ms": p99, "max_ms": round(float(arr.max()), 3)}


def latency_windows(sent_s: Iterable[float], latency_ms: Iterable[float], window_s: float = 30.0) -> list[dict]:
    """Percentiles per window of ``window_s`` seconds of produce time (0 = start of the timed run).

    A record belongs to the window it was produced in, not the one it was seen in: a slow spell
    then shows in the window whose records it delayed.

    >>> [(w["start_s"], w["n"]) for w in latency_windows([0.5, 1, 31, 59, 61], [1, 2, 3, 4, 5], 30)]
    [(0.0, 2), (30.0, 2), (60.0, 1)]
    """
    if window_s <= 0:
        raise ValueError(f"window_s must be > 0, got {window_s}")
    sent = np.asarray(list(sent_s), dtype=np.float64)
    lat = np.asarray(list(latency_ms), dtype=np.float64)
    if sent.shape != lat.shape:
        raise ValueError(f"sent_s and latency_ms differ in length ({sent.size} vs {lat.size})")
    if sent.size == 0:
        return []
    slot = np.floor(sent / window_s).astype(np.int64)
    out = []
    for k in range(int(slot.min()), int(slot.max()) + 1):
        chosen = lat[slot == k]
        if chosen.size:
            out.append({"start_s": float(k * window_s), "end_s": float((k + 1) * window_s), **percentiles(chosen)})
    return out


@dataclass(frozen=True)
class RssTrend:
    """Growth of RSS over the first and the last third of a run, and the verdict."""

    first_mb_per_min: float | None
    last_mb_per_min: float | None
    #: None when there are too few samples to say
    levelled: bool | None
    rule: str

    def as_dict(self) -> dict:
        return asdict(self)


def slope_per_min(t_s: Iterable[float], y: Iterable[float]) -> float | None:
    """Least-squares slope in units per minute (robust to one noisy sample, unlike end - start);
    None for fewer than two samples.

    >>> slope_per_min([0, 30, 60], [100, 101, 102])
    2.0
    """
    t, v = np.asarray(list(t_s), dtype=np.float64), np.asarray(list(y), dtype=np.float64)
    if t.size < 2 or np.ptp(t) == 0:
        return None
    return round(float(np.polyfit(t, v, 1)[0]) * 60.0, 2)


def rss_trend(t_s: Iterable[float], rss_mb: Iterable[float], ratio: float = 0.1, tolerance_mb_per_min: float = 1.0,
              min_samples_per_third: int = 2) -> RssTrend:
    """Does RSS level off? Compares the slope of the last third of the samples with the first's.

    Levelled when the last third grows at most ``ratio`` times as fast as the first third, or
    by at most ``tolerance_mb_per_min`` (allocator noise: a process that is flat from the start
    has no first-third growth to compare with). Either way a *falling* RSS counts as levelled.
    The ratio is strict on purpose: start-up growth is steep, and a lenient ratio would call a
    steady leak of a tenth of it (gigabytes a day) levelled.

    >>> rss_trend(range(0, 90, 5), [100 + 10 * min(t, 30) for t in range(0, 90, 5)]).levelled
    True
    >>> rss_trend(range(0, 90, 5), [100 + 10 * t for t in range(0, 90, 5)]).levelled
    False
    """
    t = np.asarray(list(t_s), dtype=np.float64)
    y = np.asarray(list(rss_mb), dtype=np.float64)
    if t.shape != y.shape:
        raise ValueError(f"t_s and rss_mb differ in length ({t.size} vs {y.size})")
    rule = f"last-third slope <= max({ratio:g} x first-third slope, {tolerance_mb_per_min:g} MB/min)"
    third = t.size // 3
    if third < min_samples_per_third:
        return RssTrend(None, None, None, f"{rule}; too few samples ({t.size}) to tell")
    first = slope_per_min(t[:third], y[:third]) or 0.0
    last = slope_per_min(t[-third:], y[-third:]) or 0.0
    levelled = last <= max(ratio * first, tolerance_mb_per_min)
    return RssTrend(first, last, bool(levelled), rule)


def delivery_check(produced_ids: Iterable[str], seen_ids: Iterable[str]) -> dict:
    """Each produced id exactly once across the outputs: counts of lost, doubled and unknown ids.

    >>> delivery_check(["a", "b", "c"], ["a", "b", "b", "z"])
    {'produced': 3, 'seen': 4, 'lost': 1, 'doubled': 1, 'unexpected': 1, 'ok': False, 'examples': {'lost': ['c'], 'doubled': ['b'], 'unexpected': ['z']}}
    """
    produced = list(produced_ids)
    counts = Counter(seen_ids)
    wanted = set(produced)
    if len(wanted) != len(produced):
        raise ValueError("produced ids are not unique: the check needs one id per record")
    lost = sorted(i for i in wanted if counts[i] == 0)
    doubled = sorted(i for i in wanted if counts[i] > 1)
    unexpected = sorted(i for i in counts if i not in wanted)
    return {"produced": len(produced), "seen": sum(counts.values()), "lost": len(lost), "doubled": len(doubled),
            "unexpected": len(unexpected), "ok": not (lost or doubled or unexpected),
            "examples": {"lost": lost[:5], "doubled": doubled[:5], "unexpected": unexpected[:5]}}
