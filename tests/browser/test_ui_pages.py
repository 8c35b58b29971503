"""The web inspector over a file-mode output, in real headless chromium: the list with its
counts, a duplicate's pair page with the word diff and why-matched, paging, search by id, the
what-if form against the replay run directly, and records carrying scripts shown as text."""

from __future__ import annotations

import re
import time

import orjson
import pytest

from streamdedup import load_config
from streamdedup.config import with_settings
from streamdedup.tools.inspection.file_source import FileDuplicates
from streamdedup.tools.whatif import Replayer, ReplayInput
from streamdedup.tools.ui.app import Inspector
from streamdedup.tools.ui.whatif_form import WhatIfInput

from .harness import XSS_ID, XSS_TAIL, file_run, follow, serve, serve_file_run

COPIES = ["c1", "c4", "c7", "c10", XSS_ID]  # in output order


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return file_run(tmp_path_factory.mktemp("ui"))


@pytest.fixture
def site(run):
    inp, out, _ = run
    with serve_file_run(inp, out) as url:
        yield url


def _ids(page) -> list[str]:
    return page.locator("#decisions a.copy").all_inner_texts()


def test_the_list_shows_counts_and_a_duplicate_opens_with_its_diff(page, site, run) -> None:
    _, _, records = run
    page.goto(site + "/duplicates")
    assert page.locator('.n[data-status="duplicate"]').inner_text() == "5"
    assert page.locator('.n[data-status="unique"]').inner_text() == str(len(records) - 5)
    assert page.locator('.n[data-status="dead_letter"]').inner_text() == "0"
    assert page.locator('[data-relation="near_duplicate"] b').inner_text() == "5"
    assert _ids(page) == [XSS_ID, "c10"]  # newest first, a page of two

    follow(page, "text=older")
    assert _ids(page) == ["c7", "c4"]
    page.get_by_role("link", name="c4", exact=True).click()
    page.wait_for_url(re.compile(r"/pair\?p=0&o=1$"))
    assert page.locator("#copy-id").inner_text() == "c4"
    inserted = page.locator(".copy ins.inserted").all_inner_texts()
    deleted = page.locator(".earlier del.deleted").all_inner_texts()
    s4 = next(r for r in records if r["id"] == "s4")["text"].split()
    assert " ".join(w + "q" for w in s4[10:12]) in " ".join(inserted) and "extra tail" in " ".join(inserted)
    assert " ".join(deleted).split() == s4[10:12]
    # the earlier side never shows inserted words, nor the copy deleted ones
    assert page.locator(".earlier ins, .copy del").count() == 0
    # the original came from the input file by its position, and why-matched shows the thresholds
    assert "@ line:" in page.locator(".sidebyside .dochead").first.inner_text()
    why = page.locator("#why").inner_text()
    assert "near_duplicate (duplicate)" in why and "shared LSH bands" in why
    assert page.locator("#thresholds tr", has_text="verify.jaccard_threshold").locator("td").nth(1).inner_text() == "0.55"


def test_paging_back_and_forth_shows_every_duplicate_once(page, site) -> None:
    page.goto(site + "/duplicates")
    seen = [_ids(page)]
    while page.locator("#older").count():
        follow(page, "#older")
        seen.append(_ids(page))
    assert [i for p in seen for i in p] == COPIES[::-1]
    follow(page, "#newer")
    assert _ids(page) == seen[-2]


def test_search_by_id(page, site) -> None:
    page.goto(site + "/clusters")
    page.fill("#search-id", "s7")
    page.press("#search-id", "Enter")
    page.wait_for_url(re.compile(r"/duplicates\?id=s7$"))
    assert _ids(page) == ["c7"] and "s7" in page.locator("#search-title").inner_text()
    page.fill("#search-id", "no-such-id")
    page.press("#search-id", "Enter")
    page.wait_for_url(re.compile(r"id=no-such-id"))
    assert _ids(page) == [] and "match among the 5 records read" in page.locator("#empty").inner_text()


def test_clusters_page(page, site) -> None:
    page.goto(site + "/clusters")
    roots = page.locator("#clusters a.root").all_inner_texts()
    assert sorted(roots) == sorted(["s1", "s4", "s7", "s10", "s0"])
    assert page.locator("#clusters td.copies").all_inner_texts() == ["1"] * 5


def test_the_what_if_form_reports_the_replays_flip_counts(page, site, run) -> None:
    inp, _, _ = run
    lines = ["verify.jaccard_threshold=0.99", "verify.ld_similarity_threshold=0.999", "verify.containment_threshold=0.99"]
    cfg = load_config(environ={})
    want = Replayer(ReplayInput.from_file(str(inp), 0, 1000), int(time.time() * 1000)).compare(
        cfg, with_settings(cfg, lines)).to_json()
    assert want["flips"]["duplicate->unique"] > 0  # the case has something to find

    page.goto(site + "/whatif")
    page.fill("#settings", "\n".join(lines))
    page.fill("#limit", "1000")
    page.click("#run")
    page.wait_for_selector("#result")
    for kind in ("unique->duplicate", "duplicate->unique", "duplicate changed"):
        assert page.locator(f'.flip[data-kind="{kind}"] .n').inner_text() == str(want["flips"][kind]), kind
    for status, n in want["candidate"].items():
        assert page.locator(f'#status-counts tr[data-status="{status}"] .cand').inner_text() == str(n)
    assert page.locator("#flipped tbody tr").count() == len(want["flipped"])

    page.fill("#settings", "verify.no_such=1")
    page.click("#run")
    assert "verify.no_such is not a setting" in page.locator("#error").inner_text()


def test_records_with_scripts_are_shown_as_text(page, site) -> None:
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(site + "/duplicates")
    assert page.locator("#decisions a.copy").first.inner_text() == XSS_ID
    page.locator("#decisions a.copy").first.click()
    page.wait_for_selector("#copy-id")
    assert page.locator("#copy-id").inner_text() == XSS_ID
    assert XSS_TAIL in page.locator(".copy").inner_text()
    page.goto(site + "/duplicates?id=" + XSS_ID.replace("<", "%3C").replace(">", "%3E").replace("=", "%3D"))
    assert page.locator("#decisions a.copy").all_inner_texts() == [XSS_ID]
    for url in ("/", "/duplicates", "/pair?p=0&o=4", "/clusters"):
        page.goto(site + url)
        assert page.evaluate("window.__xss") is None, url
        assert page.locator("script").count() == 1 and page.locator("img").count() == 0 and page.locator("main b:text('not bold')").count() == 0
    assert dialogs == []


def test_bad_requests_say_what_is_wrong(page, site) -> None:
    assert page.goto(site + "/pair?p=0&o=999").status == 404
    assert "no duplicate at partition 0, offset 999" in page.locator("#error").inner_text()
    assert page.goto(site + "/duplicates?before=zz").status == 400
    assert "partition:offset" in page.locator("#error").inner_text()
    assert page.goto(site + "/duplicates?min=0.9&max=0.2").status == 400


def test_the_live_list_shows_new_duplicates_without_a_reload(page, tmp_path) -> None:
    inp, out, _ = file_run(tmp_path)
    cfg = load_config(environ={})
    source = FileDuplicates(out, cfg, inp)
    try:
        with serve(Inspector(cfg, source, "live", WhatIfInput(str(inp), ()))) as site:
            page.goto(site + "/duplicates")
            page.evaluate("localStorage.removeItem('streamdedup.live')")
            assert page.locator('.n[data-status="duplicate"]').inner_text() == "5"
            page.check("#live-toggle")
            page.evaluate("window.__same_page = true")  # gone if the browser reloaded the page
            lines = (out / "duplicates.jsonl").read_bytes().splitlines(keepends=True)
            copy = orjson.loads(lines[0])
            copy["id"] = "late-copy"
            with open(out / "duplicates.jsonl", "ab") as f:  # the processor writes another duplicate
                f.write(orjson.dumps(copy) + b"\n")
            page.wait_for_function("document.querySelector('.n[data-status=\"duplicate\"]').textContent.trim() === '6'",
                                   timeout=15_000)
            assert _ids(page)[0] == "late-copy" and page.evaluate("window.__same_page") is True
            assert page.is_checked("#live-toggle")
            page.evaluate("localStorage.removeItem('streamdedup.live')")
    finally:
        source.close()
