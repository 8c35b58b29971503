"""``streamdedup demo``: the fingerprint/verify layer on real Reuters stories and edited copies.

Until the engine and Kafka runtime land, this is the main job: it shows what each estimator
says about a story and its typical wire variants, and the verdict under the config.
"""

from __future__ import annotations

import random

import click
from rich.table import Table

from ..bench.edits import scattered
from ..corpus import load_reuters
from ..fingerprint import Fingerprinter
from ..verify import Fingerprint, compare
from ._common import config_option, get_config, make_console


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
@click.option("--stories", type=click.IntRange(1, 50), default=2, show_default=True)
@click.option("--seed", type=int, default=3, show_default=True)
def demo(config_path: str | None, stories: int, seed: int) -> None:
    """Fingerprint real stories and their variants, and show every verdict."""
    cfg = get_config(config_path)
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
