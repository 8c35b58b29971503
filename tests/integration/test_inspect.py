"""``streamdedup inspect`` against the real broker: duplicates with their originals and diffs."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.unit.test_engine import story

from .kafka_helpers import REPO, Topics, consume_all, produce, run_processor, stop_processors


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


def _feed(n: int = 9) -> tuple[list[tuple[bytes, bytes]], dict[str, str]]:
    """Stories, and after every third a copy with two words misspelt (a copy, not a revision) and
    two appended. A copy's key is its story's, so both land in one partition in order: the story
    is the original."""
    records, texts = [], {}
    for k in range(n):
        text = story(700 + k, 220)
        texts[f"s{k}"] = text
        records.append((f"s{k}".encode(), orjson.dumps({"id": f"s{k}", "text": text})))
        if k % 3 == 0:
            words = text.split()
            words[30:32] = misspelt(words[30:32])
            copy = " ".join(words) + " appended tail"
            texts[f"c{k}"] = copy
            records.append((f"s{k}".encode(), orjson.dumps({"id": f"c{k}", "text": copy})))
    return records, texts


def misspelt(words: list[str]) -> list[str]:
    return [w + "q" for w in words]


def _inspect(topics: Topics, *args: str) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "streamdedup.cli", "inspect", "--json", *args], env=topics.env(),
                          cwd=str(REPO), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return [orjson.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_inspect_shows_each_duplicate_with_its_original_and_diff(topics, tmp_path) -> None:
    records, texts = _feed()
    produce(topics.bootstrap, topics.input, records)
    proc = run_processor(topics.env(), str(tmp_path / "state"))
    assert proc.wait(300) == 0
    assert len(consume_all(topics.bootstrap, list(topics.outputs.values()), len(records))) == len(records)

    shown = _inspect(topics, "--since", "0", "--limit", "100")
    assert sorted(p["copy"]["id"] for p in shown) == ["c0", "c3", "c6"]
    for p in shown:
        k = p["copy"]["id"][1:]
        assert p["original"] is not None, p["missing"]
        assert p["original"]["id"] == f"s{k}" and p["original"]["text"] == texts[f"s{k}"]
        assert p["copy"]["text"] == texts[f"c{k}"]
        assert p["copy"]["position"].startswith(topics.outputs["duplicate"] + ":")
        deleted = " ".join(s["text"] for s in p["diff"] if s["op"] == "delete")
        inserted = " ".join(s["text"] for s in p["diff"] if s["op"] == "insert")
        assert " ".join(misspelt(texts[f"s{k}"].split()[30:32])) in inserted and "appended tail" in inserted
        assert deleted.split() == texts[f"s{k}"].split()[30:32]
        assert p["tags"]["relation"] == "near_duplicate" and p["why"]["is_duplicate"]
        assert p["why"]["shared_bands"] >= 1

    # filters and the latest-N default read the same topic
    assert [p["copy"]["id"] for p in _inspect(topics, "--id", "s3")] == ["c3"]
    assert len(_inspect(topics, "--limit", "2")) == 2
    assert _inspect(topics, "--relation", "exact") == []
    roots = _inspect(topics, "--clusters")
    assert sorted((r["root"], r["copies"]) for r in roots) == [("s0", 1), ("s3", 1), ("s6", 1)]


def test_originals_are_fetched_from_the_input_position_and_checked(topics) -> None:
    """A duplicate whose tags name its original's input position (``dedup.original``): the
    original comes from the input topic at that offset, and a position holding another id is
    reported, not shown as the original."""
    records, texts = _feed(1)
    produce(topics.bootstrap, topics.input, records[:1])
    where = _first_position(topics)
    base = {"dedup.status": b"duplicate", "dedup.relation": b"near_duplicate", "dedup.similarity": b"0.9000",
            "dedup.matched": b"s0", "dedup.reason": b"test"}
    good = [*base.items(), ("dedup.duplicate_of", b"s0"), ("dedup.original", where.encode())]
    wrong = [*base.items(), ("dedup.duplicate_of", b"other"), ("dedup.original", where.encode())]
    _produce_tagged(topics, records[1][1], [good, wrong])
    shown = _inspect(topics, "--since", "0")
    assert len(shown) == 2
    ok = next(p for p in shown if p["tags"]["duplicate_of"] == "s0")
    assert ok["original"]["position"] == where and ok["original"]["text"] == texts["s0"]
    bad = next(p for p in shown if p["tags"]["duplicate_of"] == "other")
    assert bad["original"] is None and any("holds id s0, not other" in m for m in bad["missing"])


def _produce_tagged(topics: Topics, value: bytes, headers: list[list]) -> None:
    p = Producer({"bootstrap.servers": topics.bootstrap, "enable.idempotence": True})
    for h in headers:
        p.produce(topics.outputs["duplicate"], value=value, key=b"c0", headers=h)
    assert p.flush(60) == 0


def _first_position(topics: Topics) -> str:
    c = Consumer({"bootstrap.servers": topics.bootstrap, "group.id": "inspect-test"})
    try:
        for p in range(topics.partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topics.input, p), timeout=10)
            if hi > lo:
                return f"{topics.input}:{p}:{lo}"
    finally:
        c.close()
    raise AssertionError("the input record is in no partition")


def test_totals_count_committed_records_not_offsets(topics) -> None:
    """Each transaction leaves a commit marker, an aborted one its records: the counts are the
    records a read_committed reader sees, exact, and follow what is added later."""
    from confluent_kafka import Producer

    from streamdedup import load_config
    from streamdedup.tools.inspection.kafka_source import KafkaDuplicates

    tx = Producer({"bootstrap.servers": topics.bootstrap, "transactional.id": f"count-{topics.run_id}"})
    tx.init_transactions(30)

    def transaction(topic: str, n: int, commit: bool = True) -> None:
        tx.begin_transaction()
        for k in range(n):
            tx.produce(topic, value=b'{"id": "x%d", "text": "t"}' % k, partition=k % topics.partitions)
        tx.commit_transaction(30) if commit else tx.abort_transaction(30)

    for _ in range(5):  # five one-record transactions: ten offsets
        transaction(topics.outputs["dead_letter"], 1)
    transaction(topics.outputs["unique"], 7)
    transaction(topics.outputs["unique"], 4, commit=False)
    source = KafkaDuplicates(load_config(environ=topics.env()))
    try:
        assert source.totals() == {"unique": 7, "duplicate": 0, "dead_letter": 5}
        assert source.totals_exact
        transaction(topics.outputs["unique"], 3)
        transaction(topics.outputs["dead_letter"], 2)
        assert source.totals() == {"unique": 10, "duplicate": 0, "dead_letter": 7}
        assert source.totals_exact
    finally:
        source.close()
    # out of time before reading: the rest counted as offsets (markers and aborted included), said
    from streamdedup.tools.inspection.kafka_counts import RecordCounter

    source = KafkaDuplicates(load_config(environ=topics.env()))
    try:
        counted = RecordCounter(source.consumer, budget_s=0.0).count(topics.outputs["dead_letter"], list(range(topics.partitions)))
        assert (counted.records, counted.exact) == (14, False)
    finally:
        source.close()


def test_hostile_tags_are_shown_as_such_by_inspect_and_the_web_pages(topics) -> None:
    """A tag that is not a number, an original in a partition or topic that does not exist, an
    offset beyond 64 bits: ``inspect`` and the list and clusters pages show the rest (the
    malformed tags named, the original not found), in the terminal too, with no exit 1 or 500."""
    from streamdedup import load_config
    from streamdedup.tools.inspection.kafka_source import KafkaDuplicates
    from streamdedup.tools.ui.app import Inspector
    from streamdedup.tools.ui.whatif_form import WhatIfInput
    from tests.browser.harness import serve

    records, _ = _feed(1)
    base = {"dedup.status": b"duplicate", "dedup.relation": b"near_duplicate", "dedup.duplicate_of": b"s0",
            "dedup.matched": b"s0", "dedup.reason": b"test"}
    hostile = [
        [*base.items(), ("dedup.ld_similarity", b"abc"), ("dedup.similarity", b"nan")],
        [*base.items(), ("dedup.similarity", b"0.9"), ("dedup.original", f"{topics.input}:99:0".encode())],
        [*base.items(), ("dedup.similarity", b"0.9"), ("dedup.original", b"no-such-topic:0:5")],
        [*base.items(), ("dedup.similarity", b"0.9"), ("dedup.original", f"{topics.input}:0:99999999999999999999".encode())],
    ]
    _produce_tagged(topics, records[1][1], hostile)
    shown = _inspect(topics, "--since", "0")
    assert len(shown) == 4
    assert sorted(p["tags"].get("malformed", []) for p in shown)[-1] == ["similarity", "ld_similarity"]
    assert sum(any("original not found" in m for m in p["missing"]) for p in shown) == 3
    terminal = subprocess.run([sys.executable, "-m", "streamdedup.cli", "inspect", "--since", "0"], env=topics.env(),
                              cwd=str(REPO), capture_output=True, timeout=300)
    assert terminal.returncode == 0, terminal.stderr.decode()[-3000:]
    assert b"malformed" in terminal.stdout

    cfg = load_config(environ=topics.env())
    source = KafkaDuplicates(cfg)
    try:
        with serve(Inspector(cfg, source, "kafka", WhatIfInput(None, (topics.input,)))) as site:
            for page in ("/", "/duplicates", "/clusters", "/pair?p=0&o=0"):
                with urllib.request.urlopen(site + page, timeout=120) as resp:
                    assert resp.status == 200, page
    finally:
        source.close()
