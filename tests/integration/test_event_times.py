"""Hostile event times on the real broker, the feed that found the faults, replayed ten days
late: 300 stories with ten-day-old times, one record with an unusable ``ts``, the 300 stories
again.

Before: ``1e30`` stopped the processor with OverflowError at every restart; ``9999-12-31``
left 6 duplicates where the control has 300; a record decided with the wall clock moved the
window ten days ahead and every resend came out unique. Now the record is decided at the
stream's time and tagged ``dedup.time_invalid``, and every resend is a duplicate, in the single
processor, the staged topology and faust alike.
"""

from __future__ import annotations

import time

import orjson
import pytest

from streamdedup import load_config
from streamdedup.bench.feeds import news_records
from streamdedup.runtime.single.processor import Processor
from streamdedup.pipeline.tags import parse_headers

from .kafka_helpers import Topics, consume_all, produce, run_processor, stop_processors
from .test_staged import Staged, _exactly_once

ENV = {"STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]", "STREAMDEDUP_INPUT__TIME_FIELD": "ts",
       "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": "200000"}


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


def _feed(bad_ts: bytes) -> list[tuple[bytes, bytes]]:
    now = int(time.time() * 1000) - 10 * 86_400_000  # a replay of old input
    stories = []
    for i, (k, v) in enumerate(news_records(300, seed=261, variant_every=10**9)):  # no variants: 300 distinct stories
        obj = orjson.loads(v)
        obj["ts"] = now + i
        stories.append((k, orjson.dumps(obj)))
    bad = (b"bad", b'{"id":"bad","text":"a story whose time is hostile, nothing else","ts":' + bad_ts + b"}")
    return stories + [bad] + [(b"again-" + k, v) for k, v in stories]


def _check(out: list, outputs: dict, n: int) -> None:
    _exactly_once(out, n)
    tags = {k: (t, h) for t, k, _, h in out}
    again = [t for k, (t, _) in tags.items() if k.startswith(b"again-")]
    assert len(again) == 300 and again.count(outputs["duplicate"]) == 300
    assert tags[b"bad"][0] == outputs["unique"] and parse_headers(tags[b"bad"][1]).time_invalid.startswith("ts ")


@pytest.mark.parametrize("bad_ts", [b"1e30", b'"9999-12-31T23:59:59Z"'])
def test_single_processor(kafka_bootstrap, tmp_path, bad_ts) -> None:
    t = Topics(kafka_bootstrap, partitions=1)
    t.create()
    records = _feed(bad_ts)
    produce(kafka_bootstrap, t.input, records)
    s = Processor(load_config(environ=t.env(**ENV)), str(tmp_path / "state"), stop_when_idle=3.0, watchdog=False).run()
    assert s.reconciles() and s.records == len(records)
    _check(consume_all(kafka_bootstrap, list(t.outputs.values()), len(records)), t.outputs, len(records))


@pytest.mark.parametrize(("worker", "bad_ts"), [
    (("--topology", "staged", "--role", "worker", "--instance", "w0"), b"18446744073709551615"),
    # the faust agent reads the times with the staged worker's preparer; the decider keeps the
    # stream's clock across the fingerprints of both
    (("--topology", "faust"), b'"soon"'),
], ids=["staged", "faust"])
def test_staged_and_faust(kafka_bootstrap, tmp_path, worker, bad_ts) -> None:
    if "faust" in worker:
        pytest.importorskip("faust", reason="the faust extra (make test installs it)")
    t = Staged(kafka_bootstrap)
    t.create()
    records = _feed(bad_ts)
    produce(kafka_bootstrap, t.input, records)
    env = {**t.staged_env(), **ENV}
    dec = run_processor(env, str(tmp_path / "decider"), 10.0, None, ("--topology", "staged", "--role", "decider"))
    work = run_processor(env, None, 8.0, None, worker)
    assert work.wait(300) == 0 and dec.wait(300) == 0
    _check(consume_all(kafka_bootstrap, list(t.outputs.values()), len(records)), t.outputs, len(records))
