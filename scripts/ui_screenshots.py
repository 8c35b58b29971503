#!/usr/bin/env python3
"""Screenshots of the web inspector's main pages (``make screenshots``; the docs show them).

A file-mode run over 3,000 Reuters-derived news records (``streamdedup.bench.feeds``) in a
temporary directory, ``streamdedup ui``'s app on a free loopback port, Debian's chromium driven
by Playwright: the overview, the list, a pair with changes on both sides, the clusters page and
a what-if result are saved as PNGs into the given directory (default docs/screenshots).

The records get a publication time, one every 20 s from a fixed morning (``input.time_field``:
the overview's rate chart needs record times in file mode), and about one line in a hundred is
broken the ways feeds break (cut short, no text, an unreadable time), so the dead-letter chart
has something to show.
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
from streamdedup.runtime.filemode import run_file  # noqa: E402
from tests.browser.harness import launch, serve  # noqa: E402

VIEWPORT = {"width": 1400, "height": 1000}
#: 2026-03-02 06:00 UTC: the feed's first publication time
T0_MS = 1_772_431_200_000
BROKEN = [b'{"id": "cut", "text": "Shares of the company rose', b'{"id": "no-text", "title": "Markets"}',
          b'{"id": "bad-time", "text": "Oil prices fell on Tuesday.", "time": "Tuesday morning"}']


def _feed(tmp: Path, n: int) -> tuple[Path, int]:
    """The input file: ``n`` timed news records and a broken line after every 97th; (path, records)."""
    lines = []
    for k, (_, value) in enumerate(news_records(n)):
        rec = orjson.loads(value)
        rec["time"] = T0_MS + 20_000 * k
        lines.append(orjson.dumps(rec))
        if k % 97 == 96:
            lines.append(BROKEN[k // 97 % len(BROKEN)])
    inp = tmp / "in.jsonl"
    inp.write_bytes(b"\n".join(lines) + b"\n")
    return inp, n


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
    cfg = load_config(environ={"STREAMDEDUP_INPUT__TIME_FIELD": "time"})
    with tempfile.TemporaryDirectory() as tmp:
        inp, n = _feed(Path(tmp), 3000)
        run_out = Path(tmp) / "out"
        run_file(cfg, str(inp), str(run_out))
        source = FileDuplicates(run_out, cfg, inp)
        try:
            partition, offset = _showcase(source, cfg)
            ins = Inspector(cfg, source, f"file mode: {run_out.name}/ ({n:,} Reuters news records)",
                            WhatIfInput(str(inp), ()))
            with serve(ins) as site, sync_playwright() as pw, launch(pw) as browser:
                page = browser.new_page(viewport=VIEWPORT)
                shots = [("overview", "/"), ("list", "/duplicates"), ("pair", f"/pair?p={partition}&o={offset}"), ("clusters", "/clusters"),
                         ("whatif", "/whatif?settings=verify.jaccard_threshold%3D0.7&limit=3000")]
                for name, url in shots:
                    page.goto(site + url)
                    if name == "whatif":  # a replay runs on the form's POST (a GET only fills the form)
                        page.click("#run")
                        page.wait_for_selector("#result")
                    # the overview whole (it is longer than the window); the others as a window shows them
                    page.screenshot(path=str(out / f"{name}.png"), full_page=name == "overview")
                    print(f"{out / name}.png  <- {url}")
        finally:
            source.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
