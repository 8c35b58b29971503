"""Paging backwards through duplicates (the web inspector's older/newer links): every record
once, in order, with filters; a single entry by position; the outputs' record counts."""

from __future__ import annotations

from streamdedup import load_config
from streamdedup.tools.inspection.file_source import FileDuplicates
from streamdedup.tools.inspection.pair import Doc
from streamdedup.tools.inspection.reader import Entry, Filter, newest
from streamdedup.pipeline.tags import Tags
from tests.unit.test_inspect_pair import _run


def _back(src, limit: int, filt: Filter) -> list[list[str]]:
    pages, before = [], None
    while True:
        page = src.older(before, limit, filt, 1000)
        pages.append([e.doc.id for e in page.entries])
        if page.at_end:
            return pages
        before = page.next


def test_paging_back_shows_every_duplicate_once(tmp_path) -> None:
    _, out, _ = _run(tmp_path)
    src = FileDuplicates(out, load_config(environ={}))
    try:
        assert _back(src, 3, Filter()) == [["c4", "c7", "c10"], ["c1"]]
        assert _back(src, 1, Filter(ids=frozenset({"s1", "s10"}))) == [["c10"], ["c1"]]  # c1 is the first line: the end
        # a page ends where the newer one started: forward from its start gives it again
        first = src.older(None, 2, Filter(), 1000)
        assert [e.doc.id for e in src.read(first.next, 2, Filter(), 1000).entries] == ["c7", "c10"]
        assert src.older(first.next, 2, Filter(), 1).scanned == 1  # max_scan bounds the read
    finally:
        src.close()


def test_entry_at_and_totals(tmp_path) -> None:
    _, out, records = _run(tmp_path)
    (out / "dead_letter.jsonl").write_bytes(b'{"line": 99, "stage": "decode", "reason": "x"}\n')
    src = FileDuplicates(out, load_config(environ={}))
    try:
        e = src.entry_at(0, 1)
        assert e is not None and e.doc.id == "c4" and e.tags.duplicate_of == "s4"
        assert src.entry_at(0, 4) is None and src.entry_at(1, 0) is None and src.entry_at(0, -1) is None
        assert src.totals() == {"duplicate": 4, "unique": len(records) - 4, "dead_letter": 1}
        with open(out / "duplicates.jsonl", "ab") as f:  # a growing output is counted again
            f.write((out / "duplicates.jsonl").read_bytes().splitlines(keepends=True)[0])
        assert src.totals()["duplicate"] == 5
    finally:
        src.close()


def _e(p: int, o: int, t: int | None) -> Entry:
    return Entry(p, o, Tags("duplicate"), Doc(f"{p}.{o}", "", None, t))


def test_newest_keeps_a_suffix_of_each_partition() -> None:
    # partition 0's records are out of time order: 0.8 is older by time than 0.7 but above it
    found = [_e(0, 7, 50), _e(0, 8, 10), _e(1, 1, 20), _e(1, 2, 40)]
    kept, start = newest(found, 2, {0: 6, 1: 0})
    assert sorted(e.doc.id for e in kept) == ["0.7", "0.8", "1.2"] and start == {0: 7, 1: 2}
    # nothing kept from a partition: the page before starts after its newest record found
    kept, start = newest([_e(0, 3, 1), _e(1, 5, 9)], 1, {0: 0, 1: 4})
    assert [e.doc.id for e in kept] == ["1.5"] and start == {0: 4, 1: 5}
    assert newest([_e(0, 3, 1)], 0, {0: 2}) == ([], {0: 4})
