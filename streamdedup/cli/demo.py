"""``streamdedup demo``: the main job on real news.

``--mode file`` (default): builds a news feed from Reuters-21578 (stories in date order, wire
variants of some of them, a few broken records), runs the streaming file mode on it and shows
what went where, with duplicates next to their originals. ``--mode fingerprint``: what each
estimator says about a story and its typical variants, and the verdict under the config.
"""

from __future__ import annotations

import random
import shlex
import shutil
import sys
from pathlib import Path

import click
from rich.table import Table

from streamdedup.bench.edits import scattered
from streamdedup.bench.corpus import load_reuters
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.pipeline.route import output_topics
from streamdedup.pipeline.tags import parse_file_tags, parse_headers
from streamdedup.engine.verify import Fingerprint, compare
from streamdedup.cli._common import config_option, fill_kernel_cache, get_config, make_console


def variants(story: str, other: str, rng: random.Random) -> dict[str, str]:
    paras = [p for p in story.split("\n    ") if p.strip()]
    cut = int(len(story) * 0.6)
    return {
        "resend (HTML, case, spacing)": "<p>" + story.upper().replace("  ", " ").replace("\n", "</p>\n<p>") + "</p>",
        "typos (1% of characters)": scattered(story, 0.01, rng),
        "retitled": "UPDATE 1-" + story,
        "truncated teaser (60%)": story[:cut],
        "update paragraph appended": story + "\n    In a later statement the company added that talks would continue next week.",
        "paragraphs reordered": "\n    ".join(paras[1:] + paras[:1]) if len(paras) > 1 else story,
        "boilerplate added": "(c) Reuters Limited 1987. All rights reserved. Republication prohibited.\n" + story,
        "different story": other,
    }


@click.command()
@config_option
@click.option("--mode", type=click.Choice(["kafka", "file", "fingerprint"]), default="file", show_default=True,
              help="kafka: a broker and the processor; file: the embedded file mode; fingerprint: fingerprints only")
@click.option("--bootstrap-servers", default=None, help="kafka mode: the broker (scripts/kafka-local start prints it)")
@click.option("--stories", type=click.IntRange(1, 20000), default=None, help="stories in the feed (file) or shown (fingerprint)")
@click.option("--output-dir", type=click.Path(file_okay=False), default="out/demo", show_default=True,
              help="where the feed, the outputs and the demo's config file go")
@click.option("--seed", type=int, default=3, show_default=True, help="random seed of the feed's variants and broken records")
@click.option("--broker-kept", is_flag=True, help="kafka mode: the broker stays up after the demo (make demo KEEP=1); "
              "say so with the inspect/ui commands")
def demo(config_path: str | None, mode: str, bootstrap_servers: str | None, stories: int | None, output_dir: str, seed: int,
         broker_kept: bool) -> None:
    """Run the main job on real Reuters news and show the results."""
    cfg = get_config(config_path)
    if mode == "kafka":
        _kafka_demo(cfg, stories or 4000, bootstrap_servers or cfg.kafka.bootstrap_servers, seed, output_dir, broker_kept)
    elif mode == "file":
        _file_demo(cfg, stories or 4000, output_dir, seed)
    else:
        _fingerprint_demo(cfg, stories or 2, seed)


def build_feed(n_stories: int, seed: int) -> tuple[list[bytes], int]:
    """A news feed: Reuters stories in date order, wire variants of some, a few broken records."""
    import orjson

    from streamdedup.bench.synthetic import EDIT_KINDS

    rng = random.Random(seed)
    stories = sorted((s for s in load_reuters() if s.date is not None), key=lambda s: s.date)[:n_stories]
    lines: list[bytes] = []
    kinds = list(EDIT_KINDS.items())
    for k, s in enumerate(stories):
        lines.append(orjson.dumps({"id": f"reuters-{s.id}", "title": s.title, "text": s.body, "time": s.date.isoformat()}))
        if k % 12 == 5 and len(s.body) > 400:
            name, edit = kinds[(k // 12) % len(kinds)]
            text = edit(s.title, s.body, rng.choice(stories).body, rng)
            if text is not None:
                title, _, body = text.partition("\n")
                lines.append(orjson.dumps({"id": f"copy-{k}-{name.replace(' ', '-')}", "title": title, "text": body,
                                           "time": s.date.isoformat()}))
        if k % 500 == 250:
            lines.append(rng.choice([b"{not json", b'{"id": "x", "text": null}', b'{"id": "y", "text": 7}', b"\xff\xfe broken bytes"]))
    return lines, len(stories)


def _side_by_side(console, dups: list[dict], originals: dict) -> None:
    table = Table(title="some duplicates next to their originals", show_lines=True)
    table.add_column("duplicate", width=48)
    table.add_column("original (duplicate_of)", width=48)
    table.add_column("relation / similarity", width=22)
    shown = set()
    for d in dups:
        tag = d["_dedup"]
        kind = d["id"].split("-", 2)[-1] if d["id"].startswith("copy-") else "natural"
        if kind in shown or tag.duplicate_of not in originals:
            continue
        shown.add(kind)
        o = originals[tag.duplicate_of]
        table.add_row(f"[b]{d['id']}[/b]\n{d['title'][:60]}\n{_flat(d['text'])}...", f"[b]{o['id']}[/b]\n{o['title'][:60]}\n{_flat(o['text'])}...",
                      f"{tag.relation}\nJaccard {tag.similarity}\nLD sim {tag.ld_similarity}")
        if len(shown) >= 6:
            break
    console.print(table)


#: the demo feed's fields: stories have a title and a text, and an event time
DEMO_INPUT = {"text_fields": ("title", "text"), "time_field": "time"}


def write_demo_config(path, sections: dict) -> str:
    """A config file naming what the demo used (its topics, its input fields), so that
    ``inspect``, ``ui`` and ``tune --replay`` read the demo's data with ``--config`` it."""
    import json

    import yaml

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    plain = json.loads(json.dumps(sections))  # tuples as lists: YAML's safe dumper writes plain types only
    out.write_text("# written by streamdedup demo: the demo's topics and input fields\n" + yaml.safe_dump(plain, sort_keys=False))
    return str(out)


def _kafka_demo(cfg, n_stories: int, bootstrap: str, seed: int, output_dir: str, broker_kept: bool) -> None:
    import json
    import tempfile
    import uuid

    from confluent_kafka import Consumer

    from streamdedup.runtime.kafka.admin import create_topics, produce_all
    from streamdedup.runtime.kafka.clientlog import client_settings
    from streamdedup.runtime.single.processor import Processor
    from streamdedup.logs import setup_logging

    console = make_console()
    run = uuid.uuid4().hex[:6]
    kcfg = cfg.kafka.model_copy(update={
        "bootstrap_servers": bootstrap, "input_topics": (f"news-{run}",), "unique_topic": f"news-{run}.unique",
        "duplicates_topic": f"news-{run}.duplicates", "dead_letter_topic": f"news-{run}.dead-letter",
        "group_id": f"demo-{run}", "transactional_id": f"demo-{run}", "partitions": 1})
    demo_cfg = cfg.model_copy(update={"kafka": kcfg, "input": cfg.input.model_copy(update=DEMO_INPUT)})
    for topic, outcome in create_topics(kcfg, revisions=demo_cfg.verify.revisions == "topic").items():
        console.print(f"topic {topic}: {outcome}")
    setup_logging()  # before the first client: librdkafka's lines go through the JSON logger
    lines, n = build_feed(n_stories, seed)
    # idempotent (produce_all): the feed's order decides which copy is the original, and a plain
    # producer may land a retried request (a new topic's leader not yet known) after later ones
    produce_all(bootstrap, kcfg.input_topics[0], [(None, line) for line in lines], timeout=60)
    console.print(f"produced {len(lines):,} records ({n:,} Reuters stories, wire variants, broken records) to {kcfg.input_topics[0]}")
    fill_kernel_cache(demo_cfg, "demo")
    with tempfile.TemporaryDirectory() as state:
        processor = Processor(demo_cfg, state, stop_when_idle=3.0)
        s = processor.run()
    console.print(f"processor: {s.records:,} records in {s.seconds:.1f} s: unique {s.unique:,}, duplicates {s.duplicates:,}, "
                  f"dead-letter {s.dead_letter:,} (reconciles: {s.reconciles()}); by relation {dict(s.relations)}; "
                  f"revisions {s.revisions:,} (tagged, with the {demo_cfg.verify.revisions} topic)")
    consumer = Consumer(client_settings(kcfg, {"group.id": f"demo-read-{run}", "auto.offset.reset": "earliest",
                                               "isolation.level": "read_committed"}))
    consumer.subscribe(list(output_topics(demo_cfg).values()))
    per_topic: dict[str, list] = {}
    idle = 0
    while idle < 6 and sum(len(v) for v in per_topic.values()) < len(lines):
        msgs = consumer.consume(1000, 0.5)
        idle = idle + 1 if not msgs else 0
        for m in msgs:
            if m.error() is None:
                per_topic.setdefault(m.topic(), []).append(m)
    consumer.close()
    for topic in (kcfg.unique_topic, kcfg.duplicates_topic, kcfg.dead_letter_topic):
        console.print(f"{topic}: {len(per_topic.get(topic, [])):,} records (read_committed)")

    def obj(m):
        o = json.loads(m.value())
        o["_dedup"] = parse_headers(m.headers())
        return o

    originals = {o["id"]: o for o in map(obj, per_topic.get(kcfg.unique_topic, []))}
    _side_by_side(console, [obj(m) for m in per_topic.get(kcfg.duplicates_topic, [])], originals)
    revisions = [o for o in originals.values() if o["_dedup"] is not None and o["_dedup"].status == "revision"]
    for o in revisions[:3]:  # on the unique topic (verify.revisions: unique), linked and tagged
        t = o["_dedup"]
        console.print(f"revision {o['id']} of {t.duplicate_of} (on {kcfg.unique_topic}): {'; '.join(t.changed)}")
    for m in per_topic.get(kcfg.dead_letter_topic, [])[:3]:
        t = parse_headers(m.headers())
        console.print(f"dead-letter {t.source}: {t.stage}: {t.reason}")
    keys = ("bootstrap_servers", "input_topics", "unique_topic", "duplicates_topic", "dead_letter_topic", "group_id",
            "transactional_id", "partitions")
    conf = write_demo_config(Path(output_dir) / "demo-kafka.yaml",
                             {"kafka": {k: v for k, v in kcfg.model_dump(mode="json").items() if k in keys}, "input": DEMO_INPUT})
    _next_steps(console, conf, "" if broker_kept else " (the broker stops after `make demo`: run `make demo KEEP=1` to keep it)",
                kcfg.input_topics[0])


def _next_steps(console, conf: str, note: str, replay: str, extra: str = "") -> None:
    """The commands to run next, as a new shell runs them: this program by a name that shell
    finds, paths absolute (a user may paste them anywhere)."""
    me = shell_command()
    conf = shlex.quote(str(Path(conf).resolve()))
    console.print(f"\nlook at the duplicates{note}:\n"
                  f"  {me} inspect --config {conf}{extra}    # in the terminal\n"
                  f"  {me} ui --config {conf}{extra}    # in the browser, http://127.0.0.1:8765\n"
                  f"  {me} tune --config {conf} --replay {replay} --set verify.jaccard_threshold=0.7 --set verify.ld_min_jaccard=0.7"
                  "    # what stricter thresholds would flip", soft_wrap=True)


def shell_command() -> str:
    """``streamdedup`` when a shell's PATH finds this program by that name, else the path of the
    program (a virtualenv's ``bin/streamdedup`` that nobody activated), else ``python -m``."""
    candidates = [Path(sys.argv[0]), Path(sys.executable).parent / "streamdedup"]
    script = next((c for c in candidates if c.name == "streamdedup" and c.is_file()), None)
    if script is None:
        return f"{shlex.quote(sys.executable)} -m streamdedup.cli"
    found = shutil.which("streamdedup")
    if found and Path(found).resolve() == script.resolve():
        return "streamdedup"
    return shlex.quote(str(script.absolute()))


def _file_demo(cfg, n_stories: int, output_dir: str, seed: int) -> None:
    import json

    from streamdedup.runtime.filemode import run_file

    console = make_console()
    lines, n = build_feed(n_stories, seed)
    out = Path(output_dir)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    feed = out / "feed.jsonl"
    feed.write_bytes(b"\n".join(lines) + b"\n")
    demo_cfg = cfg.model_copy(update={"input": cfg.input.model_copy(update=DEMO_INPUT)})
    console.print(f"feed: {len(lines):,} records ({n:,} Reuters stories in date order, wire variants, broken records) -> {feed}")
    fill_kernel_cache(demo_cfg, "demo")
    summary = run_file(demo_cfg, str(feed), str(out))
    console.print(
        f"{summary.records:,} records in {summary.seconds:.2f} s ({summary.docs_per_s:,.0f} docs/s): unique {summary.unique:,}, "
        f"duplicates {summary.duplicates:,}, dead-letter {summary.dead_letter:,} (reconciles: {summary.reconciles()})"
    )
    console.print("duplicates by relation: " + ", ".join(f"{k} {v}" for k, v in summary.relations.most_common()))
    console.print(f"revisions (content changed, tagged revision; verify.revisions: {cfg.verify.revisions}): {summary.revisions:,}")
    originals = {}
    for line in (out / "unique.jsonl").read_text().splitlines():
        o = json.loads(line)
        originals[o["id"]] = o
    dups = [json.loads(x) for x in (out / "duplicates.jsonl").read_text().splitlines()]
    for d in dups:
        d["_dedup"] = parse_file_tags(d)
    _side_by_side(console, dups, originals)
    dead = (out / "dead_letter.jsonl").read_text().splitlines()
    if dead:
        console.print("dead-letter examples: " + "; ".join(f"line {json.loads(x)['line']}: {json.loads(x)['reason']}" for x in dead[:3]))
    console.print(f"outputs: {out}/unique.jsonl, duplicates.jsonl, dead_letter.jsonl; state in {out}/state")
    conf = write_demo_config(out / "demo-file.yaml", {"input": DEMO_INPUT})
    feed_arg, out_arg = (shlex.quote(str(p.resolve())) for p in (feed, out))
    _next_steps(console, conf, "", feed_arg, f" --output-dir {out_arg} --input {feed_arg}")


def _flat(text: str, n: int = 110) -> str:
    return " ".join(text.split())[:n]


def _fingerprint_demo(cfg, stories: int, seed: int) -> None:
    fp = Fingerprinter(cfg.fingerprint)
    rng = random.Random(seed)
    corpus = [s for s in load_reuters() if 1200 <= len(s.body) <= 4000]
    console = make_console()
    console.print(f"{len(corpus)} Reuters stories of 1.2-4 KB; LSH bands={fp.lsh.bands} rows={fp.lsh.rows}")
    for story, other in zip(rng.sample(corpus, stories), rng.sample(corpus, stories)):
        vs = variants(story.text, other.text, rng)
        batch = fp.fingerprint_batch([story.text, *vs.values()])
        orig = Fingerprint.from_batch(batch, 0)
        table = Table(title=f"story {story.id}: {story.title[:60]}")
        for col in ("variant", "Jaccard", "LD sim (raw/cal.)", "containment new in old", "shared bands", "relation", "duplicate?"):
            table.add_column(col)
        for i, name in enumerate(vs, start=1):
            c = compare(orig, Fingerprint.from_batch(batch, i), cfg.verify, cfg.fingerprint.signature, full=True)
            shared = int((batch.band_keys[0] == batch.band_keys[i]).sum())
            table.add_row(
                name, f"{c.jaccard:.2f}", f"{c.ld.raw_similarity:.2f}/{c.ld.similarity:.2f}",
                f"{c.containment_b_in_a:.2f}", str(shared), c.relation, "yes" if c.is_duplicate else "no",
            )
        console.print(table)
