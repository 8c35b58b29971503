"""``verify.revisions: topic``: revisions on a topic (file mode: a file) of their own.

Routing, the setting's checks, file mode's ``revisions.jsonl``, and the Kafka processor
in-process against ``fake_kafka``: every record in exactly one output, the revisions on their
topic with their tags, counts that reconcile, the same after a crash, and a revision too large
for its topic re-routed to dead letter; the inspector's totals count the revisions output (file
mode, and the Kafka source over ``fake_kafka``). (The same on the real broker:
tests/integration/test_processor.py and tests/integration/test_inspect.py.)
"""

from __future__ import annotations

import time
from concurrent.futures import Future

import orjson
import pytest
from confluent_kafka import KafkaError

from streamdedup import ConfigError, load_config
from streamdedup.config import Config, VerifyConfig
from streamdedup.pipeline import DESTINATIONS, REVISION_DEST, output_topics
from streamdedup.pipeline.route import kafka_output, revision_dest
from streamdedup.pipeline.tags import DuplicateTags, parse_file_tags, parse_headers
from streamdedup.runtime.filemode import run_file
from streamdedup.runtime.kafka.admin import create_topics
from streamdedup.runtime.kafka.startup import StartupError, topic_settings

from .fake_kafka import Admin, Consumer, Crash, Msg
from .test_kafka_delivery import TOPICS, broker, config, feed, run, sized, with_big
from .test_revision_routing import CORRECTION, TYPO_COPY, _feed

REVISIONS_TOPIC = "out.revisions"
ON_TOPIC = {"STREAMDEDUP_VERIFY__REVISIONS": "topic", "STREAMDEDUP_KAFKA__REVISIONS_TOPIC": REVISIONS_TOPIC}


def test_a_revision_goes_to_the_revisions_destination_only_under_topic() -> None:
    assert [revision_dest(VerifyConfig(revisions=r)) for r in ("unique", "duplicates", "topic")] == \
        ["unique", "duplicate", REVISION_DEST]
    revision = DuplicateTags("a", "near_duplicate", 0.9, None, "a", "r", status="revision", changed=("400 -> 600",))
    copy = DuplicateTags("a", "near_duplicate", 0.9, None, "a", "r")
    assert kafka_output(revision, revisions=REVISION_DEST)[0] == REVISION_DEST
    assert kafka_output(copy, revisions=REVISION_DEST)[0] == "duplicate"
    assert kafka_output(None, revisions=REVISION_DEST)[0] == "unique"
    assert REVISION_DEST in DESTINATIONS


def test_the_revisions_topic_is_an_output_only_under_topic() -> None:
    on = load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"})
    assert on.kafka.revisions_topic == "news.revisions"  # beside news.unique, news.duplicates, news.dead-letter
    assert output_topics(on)[REVISION_DEST] == "news.revisions"
    assert REVISION_DEST not in output_topics(Config())
    assert topic_settings(on.kafka, revisions=True)["news.revisions"] == "kafka.revisions_topic"
    assert "news.revisions" not in topic_settings(on.kafka)


@pytest.mark.parametrize("other", ["UNIQUE_TOPIC", "DUPLICATES_TOPIC", "DEAD_LETTER_TOPIC", "INPUT_TOPICS",
                                   "STAGED__DECISIONS_TOPIC"])
def test_a_revisions_topic_shared_with_another_topic_is_refused(other) -> None:
    env = {"STREAMDEDUP_VERIFY__REVISIONS": "topic", "STREAMDEDUP_KAFKA__REVISIONS_TOPIC": "shared",
           f"STREAMDEDUP_KAFKA__{other}": "[shared]" if other == "INPUT_TOPICS" else "shared"}
    name = other.lower().replace("__", "\\.")
    with pytest.raises(ConfigError, match=rf"kafka\.revisions_topic 'shared' is also kafka\.{name}"):
        load_config(environ=env)
    # not a topic of the processor unless revisions go there
    assert load_config(environ={**env, "STREAMDEDUP_VERIFY__REVISIONS": "duplicates"}).kafka.revisions_topic == "shared"


class _RecordingAdmin:
    def __init__(self) -> None:
        self.made: list[str] = []

    def create_topics(self, topics, request_timeout=None):
        out = {}
        for t in topics:
            self.made.append(t.topic)
            out[t.topic] = Future()
            out[t.topic].set_result(None)
        return out


def test_topics_create_makes_the_revisions_topic_when_it_is_used() -> None:
    k = load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"}).kafka
    admin = _RecordingAdmin()
    assert create_topics(k, admin=admin, revisions=True)["news.revisions"] == "created"
    assert admin.made == ["news", "news.unique", "news.duplicates", "news.dead-letter", "news.revisions"]
    admin = _RecordingAdmin()
    create_topics(k, admin=admin)
    assert "news.revisions" not in admin.made


# -- file mode --------------------------------------------------------------------------------


def _lines(path) -> dict[str, object]:
    return {(obj := orjson.loads(line))["id"]: parse_file_tags(obj) for line in path.read_bytes().splitlines()}


def test_file_mode_writes_revisions_to_revisions_jsonl(tmp_path) -> None:
    out = tmp_path / "out"
    summary = run_file(load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"}), str(_feed(tmp_path)), str(out))
    revisions, unique, dups = _lines(out / "revisions.jsonl"), _lines(out / "unique.jsonl"), _lines(out / "duplicates.jsonl")
    assert list(revisions) == ["fix"] and list(unique) == ["story"] and list(dups) == ["copy"]
    tags = revisions["fix"]
    assert tags.status == "revision" and tags.duplicate_of == "story" and tags.matched in ("story", "copy")
    assert "400 -> 600" in tags.changed and "corrected" in tags.changed
    assert dups["copy"].status == "duplicate" and not dups["copy"].changed
    assert (summary.unique, summary.duplicates, summary.revisions_out, summary.dead_letter) == (1, 1, 1, 0)
    assert summary.revisions == 1 and summary.reconciles() and summary.records == 3
    assert sum(summary.relations.values()) == 1  # the duplicates file's lines by relation: not the revision


def test_file_mode_with_a_slow_line_and_a_dead_letter_reconciles(tmp_path) -> None:
    """A revision decoded by the Python path (an object with more fields) and a dead letter:
    every line in exactly one file."""
    from tests.unit.test_revisions import SOURCE

    lines = [orjson.dumps({"id": "story", "text": SOURCE}), orjson.dumps({"id": "copy", "text": TYPO_COPY}),
             b"not json", orjson.dumps({"id": "fix", "text": CORRECTION, "extra": {"a": [1, "\u00e9"]}})]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    summary = run_file(load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"}), str(path), str(out))
    rev = orjson.loads((out / "revisions.jsonl").read_bytes())
    assert rev["id"] == "fix" and rev["extra"] == {"a": [1, "\u00e9"]} and rev["_dedup"]["status"] == "revision"
    assert summary.reconciles() and (summary.revisions_out, summary.dead_letter) == (1, 1)


def test_file_mode_makes_no_revisions_file_otherwise(tmp_path) -> None:
    run_file(load_config(environ={}), str(_feed(tmp_path)), str(tmp_path / "out"))
    assert not (tmp_path / "out" / "revisions.jsonl").exists()


def test_run_prints_the_revisions_file(tmp_path) -> None:
    from click.testing import CliRunner

    from streamdedup.cli import main

    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", "--input", str(_feed(tmp_path)), "--output-dir", str(out)],
                                env={"STREAMDEDUP_VERIFY__REVISIONS": "topic"})
    assert result.exit_code == 0, result.output
    assert "unique 1, duplicates 1, revisions 1, dead-letter 0" in result.output and "revisions.jsonl" in result.output


# -- the Kafka processor (fake client) -------------------------------------------------------


def _by_topic(b) -> dict[bytes, tuple[str, object]]:
    """key -> (output, tags) of every committed output; asserts none is doubled."""
    names = {**{v: k for k, v in TOPICS.items()}, REVISIONS_TOPIC: REVISION_DEST}
    out = {}
    for topic, key, _, headers in b.read_committed([*TOPICS.values(), REVISIONS_TOPIC]):
        assert key not in out, f"{key!r} emitted twice"
        out[key] = (names[topic], parse_headers(headers))
    return out


def _with_revisions_topic(records):
    b = broker(records)
    b.create(REVISIONS_TOPIC)
    return b


@pytest.fixture(scope="module")
def on_topic_broker(tmp_path_factory):
    """The reference run: its records, summary, outputs, and the broker that holds them."""
    records = feed()
    b = _with_revisions_topic(records)
    s = run(b, str(tmp_path_factory.mktemp("ref") / "state"), **ON_TOPIC)
    got = _by_topic(b)
    return records, s, got, b


@pytest.fixture(scope="module")
def on_topic(on_topic_broker):
    return on_topic_broker[:3]


def test_the_processor_sends_revisions_to_their_topic(on_topic) -> None:
    records, s, got = on_topic
    assert len(got) == len(records) and s.records == len(records) and s.reconciles()
    revisions = {k for k, (out, _) in got.items() if out == REVISION_DEST}
    assert len(revisions) > 5 and all(got[k][1].status == "revision" and got[k][1].changed for k in revisions)
    assert all(t.status != "revision" for out, t in got.values() if out != REVISION_DEST)
    assert all(got[k][1].duplicate_of and got[k][1].matched for k in revisions)
    assert s.revisions_out == s.revisions == len(revisions)
    assert (s.unique, s.duplicates, s.dead_letter) == tuple(sum(out == d for out, _ in got.values())
                                                            for d in ("unique", "duplicate", "dead_letter"))
    assert sum(s.relations.values()) == s.duplicates


def test_the_revisions_topic_is_in_the_transactions(on_topic, tmp_path) -> None:
    """A crash after the state commit, before the transaction commit: the restart re-emits the
    batch from the state, revisions on their topic; nothing lost, nothing doubled."""
    records, _, want = on_topic
    b = _with_revisions_topic(records)
    b.fail("commit_transaction", Crash(), after=5)
    with pytest.raises(Crash):
        run(b, str(tmp_path / "s"), **ON_TOPIC)
    assert len(_by_topic(b)) < len(records)
    again = run(b, str(tmp_path / "s"), **ON_TOPIC)
    assert again.replayed > 0
    got = _by_topic(b)
    assert {k: (out, t.status, t.duplicate_of, t.changed) for k, (out, t) in got.items()} == \
        {k: (out, t.status, t.duplicate_of, t.changed) for k, (out, t) in want.items()}


def test_a_missing_revisions_topic_stops_the_start_naming_the_setting(tmp_path) -> None:
    with pytest.raises(StartupError, match=rf"topic '{REVISIONS_TOPIC}' \(kafka\.revisions_topic\) does not exist"):
        run(broker(feed(50)), str(tmp_path / "s"), **ON_TOPIC)


def test_a_revision_too_large_for_its_topic_goes_to_dead_letter(on_topic, tmp_path) -> None:
    """The revisions topic takes 3,000 bytes: a 4,000-byte story is unique, its correction a
    dead letter of stage output naming the revisions topic; the counts follow."""
    records, _, _ = on_topic
    story = orjson.loads(sized(3, 4_000, 3))
    words = story["text"].split()
    fixed = orjson.dumps({"id": "big-fix", "text": "CORRECTED " + " ".join(words[:50] + ["1987"] + words[50:])})
    b = _with_revisions_topic(with_big(records, {50: sized(3, 4_000, 3), 400: fixed}))
    b.max_message_bytes[REVISIONS_TOPIC] = 3_000
    s = run(b, str(tmp_path / "s"), **ON_TOPIC)
    got = _by_topic(b)
    assert len(got) == len(records) + 2 and s.reconciles() and s.aborted_batches == 0
    assert got[b"b50"][0] == "unique"
    out, t = got[b"b400"]
    assert out == "dead_letter" and t.stage == "output" and f"topic {REVISIONS_TOPIC}" in t.reason
    assert s.revisions_out == sum(o == REVISION_DEST for o, _ in got.values())


# -- the staged worker and the faust agent route decided records ----------------------------


class _Msg:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"k%d" % self._offset

    def value(self) -> bytes:
        return b"v%d" % self._offset

    def headers(self):
        return None


def _decided():
    from streamdedup.pipeline.tags import DeadLetterTags
    from streamdedup.runtime.kafka.decision_record import DecisionRecord

    revision = DuplicateTags("a", "near_duplicate", 0.9, None, "a", "r", status="revision", changed=("400 -> 600",))
    return [DecisionRecord(0), DecisionRecord(1, DuplicateTags("a", "exact", 1.0, None, "a", "r")), DecisionRecord(2, revision),
            DecisionRecord(3, DeadLetterTags("json", "invalid JSON", "in:0:3"))]


def _topic_cfg():
    return load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic", "STREAMDEDUP_KAFKA__INPUT_TOPICS": "[in]"})


def test_the_staged_worker_emits_revisions_to_their_topic() -> None:
    from streamdedup.runtime.staged.worker import Worker

    cfg = _topic_cfg()
    worker = Worker(cfg, watchdog=False)
    sent = []
    worker._transaction = lambda outputs, offsets: sent.extend(outputs) or True
    worker.mapping, worker.input = {("in", 0): 0}, None
    worker.pending.assign(("in", 0), 0)
    for k, rec in enumerate(_decided()):
        worker.pending.add(("in", 0), k, (_Msg(k), time.perf_counter(), None))  # (message, consumed at, time_invalid)
        worker.pending.offer(("in", 0), k, rec, 100 + k)
    assert worker._emit() == 4
    assert [topic for topic, *_ in sent] == ["news.unique", "news.duplicates", "news.revisions", "news.dead-letter"]
    assert dict(sent[2][3])["dedup.status"] == b"revision" and dict(sent[2][3])["dedup.changed"] == b"400 -> 600"
    s = worker.summary
    assert (s.unique, s.duplicates, s.revisions_out, s.dead_letter, s.records) == (1, 1, 1, 1, 4) and s.reconciles()
    assert s.relations == {"exact": 1}
    worker.metrics.close()


def test_the_faust_agent_emits_revisions_to_their_topic() -> None:
    from streamdedup.runtime.faust.agent import FaustStage

    from tests.unit.test_faust_parts import _run  # asyncio.run on a thread of its own (see there)

    stage = FaustStage(_topic_cfg(), app=None)
    sent = []

    class Txns:
        async def commit(self, part, outputs, offset):
            sent.extend(outputs)
            return True

    stage.txns = Txns()
    _run(stage._emit([_Msg(k) for k in range(4)], _decided(), {}))
    assert [topic for topic, *_ in sent] == ["news.unique", "news.duplicates", "news.revisions", "news.dead-letter"]
    assert stage.summary.revisions_out == 1 and stage.summary.records == 4 and stage.reconciles()


def test_the_file_inspector_finds_a_document_on_revisions_jsonl(tmp_path) -> None:
    """A later copy's matched document can be a revision: found by id in revisions.jsonl."""
    from streamdedup.tools.inspection.file_source import FileDuplicates
    from streamdedup.tools.inspection.reader import Wanted

    cfg = load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"})
    run_file(cfg, str(_feed(tmp_path)), str(tmp_path / "out"))
    src = FileDuplicates(tmp_path / "out", cfg)
    try:
        got = src.fetch([Wanted(None, "fix"), Wanted(None, "story"), Wanted(None, "nope")])
        assert got[Wanted(None, "fix")].position == "revisions.jsonl:1" and got[Wanted(None, "fix")].text == CORRECTION
        assert got[Wanted(None, "story")].position == "unique.jsonl:1"
        assert "not in unique.jsonl or duplicates.jsonl or revisions.jsonl" in got[Wanted(None, "nope")]
    finally:
        src.close()


def test_the_overview_lists_revisions_from_their_own_output(tmp_path) -> None:
    from streamdedup.tools.inspection.file_source import FileDuplicates
    from streamdedup.tools.ui.app import Inspector

    cfg = load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"})
    run_file(cfg, str(_feed(tmp_path)), str(tmp_path / "out"))
    src = FileDuplicates(tmp_path / "out", cfg)
    try:
        assert [t.status for _, t in src.recent("revision", 10).records] == ["revision"]
        s = Inspector(cfg, src, "out", None).overview(100)["s"]
        assert s.revisions == 1 and s.newest_revisions[0][0] == "story" and "400 -> 600" in s.newest_revisions[0][1]
    finally:
        src.close()


# -- the inspector's totals count the revisions output -----------------------------------------


def _overall_rate(ins) -> str:
    from streamdedup.tools.ui.app import templates

    ctx = {**ins.overview(100), "label": "out", "page": "overview", "server_ms": 0}
    html = templates().env.get_template("overview.html").render(ctx)
    return html.split('id="overall-rate">', 1)[1].split("<", 1)[0]


def test_the_file_inspector_totals_count_revisions_jsonl(tmp_path) -> None:
    """Under topic, revisions.jsonl is a fourth output: the totals count it, so they add up to
    the input, and the overall duplicate rate is the one the default policy shows."""
    from streamdedup.tools.inspection.file_source import FileDuplicates
    from streamdedup.tools.ui.app import Inspector

    cfg = load_config(environ={"STREAMDEDUP_VERIFY__REVISIONS": "topic"})
    summary = run_file(cfg, str(_feed(tmp_path)), str(tmp_path / "out"))
    src = FileDuplicates(tmp_path / "out", cfg)
    try:
        totals = src.totals()
        assert totals == {"unique": 1, "duplicate": 1, "revision": 1, "dead_letter": 0}
        assert sum(totals.values()) == summary.records
        ins = Inspector(cfg, src, "out", None)
        assert ins.counts()["totals"] == totals and ins.overview(100)["totals"] == totals
        on_topic_rate = _overall_rate(ins)
    finally:
        src.close()
    # revisions on the unique output (the default): no revisions figure, the counts as before
    plain = load_config(environ={})
    run_file(plain, str(_feed(tmp_path)), str(tmp_path / "plain"))
    src = FileDuplicates(tmp_path / "plain", plain)
    try:
        assert src.totals() == {"unique": 2, "duplicate": 1, "dead_letter": 0}
        assert _overall_rate(Inspector(plain, src, "plain", None)) == on_topic_rate == "33.3%"
    finally:
        src.close()


def test_the_totals_tiles_show_the_revisions_output_only_when_it_is_counted() -> None:
    from streamdedup.tools.ui.app import templates

    tiles = templates().env.get_template("_totals.html").module.status_tiles
    four = str(tiles({"unique": 5, "duplicate": 3, "revision": 2, "dead_letter": 1}, True))
    assert [part.split('"', 1)[0] for part in four.split('data-status="')[1:]] == \
        ["unique", "duplicate", "revision", "dead_letter"]
    assert 'data-status="revision">2<' in four
    assert 'data-status="revision"' not in str(tiles({"unique": 7, "duplicate": 3, "dead_letter": 1}, True))


class _InspectorConsumer(Consumer):
    """fake_kafka's consumer as the inspector uses it: topic metadata, and the end of a
    partition as an event (``enable.partition.eof``)."""

    def list_topics(self, topic=None, timeout=-1):
        return Admin(self.b, {}).list_topics(topic, timeout)

    def consume(self, num_messages=1, timeout=-1) -> list:
        return super().consume(num_messages, timeout) or [_Eof(t, p, pos) for (t, p), pos in self.positions.items()]

    def unassign(self) -> None:
        self.positions = {}


class _Eof(Msg):
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        super().__init__(topic, partition, offset, None)

    def error(self):
        return KafkaError(KafkaError._PARTITION_EOF)


def test_the_kafka_inspector_totals_count_the_revisions_topic(on_topic_broker, monkeypatch) -> None:
    """The committed records of every output topic, the revisions topic too under topic: they add
    up to the input; without topic the same three figures as before, and no fourth."""
    from streamdedup.tools.inspection import kafka_source

    records, s, _, b = on_topic_broker
    monkeypatch.setattr(kafka_source, "Consumer", lambda conf: _InspectorConsumer(b, conf))
    source = kafka_source.KafkaDuplicates(config(**ON_TOPIC))
    try:
        totals = source.totals()
        assert totals == {"unique": s.unique, "duplicate": s.duplicates, "dead_letter": s.dead_letter,
                          "revision": s.revisions_out} and source.totals_exact
        assert sum(totals.values()) == len(records) and s.revisions_out > 5
    finally:
        source.close()
    source = kafka_source.KafkaDuplicates(config())
    try:
        assert source.totals() == {"unique": s.unique, "duplicate": s.duplicates, "dead_letter": s.dead_letter}
    finally:
        source.close()
