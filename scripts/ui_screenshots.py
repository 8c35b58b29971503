#!/usr/bin/env python3
"""Screenshots of the web inspector's main pages (``make screenshots``; the docs show them).

A file-mode run over 3,000 Reuters-derived news records (``streamdedup.bench.feeds``) in a
temporary directory, ``streamdedup ui``'s app on a free loopback port, Debian's chromium driven
by Playwright: the list, a pair with changes on both sides, the clusters page and a what-if
result are saved as PNGs into the given directory (default docs/screenshots).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from streamdedup import load_config  # noqa: E402
from streamdedup.bench.feeds import news_records  # noqa: E402
from streamdedup.tools.inspection.file_source import FileDuplicates  # noqa: E402
from streamdedup.tools.inspection.pair import changed_words  # noqa: E402
from streamdedup.tools.inspection.reader import Filter, pairs  # noqa: E402
from streamdedup.tools.ui.app import Inspector  # noqa: E402
from streamdedup.tools.ui.whatif_form import WhatIfInput  # noqa: E402
from tests.browser.harness import file_run, launch, serve  # noqa: E402

VIEWPORT = {"width": 1400, "height": 1000}


def _showcase(source: FileDuplicates, cfg) -> tuple[int, int]:
    """A duplicate of its root with a few words deleted and inserted: the diff a reader sees first."""
    page = source.older(None, 400, Filter(relations=frozenset({"near_duplicate"})), 5000)
    best = None
    for p in pairs(source, page.entries, cfg):
        if p.diff is None or not p.matched_is_root or len(p.copy.text) > 1500:
            continue
        c = changed_words(p.diff)
        if c["delete"] and c["insert"] and c["delete"] + c["insert"] <= 40:
            score = abs(c["delete"] + c["insert"] - 16)
            if best is None or score < best[0]:
                best = (score, p.copy.position)
    if best is None:
        raise SystemExit("no duplicate with both deleted and inserted words to show")
    line = int(best[1].rsplit(":", 1)[1]) - 1  # duplicates.jsonl:N is 1-based
    return 0, line


def main(out_dir: str = "docs/screenshots") -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = load_config(environ={})
    with tempfile.TemporaryDirectory() as tmp:
        records = [orjson.loads(v) for _, v in news_records(3000)]
        inp, run_out, _ = file_run(Path(tmp), records)
        source = FileDuplicates(run_out, cfg, inp)
        try:
            partition, offset = _showcase(source, cfg)
            ins = Inspector(cfg, source, f"file mode: {run_out.name}/ ({len(records):,} Reuters news records)",
                            WhatIfInput(str(inp), ()))
            with serve(ins) as site, sync_playwright() as pw, launch(pw) as browser:
                page = browser.new_page(viewport=VIEWPORT)
                shots = [("list", "/"), ("pair", f"/pair?p={partition}&o={offset}"), ("clusters", "/clusters"),
                         ("whatif", "/whatif?settings=verify.jaccard_threshold%3D0.7&limit=3000&run=1")]
                for name, url in shots:
                    page.goto(site + url)
                    page.screenshot(path=str(out / f"{name}.png"))
                    print(f"{out / name}.png  <- {url}")
        finally:
            source.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
