"""``streamdedup inspect``'s rendering (diff colours, elision, why-matched, thresholds) and the
command on a file-mode output directory."""

from __future__ import annotations

import orjson
from click.testing import CliRunner
from rich.console import Console

from streamdedup import load_config
from streamdedup.cli import main
from streamdedup.cli.inspect_view import DELETED, INSERTED, diff_text, render_pair
from streamdedup.tools.inspection.pair import Doc, Pair, Segment, complete, word_diff
from streamdedup.pipeline.tags import Tags
from tests.unit.test_engine import story
from tests.unit.test_inspect_pair import _run


def _styled(text, style: str) -> list[str]:
    return [text.plain[s.start:s.end] for s in text.spans if s.style == style]


def test_each_side_shows_its_own_changes_in_its_colour() -> None:
    diff = word_diff("the bank left rates unchanged", "the bank raised rates")
    earlier, copy = diff_text(diff, "earlier"), diff_text(diff, "copy")
    assert earlier.plain == "the bank left rates unchanged" and copy.plain == "the bank raised rates"
    assert _styled(earlier, DELETED) == ["left", "unchanged"] and _styled(earlier, INSERTED) == []
    assert _styled(copy, INSERTED) == ["raised"] and _styled(copy, DELETED) == []


def test_long_unchanged_runs_are_elided_around_changes() -> None:
    words = tuple(f"w{i}" for i in range(100))
    diff = [Segment("equal", words), Segment("insert", ("NEW",)), Segment("equal", words)]
    t = diff_text(diff, "copy", context=3)
    assert t.plain == "[... 97 words ...] w97 w98 w99 NEW w0 w1 w2 [... 97 words ...]"
    assert diff_text(diff, "copy", context=-1).plain.count(" ") == 200
    same = diff_text([Segment("equal", words)], "copy", context=2)
    assert same.plain == "w0 w1 w2 w3 [... 96 words ...]"


def _render(p: Pair, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(render_pair(p, load_config(environ={}).verify))
    return console.export_text()


def test_a_pair_shows_both_texts_why_and_the_thresholds() -> None:
    base = story(5, 150)
    words = base.split()
    copy = " ".join(words[:10] + ["CHANGED"] + words[11:])
    p = Pair(Doc("c1", copy, "dups:0:4"), Tags("duplicate", duplicate_of="o1", relation="near_duplicate", similarity=0.93,
                                               ld_similarity=0.97, matched="o1", reason="Jaccard 0.93 >= 0.55"),
             Doc("o1", base, "in:0:1"))
    p.matched = p.original
    complete([p], load_config(environ={}))
    out = _render(p)
    for needle in ("original o1 @ in:0:1", "copy c1 @ dups:0:4", "CHANGED", words[10], "near_duplicate (duplicate)",
                   "shared LSH bands", "Jaccard >= 0.55", "LD similarity >= 0.65", "engine's reason: Jaccard 0.93",
                   "of a short copy in its original: >= 0.5", "shared character bands"):
        assert needle in out, needle
    assert "matched a later copy" not in out


def test_a_matched_document_other_than_the_root_gets_its_own_diff_and_column() -> None:
    root, matched = story(6, 150), story(6, 150) + " a later paragraph added to the story"
    copy = matched + " and one more"
    t = Tags("duplicate", duplicate_of="r", relation="near_duplicate", similarity=0.9, matched="m")
    p = Pair(Doc("c", copy), t, Doc("r", root), Doc("m", matched))
    complete([p], load_config(environ={}))
    assert p.matched_diff is not None and p.why_original is not None
    out = _render(p, 240)
    assert "matched a later copy of the original" in out and "matched m" in out
    assert "copy vs matched (decided)" in out and "copy vs original (root)" in out


def test_a_missing_original_is_said_not_hidden() -> None:
    p = Pair(Doc("c", "some words here"), Tags("duplicate", duplicate_of="gone", relation="exact", matched="gone"))
    p.missing.append("original gone: not among the last 10 records")
    out = _render(p)
    assert "original gone (not fetched)" in out and "not among the last 10 records" in out


def _invoke(args: list[str]):
    return CliRunner().invoke(main, ["inspect", *args], prog_name="streamdedup", env={})


def test_cli_json_and_clusters_on_a_file_output(tmp_path) -> None:
    inp, out, records = _run(tmp_path)
    res = _invoke(["--dir", str(out), "--json", "--since", "0", "--limit", "3"])
    assert res.exit_code == 0, res.output
    shown = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert [p["copy"]["id"] for p in shown] == ["c1", "c4", "c7"]
    assert all(" ".join(s["text"] for s in p["diff"] if s["op"] == "insert").count("q ") >= 2 for p in shown)
    latest = _invoke(["--dir", str(out), "--json", "--limit", "1", "--input", str(inp)])
    assert [orjson.loads(x)["original"]["id"] for x in latest.stdout.splitlines()] == ["s10"]
    res = _invoke(["--dir", str(out), "--json", "--clusters"])
    assert sorted(orjson.loads(x)["root"] for x in res.stdout.splitlines()) == ["s1", "s10", "s4", "s7"]
    table = _invoke(["--dir", str(out), "--limit", "1"])
    assert table.exit_code == 0 and "copy c10" in table.output and "original s10" in table.output
    none = _invoke(["--dir", str(out), "--min-similarity", "1.0", "--max-similarity", "1.0"])
    assert "no duplicates matched among 4 records read" in none.output


def test_cli_refusals_are_one_line(tmp_path) -> None:
    inp, out, _ = _run(tmp_path)
    for args, says in [(["--dir", str(out), "--since", "yesterday"], "give earliest, an offset, -N"),
                       (["--input", str(inp)], "--input goes with --output-dir"),
                       (["--dir", str(out), "--since", "2024-01-01"], "needs input.time_field"),
                       (["--dir", str(out), "--min-similarity", "0.9", "--max-similarity", "0.5"], "is above"),
                       (["--dir", str(tmp_path)], "no duplicates.jsonl")]:
        res = _invoke(args)
        assert res.exit_code != 0 and says in res.output, (args, res.output)
        assert "Traceback" not in res.output


def test_a_run_with_other_field_names_needs_its_config_and_inspect_says_so(tmp_path) -> None:
    from streamdedup.runtime.filemode import run_file

    records = []
    for k in range(4):
        records.append({"key": f"s{k}", "body": story(300 + k, 200)})
        records.append({"key": f"c{k}", "body": records[-1]["body"] + " extra tail"})
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    cfg_file = tmp_path / "feed.yaml"
    cfg_file.write_text("input:\n  id_field: key\n  text_fields: [body]\n")
    out = tmp_path / "out"
    run_file(load_config(str(cfg_file), environ={}), str(inp), str(out))
    bare = _invoke(["--dir", str(out), "--since", "0"])
    assert bare.exit_code != 0, bare.output
    assert "could not be decoded with these input settings" in bare.output and "['text']" in bare.output
    assert "none of the 4 duplicates read could be decoded" in bare.output and "--config FILE" in bare.output
    given = _invoke(["--config", str(cfg_file), "--dir", str(out), "--since", "0", "--json"])
    assert given.exit_code == 0, given.output
    assert sorted(orjson.loads(x)["copy"]["id"] for x in given.stdout.splitlines()) == ["c0", "c1", "c2", "c3"]


def test_control_characters_in_ids_and_texts_reach_the_terminal_escaped() -> None:
    """A clear-screen, a window title, a hyperlink, a bidi override in a record: shown, not run."""
    hostile = ["\x1b[2J", "\x1b]0;owned\x07", "\x1b]8;;http://evil.example\x1b\\link", "\u202e", "\x9b31m"]
    base = story(6, 120)
    copy = base + " " + " ".join(hostile)
    p = Pair(Doc("c\x1b[2J", copy, "dups:0:4\x1b[31m"), Tags("duplicate", duplicate_of="o\x07", relation="near\x1b[5m",
                                                           matched="o\x07", reason="why\x1b[8m"), Doc("o\x07", base, "in:0:1"))
    p.matched = p.original
    complete([p], load_config(environ={}))
    p.missing.append("missing \x1b[2J")
    console = Console(width=200, record=True, color_system=None, force_terminal=False)
    console.print(render_pair(p, load_config(environ={}).verify))
    out = console.export_text()
    assert not any(c in out for c in "\x1b\x07\x9b\u202e"), repr(out)
    assert "c\\x1b[2J" in out and "\\x1b]0;owned\\x07" in out and "\\u202e" in out


def test_ids_that_look_like_rich_markup_are_shown_as_written() -> None:
    """An id such as "[/bold]" closed a tag nobody opened (rich raised MarkupError: inspect
    crashed); "[link=...]" would have made a hyperlink."""
    from streamdedup.cli.inspect_view import clusters_table
    from streamdedup.tools.inspection.reader import clusters

    base = story(7, 120)
    p = Pair(Doc("[/bold]", base + " more", "dups:0:[b]"), Tags("duplicate", duplicate_of="[link=http://evil.example]o",
                                                               relation="near_duplicate", matched="[link=http://evil.example]o"),
             Doc("[link=http://evil.example]o", base, "in:0:1"))
    p.matched = p.original
    complete([p], load_config(environ={}))
    out = _render(p)
    assert "copy [/bold] @ dups:0:[b]" in out and "original [link=http://evil.example]o" in out
    console = Console(width=200, record=True, color_system=None)
    from streamdedup.tools.inspection.reader import Entry

    entry = Entry(0, 1, Tags("duplicate", duplicate_of="[link=x]root", relation="exact", original="in:0:[/b]"),
                  Doc("[/bold]", base, "dups:0:1"))
    console.print(clusters_table(clusters([entry]), 1, 10))
    assert "[link=x]root" in console.export_text()
