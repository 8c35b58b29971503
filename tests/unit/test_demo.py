"""The file-mode demo: its outputs, the config it writes, and the commands it tells a user to run next."""

from __future__ import annotations

import shlex
import sys

from click.testing import CliRunner

from streamdedup import load_config
from streamdedup.cli import main
from streamdedup.cli.demo import shell_command


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
