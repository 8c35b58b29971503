"""Streaming file mode: every line in exactly one output, splicing, dead letters, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from streamdedup import load_config
from streamdedup.cli import main
from streamdedup.runtime.filemode import run_file
from tests.unit.test_engine import story, typo

MALFORMED = [
    b"not json at all",
    b'{"id": "no-text"}',
    b'{"id": "bad-type", "text": 42}',
    b"\xff\xfe\xfd",
    b'{"id": "blank", "text": "   \\n "}',
    b'["a", "list"]',
    b'{"id": "punct", "text": "!!! ???"}',
    b'{"id": {"nested": 1}, "text": "a real text here"}',
    b"",
    b'{"id": "surrogate", "text": "\\ud800 lone"}',
]


def _write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _good_lines(n: int) -> list[bytes]:
    out = []
    for k in range(n):
        base = story(500 + k // 3)
        text = base if k % 3 == 0 else typo(base, k)
        out.append(orjson.dumps({"id": f"doc-{k}", "extra": {"keep": [1, 2]}, "text": text}))
    return out


def test_every_line_lands_once_with_reasons(tmp_path) -> None:
    lines = _good_lines(30)
    for k, bad in enumerate(MALFORMED):
        lines.insert(3 * k + 1, bad)
    lines.append(b'{"id": "big", "text": "' + b"x " * 3000 + b'"}')
    inp = tmp_path / "in.jsonl"
    _write(inp, lines)
    cfg = load_config(environ={"STREAMDEDUP_INPUT__MAX_RECORD_BYTES": "4000"})
    summary = run_file(cfg, str(inp), str(tmp_path / "out"))
    unique, dups, dead = (_read(tmp_path / "out" / f"{n}.jsonl") for n in ("unique", "duplicates", "dead_letter"))
    assert summary.records == len(lines) == len(unique) + len(dups) + len(dead)
    assert summary.reconciles()
    assert len(dead) == len(MALFORMED) + 1
    stages = {d["line"]: (d["stage"], d["reason"]) for d in dead}
    assert all(reason for _, reason in stages.values())
    assert {s for s, _ in stages.values()} == {"json", "fields", "utf8", "text", "size"}
    assert any("raw_base64" in d for d in dead)  # invalid UTF-8 kept losslessly
    # 30 good lines: 10 originals and 20 typo copies
    assert len(dups) == 20 and len(unique) == 10
    for d in dups:
        assert d["_dedup"]["status"] == "duplicate"
        assert d["_dedup"]["duplicate_of"] == f"doc-{int(d['id'].split('-')[1]) // 3 * 3}"
        assert d["extra"] == {"keep": [1, 2]}


def test_output_is_the_input_bytes_plus_tags(tmp_path) -> None:
    raw = b'{"id":"k1",  "text": "' + story(1).encode() + b'", "z": 1.50}'
    inp = tmp_path / "in.jsonl"
    _write(inp, [raw])
    run_file(load_config(), str(inp), str(tmp_path / "out"))
    line = (tmp_path / "out" / "unique.jsonl").read_bytes().rstrip(b"\n")
    assert line.startswith(raw[:-1])  # original bytes untouched (spacing, 1.50)
    assert json.loads(line)["_dedup"] == {"status": "unique", "duplicate_of": None, "relation": None, "similarity": None}


def test_two_halves_equal_one_run_and_same_file_resumes(tmp_path) -> None:
    lines = _good_lines(60)
    whole, first, second = tmp_path / "whole.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write(whole, lines)
    _write(first, lines[:25])
    _write(second, lines[25:])
    cfg = load_config(environ={"STREAMDEDUP_ENGINE__BATCH_SIZE": "8"})
    run_file(cfg, str(whole), str(tmp_path / "one"))
    run_file(cfg, str(first), str(tmp_path / "two"))
    run_file(cfg, str(second), str(tmp_path / "two"))

    def decisions(d: Path) -> list:
        rows = _read(d / "unique.jsonl") + _read(d / "duplicates.jsonl")
        return sorted((r["id"], r["_dedup"]["status"], r["_dedup"]["duplicate_of"], r["_dedup"]["relation"]) for r in rows)

    assert decisions(tmp_path / "one") == decisions(tmp_path / "two")
    # stopping part-way through a file and running again on the same file resumes after it
    run_file(cfg, str(whole), str(tmp_path / "three"), stop_after=33)
    again = run_file(cfg, str(whole), str(tmp_path / "three"))
    assert again.skipped_resumed == 33
    assert decisions(tmp_path / "three") == decisions(tmp_path / "one")


def test_cli_run_prints_summary_and_config_errors_name_the_setting(tmp_path) -> None:
    inp = tmp_path / "in.jsonl"
    _write(inp, _good_lines(6) + [b"oops"])
    res = CliRunner().invoke(main, ["run", "--input", str(inp), "--output-dir", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "7 lines" in res.output and "dead-letter 1" in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("engine:\n  window_hours: -1\n")
    res = CliRunner().invoke(main, ["run", "--config", str(bad), "--input", str(inp), "--output-dir", str(tmp_path / "p")])
    assert res.exit_code != 0 and "engine.window_hours" in res.output


def test_a_crash_between_batches_writes_no_dead_letter_twice(tmp_path, monkeypatch) -> None:
    # dead letters after the first batch's last line must wait for the commit that covers
    # them: the run that resumes after the crash writes them (again, if they had gone early)
    from streamdedup.runtime import filemode

    lines = _good_lines(24)
    for at in (10, 17, 23):
        lines.insert(at, b"{not json")
    inp = tmp_path / "in.jsonl"
    _write(inp, lines)
    cfg = load_config(environ={"STREAMDEDUP_ENGINE__BATCH_SIZE": "8"})
    real_flush = filemode._flush
    calls = []

    def crash_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return real_flush(*args, **kwargs)

    monkeypatch.setattr(filemode, "_flush", crash_on_second)
    try:
        run_file(cfg, str(inp), str(tmp_path / "out"))
    except KeyboardInterrupt:
        pass
    monkeypatch.setattr(filemode, "_flush", real_flush)
    run_file(cfg, str(inp), str(tmp_path / "out"))
    unique, dups, dead = (_read(tmp_path / "out" / f"{n}.jsonl") for n in ("unique", "duplicates", "dead_letter"))
    assert sorted(d["line"] for d in dead) == [11, 18, 24]
    assert len(unique) + len(dups) + len(dead) == len(lines)
