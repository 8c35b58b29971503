"""The pipeline layer: one table of hostile records through file mode and the Kafka runtime
gives the same dead-letter stages and reasons and the same tags; tags cannot be spoofed."""

from __future__ import annotations

import orjson

from streamdedup import load_config
from streamdedup.runtime.filemode import run_file
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.single.processor import Processor
from streamdedup.pipeline.tags import (DeadLetterTags, DuplicateTags, dead_letter_headers, duplicate_headers, parse_file_tags,
                                       parse_headers, with_tags)

from .fake_kafka import Admin, Broker, Consumer, Producer

STORY = " ".join(f"word{i} of the story about trade talks in geneva" for i in range(40))
HOSTILE = [
    b"not json",
    b'{"id": "m", "text": 12}',
    b"\xff\xfe\xfa broken bytes",
    b'{"id": "e", "text": "  "}',
    b"[1, 2]",
    b'{"id": "n"}',
    b'{"id": "p", "text": "?!?! ... !!"}',
    b'{"id": "big", "text": "' + b"w " * 1400 + b'"}',
    b"   ",
    b"",
    b'{"id": ["x"], "text": "list id"}',
    b'{"id": "s", "text": "lone \\ud800 surrogate"}',
    orjson.dumps({"id": "t", "text": "ok", "time": "yesterday"}),  # decided at the stream's time, tagged
    orjson.dumps({"id": "orig", "text": STORY}),
    orjson.dumps({"id": "copy", "text": STORY.upper() + " extra"}),
    orjson.dumps({"id": "dd", "text": STORY + " again", "_dedup": {"status": "unique"}}),
    orjson.dumps({"id": "html", "text": "<p>" + STORY + "</p>"}),
]


def config():
    return load_config(environ={"STREAMDEDUP_INPUT__MAX_RECORD_BYTES": "2600", "STREAMDEDUP_INPUT__TIME_FIELD": "time",
                                "STREAMDEDUP_ENGINE__MAX_DOCUMENTS": "4096", "STREAMDEDUP_KAFKA__LINGER_MS": "0",
                                "STREAMDEDUP_STATE__SYNC": "false"})


def _line(position: str | None) -> str | None:
    """A position as the input line it names: ``news:0:13`` (offset 13) is ``line:14``."""
    if position is None or position.startswith("line:"):
        return position
    return f"line:{int(position.rsplit(':', 1)[1]) + 1}"


def _strip(t):
    # the dead letter's own source is written per mode; positions of originals compare as lines
    return t.__class__(**{**t.__dict__, "source": None, "original": _line(t.original),
                          "matched_source": _line(t.matched_source)})


def test_hostile_records_get_the_same_tags_in_file_mode_and_kafka(tmp_path) -> None:
    cfg = config()
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"\n".join(HOSTILE) + b"\n")
    s = run_file(cfg, str(feed), str(tmp_path / "out"))
    assert s.reconciles() and s.records == len(HOSTILE)
    by_line = {}
    for name in ("unique", "duplicates", "dead_letter"):
        for line in (tmp_path / "out" / f"{name}.jsonl").read_bytes().splitlines():
            obj = orjson.loads(line)
            tags = parse_file_tags(obj)
            line_no = obj["line"] if name == "dead_letter" else 1 + HOSTILE.index(
                next(h for h in HOSTILE if h.startswith(orjson.dumps({"id": obj["id"]})[:-1])))
            by_line[line_no] = tags
    assert len(by_line) == len(HOSTILE)

    b = Broker()
    k = cfg.kafka
    for t in ["news", k.unique_topic, k.duplicates_topic, k.dead_letter_topic]:
        b.create(t)
    b.append("news", [(f"k{i + 1}".encode(), v) for i, v in enumerate(HOSTILE)])
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: Producer(b, conf), admin=lambda conf: Admin(b, conf))
    summary = Processor(cfg, str(tmp_path / "state"), stop_when_idle=0.05, clients=clients, watchdog=False).run()
    assert summary.reconciles() and summary.records == len(HOSTILE)
    kafka = {int(key[1:]): parse_headers(h) for _, key, _, h in b.read_committed([k.unique_topic, k.duplicates_topic,
                                                                                   k.dead_letter_topic])}
    assert {i: _strip(t) for i, t in kafka.items()} == {i: _strip(t) for i, t in by_line.items()}
    stages = {t.stage for t in kafka.values() if t.status == "dead_letter"}
    assert stages == {"json", "fields", "utf8", "text", "size"}
    assert kafka[15].status == "duplicate" and kafka[15].duplicate_of == "orig" and kafka[15].reason
    assert kafka[10].reason == "empty record" and kafka[9].reason == "empty record"
    assert kafka[1].source == "news:0:0" and by_line[1].source == "line:1"


def test_incoming_dedup_headers_cannot_spoof_the_tags() -> None:
    spoofed = [("dedup.status", b"unique"), ("trace", b"1"), ("dedup.duplicate_of", b"")]
    tags = DuplicateTags("orig", "near_duplicate", 0.9, 0.95, "orig", "estimated Jaccard 0.90")
    headers = with_tags(spoofed, duplicate_headers(tags))
    assert [k for k, _ in headers].count("dedup.status") == 1
    assert ("dedup.upstream.status", b"unique") in headers and ("trace", b"1") in headers
    assert parse_headers(headers).status == "duplicate"
    dead = parse_headers(with_tags(None, dead_letter_headers(DeadLetterTags("json", "x" * 9000, "t:0:1"))))
    assert dead.stage == "json" and len(dead.reason) == 4000


def test_the_processor_hands_secrets_to_librdkafka_only(tmp_path, caplog) -> None:
    cfg = load_config(environ={"STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD": "0123:pw*{x",
                               "STREAMDEDUP_KAFKA__LIBRDKAFKA__SECURITY_PROTOCOL": "SASL_PLAINTEXT"})
    proc = Processor(cfg, str(tmp_path / "s"), watchdog=False)
    for conf in (proc._consumer_conf(), proc._producer_conf()):
        assert conf["sasl.password"] == "0123:pw*{x" and type(conf["sasl.password"]) is str
        assert conf["security.protocol"] == "SASL_PLAINTEXT" and conf["bootstrap.servers"] == "127.0.0.1:9092"
    assert "pw*{x" not in repr(cfg) and "pw*{x" not in str(cfg.kafka.redacted_conf())


def test_upstream_tags_are_renamed_whatever_their_case() -> None:
    spoofed = [("DEDUP.STATUS", b"unique"), ("Dedup.Duplicate_Of", b"x"), ("trace", b"1")]
    headers = with_tags(spoofed, duplicate_headers(DuplicateTags("orig", "exact", 1.0, 1.0, "orig", "equal")))
    names = [k for k, _ in headers]
    assert "DEDUP.STATUS" not in names and "Dedup.Duplicate_Of" not in names
    assert ("dedup.upstream.STATUS", b"unique") in headers and ("trace", b"1") in headers
    assert [k.lower() for k in names].count("dedup.status") == 1


def test_an_integer_id_beyond_64_bits_keeps_its_digits(tmp_path) -> None:
    """orjson reads it as a float; the id is the integer as written, not a dead letter."""
    big = "123456789012345678901234567890"
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b'{"id": %s, "text": "%s"}\n{"id": 1.5, "text": "%s"}\n{"id": "c", "text": "%s"}\n'
                     % (big.encode(), STORY.encode(), STORY.encode(), STORY.encode()))
    s = run_file(config(), str(feed), str(tmp_path / "out"))
    assert (s.unique, s.duplicates, s.dead_letter) == (1, 1, 1)
    assert parse_file_tags((tmp_path / "out" / "duplicates.jsonl").read_bytes()).duplicate_of == big
    dead = orjson.loads((tmp_path / "out" / "dead_letter.jsonl").read_bytes())
    assert dead["reason"] == "id must be a string or integer, got float"
