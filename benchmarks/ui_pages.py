"""How long the web inspector's pages take with ~200k records in the topics (issue 12: < 1 s).

Fills fresh topics on a broker with pre-tagged records, as the processor would have left them:
``--records`` input records (Reuters stories, three partitions), of which every fifth is a
copy of an earlier story (two words replaced, a tail appended) written to the duplicates topic
with the engine's headers (``dedup.original`` naming the original's input position) and the
rest to the unique topic. Then serves ``streamdedup ui``'s app over them and times each page:
server side (the ``Server-Timing`` header: reading the topics, rendering the template) and the
whole HTTP request; medians of ``--repeat`` requests, each pair page a different duplicate.

    python benchmarks/ui_pages.py --bootstrap 127.0.0.1:9092 [--records 200000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from streamdedup import load_config  # noqa: E402
from streamdedup.bench.corpus import load_reuters  # noqa: E402
from streamdedup.pipeline.tags import UNIQUE_HEADERS, DuplicateTags, duplicate_headers  # noqa: E402

PARTITIONS = 3
COPY_EVERY = 5


def _text(stories: list[str], k: int) -> str:
    return f"{stories[k % len(stories)]} (item {k})"


def fill(bootstrap: str, n: int, run: str) -> dict[str, str]:
    """Topics holding ``n`` input records and their decisions; returns the topic names."""
    names = {"input": f"uib-in-{run}", "unique": f"uib-unique-{run}", "duplicate": f"uib-dups-{run}",
             "dead_letter": f"uib-dead-{run}"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in names.values()]).values():
        fut.result(60)
    stories = [s.body for s in load_reuters() if len(s.body) > 300]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20,
                         "compression.type": "lz4", "queue.buffering.max.messages": 200_000})
    rng = random.Random(7)
    next_offset = [0] * PARTITIONS
    where: dict[int, str] = {}  # record -> its input position (originals only)

    def send(topic: str, p: int, key: bytes, value: bytes, headers=None) -> None:
        while True:
            try:
                producer.produce(topic, value, key, partition=p, headers=headers)
                return
            except BufferError:
                producer.poll(0.05)

    t0 = time.perf_counter()
    for k in range(n):
        p = k % PARTITIONS
        if k % COPY_EVERY == COPY_EVERY - 1 and k > 100:
            j = rng.randrange(max(0, k - 20_000), k - 1)
            j -= (j % COPY_EVERY == COPY_EVERY - 1)  # an original, not a copy
            words = _text(stories, j).split()
            at = rng.randrange(0, max(1, len(words) - 2))
            words[at:at + 2] = ["REPLACED", "WORDS"]
            value = orjson.dumps({"id": f"d{k}", "text": " ".join(words) + " and an appended tail"})
            tags = DuplicateTags(f"d{j}", "near_duplicate", round(rng.uniform(0.6, 0.99), 4),
                                 round(rng.uniform(0.7, 0.99), 4), f"d{j}", "bench", where[j], where[j])
            send(names["duplicate"], p, f"d{k}".encode(), value, duplicate_headers(tags))
        else:
            value = orjson.dumps({"id": f"d{k}", "text": _text(stories, k)})
            where[k] = f"{names['input']}:{p}:{next_offset[p]}"
            send(names["unique"], p, f"d{k}".encode(), value, UNIQUE_HEADERS)
        send(names["input"], p, f"d{k}".encode(), value)
        next_offset[p] += 1
        if k % 10_000 == 0:
            producer.poll(0)
    producer.flush(120)
    print(f"filled {n:,} input records ({n // COPY_EVERY:,} duplicates) in {time.perf_counter() - t0:.1f} s", flush=True)
    return names


def _forget(ins) -> None:
    """Drop the overview's kept figures: the next overview request reads its samples again."""
    ins._overview = None


def _get(url: str) -> tuple[float, float, float, int]:
    """(whole request s, server read ms, server render ms, bytes)."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
        if "/pair?" in url and b'class="deleted"' not in body:
            raise SystemExit(f"{url}: no diff on the pair page (original not fetched?)")
        timing = dict(part.strip().split(";dur=") for part in r.headers.get("Server-Timing", "").split(",") if ";dur=" in part)
    return time.perf_counter() - t0, float(timing.get("read", "nan")), float(timing.get("render", "nan")), len(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--topics-run", default=None, help="reuse the topics of an earlier run (its run id)")
    args = ap.parse_args()

    run = args.topics_run or uuid.uuid4().hex[:8]
    if args.topics_run is None:
        names = fill(args.bootstrap, args.records, run)
    else:
        names = {"input": f"uib-in-{run}", "unique": f"uib-unique-{run}", "duplicate": f"uib-dups-{run}",
                 "dead_letter": f"uib-dead-{run}"}
    print(f"topics run id {run}")
    env = {"STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS": args.bootstrap, "STREAMDEDUP_KAFKA__INPUT_TOPICS": f"[{names['input']}]",
           "STREAMDEDUP_KAFKA__UNIQUE_TOPIC": names["unique"], "STREAMDEDUP_KAFKA__DUPLICATES_TOPIC": names["duplicate"],
           "STREAMDEDUP_KAFKA__DEAD_LETTER_TOPIC": names["dead_letter"]}
    cfg = load_config(environ=env)

    from streamdedup.tools.inspection.kafka_source import KafkaDuplicates
    from streamdedup.warmup.fill import fill as fill_kernels
    from streamdedup.tools.ui.app import Inspector
    from streamdedup.tools.ui.whatif_form import WhatIfInput
    from tests.browser.harness import serve

    fill_kernels(cfg, ("fingerprint", "explain"))
    source = KafkaDuplicates(cfg)
    n_dups = args.records // COPY_EVERY
    rng = random.Random(3)
    pages = {
        # the overview keeps its figures while the outputs do not grow: dropping them makes
        # every request read its samples again
        "overview (10,000 of each output read)": lambda i: (_forget(ins), "/?window=10000")[1],
        "overview (5,000 of each output read)": lambda i: (_forget(ins), "/?window=5000")[1],
        "list (newest)": lambda i: "/duplicates",
        "list (older page, cursor)": lambda i: f"/duplicates?before=0:{30_000 + 97 * i},1:{30_000 + 89 * i},2:{30_000 + 83 * i}",
        "list (relation filter)": lambda i: "/duplicates?relation=near_duplicate&min=0.9",
        "search by id (found)": lambda i: f"/duplicates?id=d{args.records - 1 - 5 * (i + 1) * 7}",
        "search by id (absent: --scan records read)": lambda i: "/duplicates?id=no-such-id",
        "pair": lambda i: f"/pair?p={i % PARTITIONS}&o={rng.randrange(n_dups // PARTITIONS)}",
        "clusters (5,000 window)": lambda i: "/clusters",
        "clusters (10,000 window)": lambda i: "/clusters?window=10000",
        "what-if (2,000 records replayed)": lambda i: f"/whatif?settings=verify.jaccard_threshold%3D0.7&limit=2000&run=1&target={names['input']}",
    }
    try:
        ins = Inspector(cfg, source, "bench", WhatIfInput(None, (names["input"],)))
        with serve(ins) as site:
            first = _get(site + "/duplicates")  # reads the newest 2,000 duplicates for the relation counts
            print(f"first list page (relation counts read): {first[0] * 1000:.0f} ms")
            first = _get(site + "/")
            print(f"first overview (10,000 of each output read): {first[0] * 1000:.0f} ms")
            print(f"{'page':44s} {'whole request':>14s} {'server read':>12s} {'render':>8s} {'max':>8s}  KB")
            for name, url in pages.items():
                got = [_get(site + url(i)) for i in range(args.repeat)]
                whole = statistics.median(g[0] for g in got)
                print(f"{name:44s} {whole * 1000:11.0f} ms {statistics.median(g[1] for g in got):9.0f} ms "
                      f"{statistics.median(g[2] for g in got):5.1f} ms {max(g[0] for g in got) * 1000:5.0f} ms "
                      f"{statistics.median(g[3] for g in got) / 1024:4.0f}", flush=True)
    finally:
        source.close()


if __name__ == "__main__":
    main()
