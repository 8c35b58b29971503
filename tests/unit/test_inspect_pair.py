"""The inspect model: word diffs, the why-matched explanation, and reading a file-mode output back."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from streamdedup import load_config
from streamdedup.errors import InspectError
from streamdedup.runtime.filemode import run_file
from streamdedup.tools.inspection import pair as P
from streamdedup.tools.inspection.file_source import FileDuplicates
from streamdedup.runtime.since import Since, parse_since
from streamdedup.tools.inspection.reader import Filter, Wanted, clusters, follow, pairs
from streamdedup.pipeline.tags import Tags, parse_file_tags, parse_headers
from tests.unit.test_engine import story


def _texts(diff) -> list[tuple[str, str]]:
    return [(s.op, " ".join(s.words)) for s in diff]


def test_word_diff_marks_deleted_and_inserted_words_in_order() -> None:
    old = "the central bank left interest rates unchanged at its monthly meeting"
    new = "the central bank raised interest rates at its meeting on tuesday"
    assert _texts(P.word_diff(old, new)) == [
        ("equal", "the central bank"), ("delete", "left"), ("insert", "raised"), ("equal", "interest rates"),
        ("delete", "unchanged"), ("equal", "at its"), ("delete", "monthly"), ("equal", "meeting"),
        ("insert", "on tuesday")]


def test_word_diff_keeps_unchanged_paragraphs_whole_and_rebuilds_both_texts() -> None:
    old = "first paragraph stays.\nsecond one is edited here.\nthird stays too."
    new = "first paragraph stays.\nsecond one was edited there.\nthird stays too.\nan update line"
    diff = P.word_diff(old, new)
    assert " ".join(w for s in diff if s.op != "insert" for w in s.words) == " ".join(old.split())
    assert " ".join(w for s in diff if s.op != "delete" for w in s.words) == " ".join(new.split())
    assert P.changed_words(diff) == {"equal": 9, "delete": 2, "insert": 5}
    # adjacent segments of one kind are merged: no two neighbours share an op
    assert all(a.op != b.op for a, b in zip(diff, diff[1:]))


def test_a_block_too_large_to_align_is_deleted_and_inserted_whole(monkeypatch) -> None:
    monkeypatch.setattr(P, "MAX_ALIGNED_WORDS", 3)
    assert _texts(P.word_diff("a b c d", "a b c e")) == [("delete", "a b c d"), ("insert", "a b c e")]


def test_identical_and_empty_texts() -> None:
    assert _texts(P.word_diff("same words", "same  words")) == [("equal", "same words")]
    assert P.word_diff("", "") == []


def test_explanation_of_a_near_copy_and_of_a_teaser() -> None:
    cfg = load_config(environ={})
    base = story(11, 300)
    words = base.split()
    near = " ".join(words[:20] + ["changed", "words", "here"] + words[23:])
    teaser = " ".join(base.split()[:120])
    other = story(12, 300)
    near_why, teaser_why, other_why = P.explain_pairs([(base, near), (base, teaser), (base, other)], cfg)
    assert near_why.relation == "near_duplicate" and near_why.is_duplicate
    assert near_why.jaccard > 0.7 and near_why.shared_bands >= 1 and near_why.bands > near_why.shared_bands
    assert not near_why.same_canonical
    assert any("Jaccard" in r for r in near_why.reasons)
    assert teaser_why.containment_copy_in_earlier > 0.9 > teaser_why.containment_earlier_in_copy
    assert teaser_why.containment_direction == "copy inside earlier"
    assert other_why.shared_bands == 0 and not other_why.is_duplicate
    case_only = P.explain_pairs([(base, base.upper())], cfg)[0]
    assert case_only.same_canonical and case_only.relation == "exact"


def test_a_text_the_fingerprinter_refuses_gives_its_reason_not_a_crash() -> None:
    cfg = load_config(environ={"STREAMDEDUP_FINGERPRINT__MAX_TEXT_BYTES": "2000"})
    base = story(3, 600)
    assert len(base) > 2000
    ok, bad = P.explain_pairs([(base[:1500], base[:1400]), (base, base)], cfg)
    assert isinstance(ok, P.Explanation)
    assert isinstance(bad, str) and "max_text_bytes" in bad


def test_new_position_tags_parse_from_both_encodings_and_default_to_none() -> None:
    h = [("dedup.status", b"duplicate"), ("dedup.duplicate_of", b"a"), ("dedup.original", b"in:2:17"),
         ("dedup.matched_source", b"in:0:5")]
    assert parse_headers(h).original == "in:2:17" and parse_headers(h).matched_source == "in:0:5"
    assert parse_headers(h[:2]).original is None and parse_headers(h[:2]).matched_source is None
    t = parse_file_tags({"_dedup": {"status": "duplicate", "duplicate_of": "a", "original": "line:3", "matched_source": "line:9"}})
    assert (t.original, t.matched_source) == ("line:3", "line:9")
    assert parse_file_tags({"_dedup": {"status": "duplicate"}}).original is None


def test_pair_json_and_matched_is_root() -> None:
    t = Tags("duplicate", duplicate_of="r", relation="near_duplicate", similarity=0.8, matched="m")
    p = P.Pair(P.Doc("c", "x y z"), t, P.Doc("r", "x y"), P.Doc("m", "x y z w"))
    assert not p.matched_is_root
    assert P.Pair(P.Doc("c", "x"), Tags("duplicate", duplicate_of="r", matched="r")).matched_is_root
    P.complete([p], load_config(environ={}))
    out = p.to_json()
    assert out["diff"] == [{"op": "equal", "text": "x y"}, {"op": "insert", "text": "z"}]
    assert out["matched_diff"] == [{"op": "equal", "text": "x y z"}, {"op": "delete", "text": "w"}]
    assert out["why"]["relation"] and out["why_original"] is not None
    orjson.dumps(out)  # JSON-ready


def test_one_since_grammar_for_every_command() -> None:
    """inspect, tune --replay, the what-if and --rebuild-from-input read --since the same way:
    one parser in the package."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "streamdedup"
    defined = [str(p.relative_to(root)) for p in root.rglob("*.py")
               if any(isinstance(n, ast.FunctionDef) and "since" in n.name for n in ast.walk(ast.parse(p.read_text())))]
    assert defined == ["runtime/since.py"], defined
    assert parse_since("12") == Since("offset", 12) and parse_since("-3") == Since("last", 3)
    assert parse_since("2024-01-02T03:04:05Z") == Since("time", 1704164645000) == parse_since("2024-01-02T03:04:05")
    assert parse_since("earliest") == Since("earliest") and parse_since("48h").kind == "time"
    with pytest.raises(ValueError, match="give earliest, an offset, -N"):
        parse_since("yesterday")


# -- a file-mode output read back -------------------------------------------------------------

def _run(tmp_path: Path, with_positions: bool = False) -> tuple[Path, Path, list[dict]]:
    records = []
    for k in range(12):
        records.append({"id": f"s{k}", "text": story(100 + k, 200)})
        if k % 3 == 1:  # a copy with misspelt words (a copy, not a revision) right after its story
            words = records[-1]["text"].split()
            words[10:12] = [w[:-1] + "q" for w in words[10:12]]
            records.append({"id": f"c{k}", "text": " ".join(words) + " extra tail"})
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    out = tmp_path / "out"
    run_file(load_config(environ={}), str(inp), str(out))
    if with_positions:  # what the position tags (written by newer runs) look like
        line_of = {r["id"]: n for n, r in enumerate(records, start=1)}
        lines = []
        for line in (out / "duplicates.jsonl").read_bytes().splitlines():
            obj = orjson.loads(line)
            obj["_dedup"]["original"] = f"line:{line_of[obj['_dedup']['duplicate_of']]}"
            lines.append(orjson.dumps(obj))
        (out / "duplicates.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return inp, out, records


@pytest.mark.parametrize("with_positions", [False, True])
def test_file_output_pairs_each_copy_with_its_original(tmp_path, with_positions) -> None:
    inp, out, records = _run(tmp_path, with_positions)
    cfg = load_config(environ={})
    src = FileDuplicates(out, cfg, inp if with_positions else None)
    try:
        page = src.read(src.start(None), 100, Filter(), 1000)
        assert page.at_end and [e.doc.id for e in page.entries] == ["c1", "c4", "c7", "c10"]
        got = pairs(src, page.entries, cfg)
        by_id = {r["id"]: r for r in records}
        for p in got:
            assert p.original is not None and p.original.text == by_id["s" + p.copy.id[1:]]["text"], p.missing
            assert p.original.position == ("line:" if with_positions else "unique.jsonl:") + p.original.position.split(":")[1]
            changed = {w for s in p.diff if s.op != "equal" for w in s.words}
            assert {"extra", "tail"} <= changed and sum(w.endswith("q") for w in changed) == 2
            assert p.why is not None and p.why.is_duplicate
        assert [c.copies for c in clusters(page.entries)] == [1, 1, 1, 1]
        latest = src.latest(2, Filter(), 1000)
        assert [e.doc.id for e in latest.entries] == ["c7", "c10"]
        assert [e.doc.id for e in src.read(src.start("-1"), 10, Filter(), 100).entries] == ["c10"]
        assert [e.doc.id for e in src.read({0: 0}, 10, Filter(ids=frozenset({"s4"})), 100).entries] == ["c4"]
        assert src.read({0: 0}, 10, Filter(relations=frozenset({"contains"})), 100).entries == []
        assert src.read({0: 0}, 10, Filter(max_similarity=0.0), 100).entries == []
    finally:
        src.close()


def test_file_source_says_what_it_cannot_fetch(tmp_path) -> None:
    inp, out, _ = _run(tmp_path)
    cfg = load_config(environ={})
    src = FileDuplicates(out, cfg, inp)
    try:
        got = src.fetch([Wanted(None, "nope"), Wanted("line:999", "s1"), Wanted("line:1", "s1")])
        assert "not in unique.jsonl" in got[Wanted(None, "nope")]
        assert "beyond the input" in got[Wanted("line:999", "s1")]
        assert "holds id s0, not s1" in got[Wanted("line:1", "s1")]
    finally:
        src.close()
    with pytest.raises(InspectError, match="no duplicates.jsonl"):
        FileDuplicates(tmp_path, cfg)


def test_follow_yields_lines_appended_after_the_start(tmp_path) -> None:
    _, out, _ = _run(tmp_path)
    cfg = load_config(environ={})
    src = FileDuplicates(out, cfg)
    try:
        dup_file = out / "duplicates.jsonl"
        lines = dup_file.read_bytes().splitlines(keepends=True)
        dup_file.write_bytes(b"".join(lines[:2]) + lines[2][:10])  # a line still being written
        pages = follow(src, {0: 1}, Filter(), poll_s=0.01, idle_s=0.05)
        assert [e.doc.id for e in next(pages)] == ["c4"]  # the partial line is not read yet
        with open(dup_file, "ab") as f:
            f.write(lines[2][10:] + lines[3])
        assert [e.doc.id for e in next(pages)] == ["c7", "c10"]
        assert next(pages, None) is None  # idle: the tail ends
    finally:
        src.close()


@pytest.mark.parametrize("value", [b"abc", b"nan", b"inf", b"-inf", b"1e999"])
def test_a_numeric_tag_that_is_no_finite_number_is_named_malformed(value) -> None:
    t = parse_headers([("dedup.status", b"duplicate"), ("dedup.similarity", b"0.9"), ("dedup.ld_similarity", value)])
    assert (t.similarity, t.ld_similarity, t.malformed) == (0.9, None, ("ld_similarity",))


def test_file_tags_of_the_wrong_json_types_are_named_malformed() -> None:
    t = parse_file_tags({"_dedup": {"status": "duplicate", "similarity": "abc", "duplicate_of": [1], "relation": "exact"}})
    assert (t.similarity, t.duplicate_of, t.relation) == (None, None, "exact")
    assert set(t.malformed) == {"similarity", "duplicate_of"}
    assert parse_file_tags({"_dedup": "not an object"}).malformed == ("_dedup",)
