"""A failed batch is never skipped, in-process: the single processor on the
fake client and file mode, with an exception injected into each stage (``tests.faults``).

What must hold: the run stops with the injected error; nothing after the failed batch was
committed (every input position the state or the outputs cover has its decision stored or its
output written); a restart without the fault gives the outputs of a run that never failed,
every record exactly once. (The same on the real broker: tests/integration/test_failed_batch.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import orjson
import pytest

from streamdedup import load_config
from streamdedup.engine.deduplicator import Deduplicator, Source
from streamdedup.engine.stored import unconfirmed_decisions
from streamdedup.errors import EngineStoppedError
from streamdedup.pipeline.decide import FingerprintAndDecide
from streamdedup.runtime.filemode import input_key, run_file
from streamdedup.state import MemoryStore, open_store
from tests.faults import STAGES, InjectedFault, arm
from tests.unit.test_engine import story, typo

from .test_kafka_delivery import broker, decisions, feed, run


def good_feed() -> list[tuple[bytes, bytes]]:
    """Stories and resends, no broken record: every record below a committed position is stored."""
    return [r for r in feed(400, seed=7) if r[1].startswith(b'{"id":"doc-')]


def stored_state(state: str, cfg) -> tuple[dict, set]:
    """Resume positions and the (source, offset)s of the decisions kept for a replay."""
    engine = Deduplicator(cfg, open_store(state), explicit_confirm=True)
    try:
        return engine.resume_positions(), set(unconfirmed_decisions(engine))
    finally:
        engine.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    records = good_feed()
    b = broker(records)
    s = run(b, str(tmp_path_factory.mktemp("ref") / "state"))
    got = decisions(b)
    assert len(got) == len(records) and s.reconciles()
    assert sum(v[0] == "duplicate" for v in got.values()) > 50
    return records, got


@pytest.mark.parametrize("stage", STAGES)
def test_processor_stops_at_a_failed_batch_and_the_restart_equals_a_clean_run(reference, tmp_path, monkeypatch, stage) -> None:
    records, want = reference
    b = broker(records)
    state = str(tmp_path / "s")
    arm(monkeypatch, stage, "processor")
    with pytest.raises(InjectedFault):
        run(b, state)
    monkeypatch.undo()
    out = decisions(b)
    assert len(out) < len(records)
    offset_of = {key: i for i, (key, _) in enumerate(records)}  # one partition
    emitted = {offset_of[k] for k in out}
    positions, held = stored_state(state, load_config(environ={}))
    resume = positions.get(Source("in", 0), 0)
    held_offsets = {o for (src, o) in held if src == Source("in", 0)}
    lost = sorted(set(range(resume)) - emitted - held_offsets)
    assert not lost, f"the state's position {resume} passed {len(lost)} records without a decision: {lost[:5]}..."
    again = run(b, state)
    assert again.reconciles()
    assert decisions(b) == want


@pytest.mark.parametrize("stage", ["fingerprint", "decide"])
def test_a_stopped_engine_refuses_every_later_batch(monkeypatch, stage) -> None:
    """A batch that fails in the fingerprint step (before the engine saw it) stops the engine
    as one that fails inside it: the next batch, or a batch of positions alone, is refused."""
    engine = Deduplicator(load_config(environ={}), MemoryStore())
    step = FingerprintAndDecide(engine)
    arm(monkeypatch, stage, "processor", at=1)
    args = (["a"], [story(1)], np.zeros(1, np.int64), np.full(1, -1, np.int64), np.zeros(1, np.int64))
    with pytest.raises(InjectedFault):
        step(*args)
    monkeypatch.undo()
    with pytest.raises(EngineStoppedError, match="InjectedFault"):
        step(*args)
    with pytest.raises(EngineStoppedError):
        engine.commit_positions({Source("in", 0): 5})
    assert engine.resume_positions() == {}


def _lines(n: int) -> list[bytes]:
    out = []
    for k in range(n):
        base = story(900 + k // 3)
        out.append(orjson.dumps({"id": f"doc-{k}", "text": base if k % 3 == 0 else typo(base, k)}))
    return out


def _outputs(out: Path) -> list[tuple[str, str]]:
    got = []
    for name in ("unique", "duplicates", "dead_letter"):
        f = out / f"{name}.jsonl"
        for line in f.read_text().splitlines() if f.exists() else []:
            obj = json.loads(line)
            got.append((obj.get("id") or json.loads(obj["raw"])["id"], name, (obj.get("_dedup") or {}).get("duplicate_of")))
    return sorted(got)


@pytest.mark.parametrize("stage", STAGES)
def test_file_mode_stops_at_a_failed_batch_and_the_restart_equals_a_clean_run(tmp_path, monkeypatch, stage) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(_lines(120)) + b"\n")
    cfg = load_config(environ={"STREAMDEDUP_ENGINE__BATCH_SIZE": "16"})
    run_file(cfg, str(inp), str(tmp_path / "ref"))
    want = _outputs(tmp_path / "ref")
    assert len(want) == 120 and sum(w[1] == "duplicates" for w in want) > 30
    # file mode prepares a whole read chunk (8 MB) at once: this input is one call
    arm(monkeypatch, stage, "filemode", at=1 if stage == "prepare" else 3)
    with pytest.raises(InjectedFault):
        run_file(cfg, str(inp), str(tmp_path / "out"))
    monkeypatch.undo()
    written = _outputs(tmp_path / "out")
    positions, _ = stored_state(str(tmp_path / "out" / "state"), cfg)
    done = positions.get(Source(input_key(str(inp))), 0)
    assert done < 120 and len(written) == done  # the lines the state says are done, and no later one
    run_file(cfg, str(inp), str(tmp_path / "out"))
    assert _outputs(tmp_path / "out") == want
