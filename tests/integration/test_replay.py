"""``tune --replay TOPIC`` on the real broker: read_committed, no commits, the same decisions as a file.

The topic holds the unit tests' hand-built feed (known flips between thresholds 0.45 and 0.7),
plus an aborted transaction that read_committed must not replay.
"""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka import Producer

from streamdedup.config import load_config, with_settings
from streamdedup.runtime.since import Since
from streamdedup.tools.whatif_input import ReplayReadError, read_recent
from streamdedup.tools.whatif import DUPLICATE_CHANGED, DUPLICATE_TO_UNIQUE, Replayer, ReplayInput
from tests.unit.test_replay import _feed

from .kafka_helpers import Topics, committed_offsets, produce

ABORTED = b'{"id": "aborted", "text": "a record of an aborted transaction must never be replayed"}'


def _cfg(t: Topics, threshold: float):
    # the feed (tests/unit/test_replay.py) replaces paragraphs with new words: revisions, which the
    # threshold cases leave out, as there
    return with_settings(load_config(environ={}), [f"kafka.bootstrap_servers={t.bootstrap}", f"kafka.group_id=group-{t.run_id}",
                                                   f"verify.jaccard_threshold={threshold}", "verify.revisions=off"])


def _abort_one(bootstrap: str, topic: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"abort-{topic}"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=ABORTED)
    p.flush(30)
    p.abort_transaction(30)


@pytest.fixture
def one_partition(kafka_bootstrap):
    t = Topics(kafka_bootstrap, partitions=1)
    t.create()
    data, _ = _feed()
    lines = data.splitlines()
    produce(t.bootstrap, t.input, [(None, v) for v in lines[:10]])
    _abort_one(t.bootstrap, t.input)  # in the middle: the offsets after it skip its record and marker
    produce(t.bootstrap, t.input, [(None, v) for v in lines[10:]])
    return t, data, lines


def test_a_topic_replays_as_its_lines_do(one_partition) -> None:
    t, data, lines = one_partition
    cur, cand = _cfg(t, 0.45), _cfg(t, 0.7)
    src = read_recent(cur, t.input, Since("earliest"), limit=1000)
    assert src.values == lines  # every committed record once, in order; not the aborted one
    assert src.names[0] == f"{t.input}:0:0" and int(src.names[-1].rsplit(":", 1)[1]) > len(lines) - 1
    from_topic = Replayer(src, now_ms=0).compare(cur, cand)
    from_file = Replayer(ReplayInput.from_lines(data), now_ms=0).compare(cur, cand)
    assert from_topic.counts() == from_file.counts() == {DUPLICATE_TO_UNIQUE: 8, DUPLICATE_CHANGED: 2}
    assert [f.id for f in from_topic.flips] == [f.id for f in from_file.flips]
    assert committed_offsets(t.bootstrap, f"group-{t.run_id}", t.input) == 0  # the replay commits nothing


def test_since_and_limit_choose_the_records(one_partition) -> None:
    t, _, lines = one_partition
    cfg = _cfg(t, 0.45)
    last = read_recent(cfg, t.input, None, limit=5)  # the most recent
    assert last.values == lines[-5:]
    first = read_recent(cfg, t.input, Since("offset", 3), limit=4)
    assert first.values == lines[3:7] and first.names[0] == f"{t.input}:0:3"
    assert read_recent(cfg, t.input, Since("time", 0), limit=1000).values == lines


def test_several_partitions_are_merged_by_time(topics) -> None:
    t = topics  # 3 partitions
    values = [orjson.dumps({"id": f"r{k}", "text": f"story number {k} about the markets and the weather today"}) for k in range(30)]
    produce(t.bootstrap, t.input, [(str(k).encode(), v) for k, v in enumerate(values)])
    src = read_recent(_cfg(t, 0.45), t.input, Since("earliest"), limit=1000)
    assert sorted(src.values) == sorted(values)
    assert len({n.split(":")[1] for n in src.names}) > 1  # the keys spread the records over partitions
    assert list(src.times) == sorted(src.times)


def test_the_command_replays_a_topic(one_partition, monkeypatch) -> None:
    from click.testing import CliRunner

    from streamdedup._kernels import cache
    from streamdedup.cli import main

    monkeypatch.setattr(cache, "missing_kernels", lambda names=cache.PIPELINE_KERNELS: [])
    t, _, lines = one_partition
    result = CliRunner().invoke(main, ["tune", "--replay", t.input, "--bootstrap-servers", t.bootstrap, "--since", "earliest",
                                       "--set", "verify.jaccard_threshold=0.7", "--json"],
                                env={"STREAMDEDUP_VERIFY__JACCARD_THRESHOLD": "0.45", "STREAMDEDUP_VERIFY__REVISIONS": "off"},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert report["records"] == len(lines)
    assert report["flips"][DUPLICATE_TO_UNIQUE] == 8 and report["flips"][DUPLICATE_CHANGED] == 2
    assert report["flipped"][0]["name"].startswith(f"{t.input}:0:")


def test_a_missing_topic_is_named(kafka_bootstrap) -> None:
    cfg = with_settings(load_config(environ={}), [f"kafka.bootstrap_servers={kafka_bootstrap}"])
    with pytest.raises(ReplayReadError, match="topic 'no-such-topic-for-replay' cannot be replayed"):
        read_recent(cfg, "no-such-topic-for-replay", None, limit=10, timeout=10)
