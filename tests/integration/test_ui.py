"""The web inspector on the real broker, in Debian's chromium: the overview's charts from the
three output topics, the processor's duplicates topic listed with counts and paged by cursor
over three partitions, a pair whose original comes from the input topic, search by id, and the
what-if form replaying the input topic."""

from __future__ import annotations

import re
import time

import pytest

from streamdedup import load_config
from streamdedup.config import with_settings
from streamdedup.tools.inspection.kafka_source import KafkaDuplicates
from streamdedup.tools.whatif_input import read_recent
from streamdedup.tools.whatif import Replayer
from streamdedup.tools.ui.app import Inspector
from streamdedup.tools.ui.whatif_form import WhatIfInput
from tests.browser.harness import follow, serve

from .kafka_helpers import consume_all, produce, run_processor, stop_processors
from .test_inspect import _feed, misspelt


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


def _ids(page) -> list[str]:
    return page.locator("#decisions a.copy").all_inner_texts()


def _overview(page, site: str, n: int) -> None:
    """The overview over the three topics: every record in the rate chart's buckets (by Kafka
    timestamp), the relations, the clusters, the dead letter by stage and reason."""
    page.goto(site + "/")
    assert page.locator('.n[data-status="duplicate"]').inner_text().strip() == "3"
    assert page.locator('.n[data-status="dead_letter"]').inner_text().strip() == "1"
    tips = " ".join(page.locator("#rate svg rect.rate title").all_text_contents())
    counted = [(int(d), int(k)) for d, k in re.findall(r"(\d+) duplicates of (\d+) records", tips)]
    assert sum(d for d, _ in counted) == 3 and sum(k for _, k in counted) == n - 1  # the dead letter is in neither
    assert "Kafka timestamp" in page.locator("#rate").inner_text()
    assert page.locator("#relations svg text.label").all_text_contents() == ["near_duplicate"]
    assert sorted(page.locator("#top-clusters svg text.label").all_text_contents()) == ["s0", "s3", "s6"]
    assert page.locator("#dead-letters svg text.label").all_text_contents() == ["fields"]
    assert "text must be a string, got int" in page.locator("#reasons").inner_text()
    assert page.evaluate("window.__xss") is None


def test_the_web_inspector_on_kafka(topics, tmp_path, page) -> None:
    records, texts = _feed()
    records.append((b"bad", b'{"id": "<script>window.__xss=5</script>", "text": 7}'))  # a dead letter
    produce(topics.bootstrap, topics.input, records)
    proc = run_processor(topics.env(), str(tmp_path / "state"))
    assert proc.wait(300) == 0
    assert len(consume_all(topics.bootstrap, list(topics.outputs.values()), len(records))) == len(records)

    cfg = load_config(environ=topics.env())
    source = KafkaDuplicates(cfg)
    try:
        ins = Inspector(cfg, source, "kafka", WhatIfInput(None, (topics.input,)), page_size=1)
        with serve(ins) as site:
            _overview(page, site, len(records))
            page.goto(site + "/duplicates")
            assert page.locator('[data-relation="near_duplicate"] b').inner_text() == "3"
            # records, not offsets (each transaction's marker took one), exact: no "≈"
            assert page.locator('.n[data-status="duplicate"]').inner_text().strip() == "3"
            seen = _ids(page)
            while page.locator("#older").count():  # one a page, over three partitions
                follow(page, "#older")
                seen += _ids(page)
            assert sorted(seen) == ["c0", "c3", "c6"]

            page.goto(site + "/duplicates?id=c3")
            page.get_by_role("link", name="c3", exact=True).click()
            page.wait_for_url(re.compile(r"/pair\?"))
            inserted = " ".join(page.locator(".copy ins.inserted").all_inner_texts())
            deleted = " ".join(page.locator(".earlier del.deleted").all_inner_texts())
            assert " ".join(misspelt(texts["s3"].split()[30:32])) in inserted and "appended tail" in inserted
            assert deleted.split() == texts["s3"].split()[30:32]
            assert f"@ {topics.input}:" in page.locator(".sidebyside .dochead").first.inner_text()

            page.fill("#search-id", "s6")
            page.press("#search-id", "Enter")
            page.wait_for_url(re.compile(r"id=s6"))
            assert _ids(page) == ["c6"]

            lines = ["verify.jaccard_threshold=0.99", "verify.ld_similarity_threshold=0.999",
                     "verify.containment_threshold=0.99"]
            want = Replayer(read_recent(cfg, topics.input, None, 100), int(time.time() * 1000)).compare(
                cfg, with_settings(cfg, lines)).to_json()
            assert want["flips"]["duplicate->unique"] == 3
            page.goto(site + "/whatif")
            page.fill("#settings", "\n".join(lines))
            page.fill("#limit", "100")
            page.click("#run")
            page.wait_for_selector("#result")
            for kind in ("unique->duplicate", "duplicate->unique", "duplicate changed"):
                assert page.locator(f'.flip[data-kind="{kind}"] .n').inner_text() == str(want["flips"][kind]), kind
            assert sorted(page.locator("#flipped tbody tr td:nth-child(2)").all_inner_texts()) == ["c0", "c3", "c6"]
    finally:
        source.close()
