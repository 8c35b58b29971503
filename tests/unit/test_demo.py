"""The file-mode demo: its outputs, the config it writes, and the commands it tells a user to run next."""

from __future__ import annotations

import shlex

from click.testing import CliRunner

from streamdedup import load_config
from streamdedup.cli import main


def _next_commands(output: str) -> list[list[str]]:
    """The ``streamdedup ...`` command lines the demo printed (their comments dropped)."""
    lines = [line.split("#")[0].strip() for line in output.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("streamdedup ")]


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
