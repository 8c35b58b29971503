"""A failed batch is never skipped on the real broker: the single processor
and the staged decider run in this process with an exception injected into one stage
(``tests.faults``); the restart runs without it.

What must hold: the run stops with the injected error; nothing after the failed batch was
committed (every input position below the state's position or the group's committed offset
has its output visible or its decision stored for the replay, and the visible outputs are a
prefix of the input); the restart gives the outputs of a run that never failed, every input
record exactly once in unique / duplicates / dead letter.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from streamdedup import load_config
from streamdedup.bench.feeds import news_records
from streamdedup.engine.deduplicator import Deduplicator, Source
from streamdedup.engine.stored import recent_positions, unconfirmed_decisions
from streamdedup.runtime.single.processor import Processor
from streamdedup.runtime.staged.decider import Decider
from streamdedup.runtime.staged.worker import Worker
from streamdedup.state import open_store
from tests.faults import STAGES, InjectedFault, arm

from .kafka_helpers import (Topics, committed_offsets, consume_all, decisions, finish, produce, run_processor,
                            stop_processors, wait_for)
from .test_staged import SETTINGS, Staged, _decisions, _exactly_once, _worker

N = 600
ENV = {**SETTINGS, "STREAMDEDUP_ENGINE__BATCH_SIZE": "64", "STREAMDEDUP_KAFKA__LINGER_MS": "20"}


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


@pytest.fixture(scope="module")
def records():
    base = news_records(N // 2, seed=26)
    # resends: the same values again, under their own keys (a replay mislabelled them unique)
    return base + [(b"again-" + k, v) for k, v in base]


def _processor(t: Topics, state: str) -> Processor:
    return Processor(load_config(environ=t.env(**ENV)), state, stop_when_idle=3.0, watchdog=False)


@pytest.fixture(scope="module")
def reference(kafka_bootstrap, records, tmp_path_factory):
    t = Topics(kafka_bootstrap, partitions=1)
    t.create()
    produce(kafka_bootstrap, t.input, records)
    s = _processor(t, str(tmp_path_factory.mktemp("ref") / "state")).run()
    assert s.reconciles() and s.records == len(records)
    got = decisions(consume_all(kafka_bootstrap, list(t.outputs.values()), len(records)), t.outputs)
    assert len(got) == len(records) and sum(v[0] == "duplicate" for v in got.values()) >= N // 2
    return got


def _nothing_later_committed(t: Topics, records: list, state: str, source: Source, group: str) -> None:
    out = consume_all(t.bootstrap, list(t.outputs.values()), 0, timeout=20)
    offset_of = {k: i for i, (k, _) in enumerate(records)}  # one partition, produced in order
    emitted = sorted(offset_of[k] for _, k, _, _ in out)
    committed = committed_offsets(t.bootstrap, group, t.input)
    assert emitted == list(range(len(emitted))) and committed == len(emitted) < len(records)
    engine = Deduplicator(load_config(environ=t.env(**ENV)), open_store(state), explicit_confirm=True)
    try:
        resume = engine.resume_positions().get(source, 0)
        held = {o for (src, o) in unconfirmed_decisions(engine) if src == source}
    finally:
        engine.close()
    lost = sorted(set(range(resume)) - set(emitted) - held)
    assert not lost, f"the state's position {resume} passed {len(lost)} records without a decision: {lost[:5]}..."


@pytest.mark.parametrize("stage", STAGES)
def test_processor_stops_at_a_failed_batch_and_the_restart_equals_a_clean_run(kafka_bootstrap, records, reference,
                                                                               tmp_path, monkeypatch, stage) -> None:
    t = Topics(kafka_bootstrap, partitions=1)
    t.create()
    produce(kafka_bootstrap, t.input, records)
    state = str(tmp_path / "state")
    arm(monkeypatch, stage, "processor")
    with pytest.raises(InjectedFault):
        _processor(t, state).run()
    monkeypatch.undo()
    _nothing_later_committed(t, records, state, Source(t.input, 0), f"group-{t.run_id}")
    s = _processor(t, state).run()
    assert s.reconciles()
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), len(records))
    _exactly_once(got, len(records))
    assert decisions(got, t.outputs) == reference


def _end(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def _decider_committed_nothing_later(cfg, state: str, prints: Source, source: Source) -> None:
    """Fingerprint record f is input record f - 1 (one worker, its params announcement first):
    every input record below the state's position in the fingerprints topic has its record."""
    engine = Deduplicator(cfg, open_store(state), explicit_confirm=True)
    try:
        resume = engine.resume_positions().get(prints, 0)
        stored = {o for src, o, _ in zip(*recent_positions(engine, 10 * N)) if src == source}
    finally:
        engine.close()
    lost = sorted(set(range(resume - 1)) - stored)
    assert resume < N + 1 and not lost, f"position {resume} passed {len(lost)} records without a decision: {lost[:5]}"


@pytest.mark.parametrize("stage", ["fingerprint", "decide", "state_encode", "route"])
def test_staged_decider_stops_at_a_failed_batch_and_the_restart_equals_a_clean_run(kafka_bootstrap, records, reference,
                                                                                   tmp_path, monkeypatch, stage) -> None:
    """The decider in this process (its fingerprint stage is the decoding of the fingerprint
    records), one worker as a process: the worker waits for the decisions the restarted decider
    sends, and the outputs equal the single processor's (one input partition)."""
    t = Staged(kafka_bootstrap)
    t.create()
    produce(kafka_bootstrap, t.input, records)
    if stage == "fingerprint":
        monkeypatch.setattr("tests.faults.ENGINE_STAGES", {"fingerprint": ("streamdedup.pipeline.fingerprints",
                                                                            "FingerprintCodec.decode")})
    worker = _worker(t, "w0", idle=20.0)
    # the worker sends every fingerprint before any decision comes back (600 records are within
    # its read-ahead): the decider then meets the fault mid-stream, not an empty topic
    wait_for(lambda: _end(kafka_bootstrap, t.fingerprints) >= len(records) + 1, 120, "the worker's fingerprints", worker)
    cfg = load_config(environ={**t.staged_env(), **ENV})
    state = str(tmp_path / "decider")
    arm(monkeypatch, stage, "decider")
    with pytest.raises(InjectedFault):
        Decider(cfg, state, stop_when_idle=3.0, watchdog=False).run()
    monkeypatch.undo()
    _decider_committed_nothing_later(cfg, state, Source(t.fingerprints, 0), Source(t.input, 0))
    Decider(cfg, state, stop_when_idle=8.0, watchdog=False).run()
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), len(records))
    assert finish(worker) == 0  # its work is out: not its idle timer
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), len(records))  # and nothing after
    _exactly_once(got, len(records))
    assert _decisions(got, t) == reference


@pytest.mark.parametrize("stage", ["prepare", "fingerprint", "route"])
def test_staged_worker_stops_at_a_failed_batch_and_the_restart_equals_a_clean_run(kafka_bootstrap, records, reference,
                                                                                  tmp_path, monkeypatch, stage) -> None:
    """The worker in this process (prepare and fingerprint are its stages, route its emit), the
    decider as a process: the restarted worker re-reads from its committed offsets and the
    decider answers the re-sent fingerprints with the stored decisions."""
    t = Staged(kafka_bootstrap)
    t.create()
    produce(kafka_bootstrap, t.input, records)
    env = {**t.staged_env(), **ENV}
    dec = run_processor(env, str(tmp_path / "decider"), 25.0, None, ("--topology", "staged", "--role", "decider"))
    cfg = load_config(environ=env)
    arm(monkeypatch, stage, "worker", at=2 if stage == "route" else 3)
    with pytest.raises(InjectedFault):
        Worker(cfg, stop_when_idle=20.0, instance="w0", watchdog=False).run()
    monkeypatch.undo()
    out = consume_all(t.bootstrap, list(t.outputs.values()), 0, timeout=20)
    offset_of = {k: i for i, (k, _) in enumerate(records)}
    emitted = sorted(offset_of[k] for _, k, _, _ in out)
    committed = committed_offsets(t.bootstrap, f"group-{t.run_id}.workers", t.input)
    assert emitted == list(range(len(emitted))) and committed == len(emitted) < len(records)
    Worker(cfg, stop_when_idle=6.0, instance="w0", watchdog=False).run()
    assert finish(dec) == 0  # every decision was answered: not its idle timer
    got = consume_all(kafka_bootstrap, list(t.outputs.values()), len(records))
    _exactly_once(got, len(records))
    assert _decisions(got, t) == reference
