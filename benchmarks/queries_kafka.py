"""Queries through the real broker: how many a second the single processor answers.

The processor indexes a wire feed, then a burst of text-free query records (half its own
stories, half records of the same feed made with another seed, most of them present too)
goes to the query topic; the figure is queries over the time
from the first query sent to the last answer read, the whole path: produce, the processor's
consume, decode, ``engine.query`` on its decide thread, the answers' produce, and the read.

Run (a broker on ``--bootstrap``; ``scripts/kafka-local start`` gives one)::

    .venv/bin/python benchmarks/queries_kafka.py --bootstrap 127.0.0.1:9092 [--queries 20000] [--without-texts]

``--without-texts``: the processor keeps no text (``state.keep_text: false``), so a borderline
pair is judged on the query's and the story's evidence sketches, read from the state.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager

import orjson
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup import load_config
from streamdedup.bench.feeds import news_records
from streamdedup.pipeline.fingerprint_texts import TextFingerprinter
from streamdedup.runtime.kafka.admin import produce_all


@contextmanager
def processor_with_index(bootstrap: str, stories: list[tuple[bytes, bytes]], **settings: str):
    """A single processor on ``bootstrap`` (settings: ``STREAMDEDUP_*`` environment overrides)
    whose index holds ``stories`` (key, JSON value) before this yields its topics' names; its
    query topic is ``names["q"]``, answered on ``names["a"]``. It stops when idle after."""
    run = uuid.uuid4().hex[:8]
    names = {k: f"{k}-{run}" for k in ("in", "unique", "dups", "dead", "q", "a")}
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client cancels its futures
    for fut in admin.create_topics([NewTopic(t, 1, 1) for t in names.values()]).values():
        fut.result(60)
    env = dict(os.environ, STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS=bootstrap, STREAMDEDUP_KAFKA__INPUT_TOPICS=f"[{names['in']}]",
               STREAMDEDUP_KAFKA__UNIQUE_TOPIC=names["unique"], STREAMDEDUP_KAFKA__DUPLICATES_TOPIC=names["dups"],
               STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC=names["dead"], STREAMDEDUP_KAFKA__GROUP_ID=f"g-{run}",
               STREAMDEDUP_KAFKA__TRANSACTIONAL_ID=f"tx-{run}", STREAMDEDUP_KAFKA__QUERIES__TOPIC=names["q"],
               STREAMDEDUP_KAFKA__QUERIES__REPLY_TOPIC=names["a"], STREAMDEDUP_KAFKA__QUERIES__RATE_PER_CLIENT="1000000",
               STREAMDEDUP_ENGINE__MAX_DOCUMENTS="200000")
    env.update(settings)
    produce_all(bootstrap, names["in"], stories)
    with tempfile.TemporaryDirectory() as state:
        proc = subprocess.Popen([sys.executable, "-m", "streamdedup.cli", "run", "--stop-when-idle", "20", "--state-dir",
                                 state], env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        out = Consumer({"bootstrap.servers": bootstrap, "group.id": f"o-{run}", "auto.offset.reset": "earliest",
                        "isolation.level": "read_committed"})
        out.subscribe([names["unique"], names["dups"], names["dead"]])
        seen = 0
        while seen < len(stories):  # the index is complete before the first query
            seen += sum(m.error() is None for m in out.consume(1000, 1.0))
        out.close()
        try:
            yield names
        finally:
            proc.wait(300)


def ask(bootstrap: str, names: dict[str, str], records: list[bytes]) -> tuple[list[dict], float]:
    """Send the query ``records`` (keyed by their index) and read their answers: the answers in
    the records' order, and the seconds from the first query sent to the last answer read."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{names['a']}", "auto.offset.reset": "earliest"})
    reader.subscribe([names["a"]])
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    t0 = time.perf_counter()
    for k, r in enumerate(records):
        while True:
            try:
                p.produce(names["q"], r, b"%d" % k)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(60)
    got: dict[int, dict] = {}
    while len(got) < len(records):
        for m in reader.consume(1000, 1.0):
            if m.error() is None:
                got[int(m.key())] = orjson.loads(m.value())
    seconds = time.perf_counter() - t0
    reader.close()
    return [got[k] for k in range(len(records))], seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--stories", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--without-texts", action="store_true", help="an index that keeps no text (its evidence sketches)")
    args = ap.parse_args()
    settings = {"STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]"}
    if args.without_texts:
        settings.update(STREAMDEDUP_STATE__KEEP_TEXT="false", STREAMDEDUP_VERIFY__REVISIONS="off")
    stories = news_records(args.stories, seed=5)
    fp = TextFingerprinter(load_config(environ=settings), "asker")
    asked = [v for _, v in stories[: args.queries // 2]] + [v for _, v in news_records(args.queries - args.queries // 2, seed=99)]
    records = fp.records(asked)
    with processor_with_index(args.bootstrap, stories, **settings) as names:
        answers, seconds = ask(args.bootstrap, names, records)
    found = sum(bool(a.get("found")) for a in answers)
    print(f"{len(records):,} queries ({found:,} found) answered in {seconds:.2f} s through the broker: "
          f"{len(records) / seconds:,.0f} queries/s (index of {len(stories):,} stories{' without texts' if args.without_texts else ''}, "
          "one partition each way)")


if __name__ == "__main__":
    main()
