"""The web inspector's overview: its figures from the newest records of each output, the file
source's sample of them, and the SVG charts (well-formed, every record text escaped)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import orjson
import pytest

from streamdedup import load_config
from streamdedup._kernels import verify as K
from streamdedup.engine.verify import reasons
from streamdedup.pipeline.tags import Tags
from streamdedup.runtime.filemode import run_file
from streamdedup.tools.inspection.file_source import FileDuplicates
from streamdedup.tools.inspection.overview import BINS, Recent, containment_of, rate_over_time, summarise
from streamdedup.tools.ui.charts import overview_charts
from tests.unit.test_engine import story

HOSTILE = "<script>alert(1)</script>\"'&"


def _dup(root: str, relation: str = "near_duplicate", sim: float | None = 0.8, reason: str | None = None) -> Tags:
    return Tags("duplicate", root, relation, sim, 0.9, root, reason)


def test_the_rate_counts_only_the_time_both_outputs_cover() -> None:
    # the unique sample reaches back to t=100 only: duplicates before it are left out, or the
    # first buckets would show a rate of 100 %
    unique = Recent("unique", [(t, Tags("unique")) for t in range(100_000, 160_000, 1000)], False, 100_000)
    dups = Recent("duplicate", [(t, _dup("a")) for t in range(0, 160_000, 4000)], False, 0)
    rate = rate_over_time(unique, dups)
    assert rate.buckets[0].start_ms == 100_000 and rate.step_ms == 5000
    assert sum(b.unique for b in rate.buckets) == 60
    assert sum(b.duplicate for b in rate.buckets) == len(range(100_000, 160_000, 4000))
    assert all(b.rate is not None and b.rate < 0.5 for b in rate.buckets)


def test_a_run_of_a_second_and_a_half_gets_bars_with_times_apart() -> None:
    t0 = 1_700_000_000_000
    unique = Recent("unique", [(t0 + t, Tags("unique")) for t in range(0, 1500, 7)], False, t0)
    dups = Recent("duplicate", [(t0 + t, _dup("a")) for t in range(3, 1500, 11)], False, t0)
    rate = rate_over_time(unique, dups)
    assert rate.step_ms == 50 and len(rate.buckets) == 30
    labels = re.findall(r"\d\d:\d\d:\d\d\.\d{3}", str(overview_charts(summarise(unique, dups, Recent("dead_letter"), 10),
                                                                     load_config(environ={}).verify)["rate"]))
    assert len(labels) >= 2 and len(set(labels)) == len(labels)


def test_no_times_or_no_records_give_the_reason_instead_of_a_chart() -> None:
    untimed = rate_over_time(Recent("unique", [(None, Tags("unique"))]), Recent("duplicate"))
    assert untimed.buckets == [] and "input.time_field" in (untimed.missing or "")
    assert rate_over_time(Recent("unique"), Recent("duplicate")).missing == "nothing decided yet"


@pytest.mark.parametrize("relation", [K.REL_CONTAINS, K.REL_CONTAINED_IN])
def test_the_containment_is_read_from_the_reason_the_engine_writes(relation) -> None:
    """The containment is in no tag of its own: the overview reads it from the reason's wording."""
    cfg = load_config(environ={})
    why = "; ".join(reasons(relation, 0.3, None, 0.876, 0.912, 0.85, False, None, None, cfg.verify))
    assert containment_of(why) == (0.912 if relation == K.REL_CONTAINS else 0.876)


def test_the_summary_and_its_charts_escape_every_record_text() -> None:
    dups = Recent("duplicate", [(1000, _dup(HOSTILE, HOSTILE)), (2000, _dup(HOSTILE)), (3000, _dup("b", "exact", 1.0)),
                                (3500, _dup("c", "contains", 0.4, "containment of earlier in new 0.950, signature"))])
    dead = Recent("dead_letter", [(None, Tags("dead_letter", reason=HOSTILE, stage=HOSTILE))])
    s = summarise(Recent("unique", [(1500, Tags("unique"))]), dups, dead, 10)
    assert s.relations[0] == ("near_duplicate", 1) or ("near_duplicate", 1) in s.relations
    assert (s.clusters[0].root, s.clusters[0].copies) == (HOSTILE, 2)
    jac, ld, cont = s.histograms
    assert jac.total == 4 and ld.total == 4 and cont.total == 1 and cont.counts["contains"][int(0.95 * BINS)] == 1
    charts = overview_charts(s, load_config(environ={}).verify)
    svgs = [charts["rate"], charts["relations"], charts["dead"], charts["clusters"], *charts["histograms"]]
    assert len(svgs) == 7 and all(svgs)
    for svg in svgs:
        root = ET.fromstring(str(svg))  # well-formed: a record text cannot open an element
        assert root.tag.endswith("svg") and not any(e.tag.endswith("script") for e in root.iter())
        assert "<script>" not in str(svg)
    assert "&lt;script&gt;" in str(charts["clusters"]) and "&lt;script&gt;" in str(charts["dead"])


def test_the_containment_histogram_counts_every_contained_duplicate() -> None:
    """A short copy decided by its exact 8-grams or whole signature states no containment: it is
    counted beside the bins, so the chart's count agrees with the relation tiles."""
    dups = Recent("duplicate", [
        (1000, _dup("a", "contained_in", 0.3, "containment of new in earlier 0.912, signature embeds at 0.850")),
        (2000, _dup("b", "contained_in", 0.1, "short text: its whole signature embeds exactly in the earlier one's")),
        (3000, _dup("c", "contained_in", 0.1, "short copy: 0.950 of its exact 8-grams are in the earlier text"))])
    s = summarise(Recent("unique", [(1500, Tags("unique"))]), dups, Recent("dead_letter"), 10)
    cont = s.histograms[2]
    assert (cont.total, cont.unmeasured) == (1, 2) and dict(s.relations)["contained_in"] == cont.total + cont.unmeasured
    chart = str(overview_charts(s, load_config(environ={}).verify)["histograms"][-1])
    assert "containment (1 duplicates; 2 more without one: short copies)" in chart


def test_the_file_source_reads_the_newest_lines_of_each_output(tmp_path) -> None:
    records = []
    for k in range(8):
        records.append({"id": f"s{k}", "text": story(300 + k, 120), "time": 1_700_000_000_000 + 60_000 * k})
        if k % 2:
            records.append({"id": f"c{k}", "text": records[-1]["text"], "time": 1_700_000_000_000 + 60_000 * k + 1})
    lines = [orjson.dumps(r) for r in records] + [b"{not json", b'{"id": "t"}']
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(lines) + b"\n")
    cfg = load_config(environ={"STREAMDEDUP_INPUT__TIME_FIELD": "time"})
    run_file(cfg, str(inp), str(tmp_path / "out"))
    src = FileDuplicates(tmp_path / "out", cfg, inp)
    try:
        all_dups = src.recent("duplicate", 100)
        assert all_dups.complete and len(all_dups.records) == 4 and all_dups.since_ms is None
        assert [t.duplicate_of for _, t in all_dups.records] == ["s1", "s3", "s5", "s7"]
        last = src.recent("duplicate", 2)
        assert not last.complete and [t.duplicate_of for _, t in last.records] == ["s5", "s7"]
        assert last.since_ms == 1_700_000_000_000 + 60_000 * 5 + 1  # the earliest time read
        assert sorted(t.stage for _, t in src.recent("dead_letter", 10).records) == ["fields", "json"]
        assert len(src.recent("unique", 100).records) == 8
        s = summarise(src.recent("unique", 100), all_dups, src.recent("dead_letter", 10), 100)
        assert sum(b.duplicate for b in s.rate.buckets) == 4 and s.relations == [("exact", 4)]
    finally:
        src.close()


def test_a_broken_timestamp_cannot_make_thousands_of_bars() -> None:
    """A producer whose clock said 1970 stretches the span over decades: still at most ~48 bars."""
    unique = Recent("unique", [(0, Tags("unique"))] + [(1_772_431_200_000 + k, Tags("unique")) for k in range(5)])
    rate = rate_over_time(unique, Recent("duplicate", [(1_772_431_200_000, _dup("a"))]))
    assert len(rate.buckets) <= 49 and sum(b.unique + b.duplicate for b in rate.buckets) == 7


def test_revisions_are_counted_on_both_outputs_newest_first() -> None:
    rev = lambda root, changed: Tags("revision", root, "near_duplicate", 0.9, changed=changed)  # noqa: E731
    unique = Recent("unique", [(100, Tags("unique")), (300, rev("a", ("600 -> 500",))), (200, rev("b", ("+not",)))])
    dups = Recent("duplicate", [(400, rev("c", ("corrected",))), (150, _dup("d"))])
    s = summarise(unique, dups, Recent("dead_letter"), 10)
    assert s.revisions == 3 and s.newest_revisions == [("c", ("corrected",)), ("a", ("600 -> 500",)), ("b", ("+not",))]
    assert summarise(Recent("unique"), Recent("duplicate"), Recent("dead_letter"), 10).revisions == 0
