"""The file-mode demo: its outputs, the config it writes, and the commands it tells a user to run next."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import orjson
from click.testing import CliRunner

from streamdedup import load_config
from streamdedup.cli import main
from streamdedup.cli.demo import shell_command

REPO = Path(__file__).resolve().parents[2]


def _next_commands(output: str) -> list[list[str]]:
    """The arguments of the command lines the demo printed (their comments and the program's
    name, ``streamdedup`` or a path to it, dropped)."""
    lines = [shlex.split(line.split("#")[0]) for line in output.splitlines() if line.startswith("  ") and " --config " in line]
    return [words[next(i for i, w in enumerate(words) if w in ("inspect", "ui", "tune")):] for words in lines]


def test_the_program_is_named_as_a_new_shell_finds_it(monkeypatch, tmp_path) -> None:
    """On PATH: its name; a virtualenv nobody activated: the path of its script."""
    script = tmp_path / "bin" / "streamdedup"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert shell_command() == str(script)
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin")
    assert shell_command() == "streamdedup"


def test_the_file_demo_writes_a_config_and_its_next_commands_work(tmp_path) -> None:
    out = tmp_path / "demo"
    res = CliRunner().invoke(main, ["demo", "--mode", "file", "--stories", "200", "--output-dir", str(out)], prog_name="streamdedup")
    assert res.exit_code == 0, res.output
    assert "reconciles: True" in res.output
    cfg = load_config(str(out / "demo-file.yaml"))
    assert cfg.input.text_fields == ("title", "text") and cfg.input.time_field == "time"
    commands = _next_commands(res.output)
    assert [c[0] for c in commands] == ["inspect", "ui", "tune"]
    # every command but the server runs as printed, on the demo's outputs
    for args in commands:
        if args[0] == "ui":
            continue
        ran = CliRunner().invoke(main, args, prog_name="streamdedup")
        assert ran.exit_code == 0, (args, ran.output)
        if args[0] == "tune":
            assert "would flip:" in ran.output


def _tune(feed, conf, *settings: str) -> dict:
    args = ["tune", "--config", str(conf), "--replay", str(feed), "--json", "--show", "0"]
    for s in settings:
        args += ["--set", s]
    res = CliRunner().invoke(main, args, prog_name="streamdedup")
    assert res.exit_code == 0, res.output
    return orjson.loads(res.stdout)


def _some(n: int, one: str, many: str) -> str:
    return "none" if n == 0 else f"{n} {one if n == 1 else many}"


def _flat(path) -> str:
    return " ".join((REPO / path).read_text().split())


def test_the_tune_example_in_the_docs_says_what_a_run_of_it_prints(tmp_path) -> None:
    """The README's and getting-started's tune figures come from this run of the example on the
    demo's feed: a change in the decisions fails here until the text is updated."""
    from streamdedup.cli.demo import DEMO_INPUT, build_feed, write_demo_config

    lines, _ = build_feed(4000, 3)  # the demo's feed (its default seed)
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"\n".join(lines) + b"\n")
    conf = write_demo_config(tmp_path / "demo.yaml", {"input": DEMO_INPUT})
    first = _tune(feed, conf, "verify.jaccard_threshold=0.7")
    both = _tune(feed, conf, "verify.jaccard_threshold=0.7", "verify.ld_min_jaccard=0.7")
    flips = both["flips"]
    to_unique = (f"{_some(flips.get('duplicate->unique', 0), 'duplicate', 'duplicates')} and "
                 f"{_some(flips.get('revision->unique', 0), 'revision', 'revisions')}")
    alone = _some(first["flips"].get("duplicate->unique", 0), "duplicate", "duplicates")
    ld = first["kept_by_rule"].get("LD similarity", 0)
    readme = (f"On the demo's {both['records']:,}-record feed both settings turn {to_unique} into plain unique "
              f"records and change the original or relation of {flips.get('duplicate changed', 0)} duplicates; the "
              f"first alone turns {alone} unique ({ld} are kept by the LD rule) and changes "
              f"{first['flips'].get('duplicate changed', 0)}.")
    assert readme in _flat("README.md"), readme
    guide = (f"On the demo's {both['records']:,}-record feed, `--set verify.jaccard_threshold=0.7` turns {alone} "
             f"back to unique ({ld} are kept by the LD rule); adding `--set verify.ld_min_jaccard=0.7` turns "
             f"{to_unique} into plain unique records.")
    assert guide in _flat("docs/getting-started.md"), guide
    # the rule table sums to the duplicates the candidate keeps
    assert sum(both["kept_by_rule"].values()) == both["candidate"]["duplicate"]
