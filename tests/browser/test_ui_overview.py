"""The web inspector's overview page in headless chromium: its figures over a file-mode run
(with and without record times), its links into the list, and hostile record texts (a
dead-letter reason quoting markup) shown as text inside the server-drawn SVG charts."""

from __future__ import annotations

import re

import orjson
import pytest

from streamdedup import load_config
from streamdedup.runtime.filemode import run_file
from streamdedup.tools.inspection.file_source import FileDuplicates
from streamdedup.tools.ui.app import Inspector
from streamdedup.tools.ui.whatif_form import WhatIfInput

from .harness import NO_REVISIONS, feed, file_run, follow, serve, serve_file_run

HOSTILE_TIME = "<img src=x onerror=window.__xss=4>"
T0 = 1_772_431_200_000  # 2026-03-02 06:00 UTC


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return file_run(tmp_path_factory.mktemp("overview"))


def test_the_overview_of_a_run_without_record_times(page, run) -> None:
    inp, out, records = run
    with serve_file_run(inp, out) as site:
        page.goto(site + "/clusters")
        follow(page, "nav >> text=Overview")
        assert page.url == site + "/"  # the first page
        assert page.locator('.n[data-status="duplicate"]').inner_text() == "5"
        assert page.locator("#overall-rate").inner_text() == f"{5 / len(records):.1%}"
        assert "input.time_field" in page.locator("#rate-missing").inner_text()
        assert "newest 12 unique records, 5 duplicates and 0 dead letters" in page.locator("#covers").inner_text()
        assert page.locator("#no-dead-letters").count() == 1
        # one bar per root, each a link to its copies; the thresholds drawn on the Jaccard histogram
        assert page.locator("#top-clusters svg a").count() == 5
        assert "jaccard_threshold 0.55" in page.locator("#similarity svg").first.inner_html()
        follow(page, '#relations svg a[href="/duplicates?relation=near_duplicate"]')
        assert page.locator("#decisions a.copy").count() == 2  # a page of two (serve_file_run's page size)
        assert page.goto(site + "/?window=7").status == 400
        page.goto(site + "/?id=s4")  # a link from when the list was at /: it goes on to the list
        assert page.url == site + "/duplicates?id=s4" and page.locator("#decisions a.copy").all_inner_texts() == ["c4"]


def test_the_overview_with_record_times_and_hostile_dead_letters(page, tmp_path) -> None:
    records = feed()
    for k, r in enumerate(records):
        r["time"] = T0 + 60_000 * k
    lines = [orjson.dumps(r) for r in records]
    lines += [orjson.dumps({"id": "bad-time", "text": "some text", "time": HOSTILE_TIME}), b'{"id": "no-text"}']
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(lines) + b"\n")
    # the hostile time is a dead letter whose reason quotes it (by default it would be decided
    # at the stream's time, and shown nowhere)
    cfg = load_config(environ={"STREAMDEDUP_INPUT__TIME_FIELD": "time", "STREAMDEDUP_INPUT__INVALID_TIME": "dead_letter",
                               **NO_REVISIONS})
    run_file(cfg, str(inp), str(tmp_path / "out"))
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    source = FileDuplicates(tmp_path / "out", cfg, inp)
    try:
        with serve(Inspector(cfg, source, "file mode", WhatIfInput(str(inp), ()))) as site:
            page.goto(site + "/")
            bars = page.locator("#rate svg rect.rate")
            assert bars.count() >= 10  # one a minute over the feed's minutes
            tips = " ".join(bars.locator("title").all_text_contents())
            counted = [(int(d), int(n)) for d, n in re.findall(r"(\d+) duplicates of (\d+) records", tips)]
            assert sum(d for d, _ in counted) == 5 and sum(n for _, n in counted) == len(records)
            assert "2026-03-02 06:00:00 UTC + 30 seconds: 0 duplicates of 1 records (0.0%)" in tips
            assert "event time" in page.locator("#rate").inner_text()
            assert sorted(page.locator("#dead-letters svg text.label").all_text_contents()) == ["fields", "time"]
            assert HOSTILE_TIME in page.locator("#reasons").inner_text()  # shown as text
            assert page.evaluate("window.__xss") is None and page.locator("img").count() == 0
    finally:
        source.close()
    assert dialogs == []


def test_the_overview_of_a_run_with_nothing_decided_yet(page, tmp_path) -> None:
    inp, out, _ = file_run(tmp_path, [{"id": "only", "text": "one story and nothing else yet"}])
    with serve_file_run(inp, out) as site:
        assert page.goto(site + "/").status == 200
        assert page.locator('.n[data-status="duplicate"]').inner_text() == "0"
        assert page.locator("#overall-rate").inner_text() == "0.0%"
        assert page.locator("svg.chart").count() == 0  # nothing to draw: each panel says so
        assert "no duplicates yet" in page.locator("#relations").inner_text()


def test_the_overview_of_records_decided_at_the_streams_time(page, tmp_path) -> None:
    """A record whose time could not be used is decided at the stream's time and goes out
    unique; its output holds the unusable time, which the overview must leave out (it drew the
    decoder's placeholder, a time 73 million years before 1970, and answered 500)."""
    records = feed()
    for k, r in enumerate(records):
        r["time"] = T0 + 60_000 * k
    lines = [orjson.dumps(r) for r in records] + [b'{"id": "far", "text": "some text", "time": 1e30}',
                                                   b'{"id": "soon", "text": "other text", "time": "soon"}']
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(lines) + b"\n")
    cfg = load_config(environ={"STREAMDEDUP_INPUT__TIME_FIELD": "time", **NO_REVISIONS})
    run_file(cfg, str(inp), str(tmp_path / "out"))
    source = FileDuplicates(tmp_path / "out", cfg, inp)
    try:
        with serve(Inspector(cfg, source, "file mode", WhatIfInput(str(inp), ()))) as site:
            assert page.goto(site + "/").status == 200
            tips = " ".join(page.locator("#rate svg rect.rate title").all_text_contents())
            assert sum(int(n) for n in re.findall(r"duplicates of (\d+) records", tips)) == len(records)
    finally:
        source.close()
