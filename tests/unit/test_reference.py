"""The configuration and CLI references in docs/reference are generated from the code
(scripts/gen_reference.py): every setting, command and option has a description, and the
committed pages are what the generator writes today."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from gen_reference import CLI_PAGE, CONFIG_PAGE, commands, env_name, pages, sections, settings, undocumented  # noqa: E402


def test_every_setting_command_and_option_has_a_description() -> None:
    assert undocumented() == [], "describe these in streamdedup/config.py (Field) or their click definitions"


def test_the_committed_reference_is_current() -> None:
    for page, text in pages().items():
        assert page.read_text(encoding="utf-8") == text, (
            f"{page.relative_to(ROOT)} is stale: run `python scripts/gen_reference.py` and commit it")


def test_the_reference_names_every_setting_and_command() -> None:
    """Not vacuous: the walks see the whole model and every command."""
    config, cli = CONFIG_PAGE.read_text(encoding="utf-8"), CLI_PAGE.read_text(encoding="utf-8")
    names = [".".join((*path, name)) for path, model in sections() for name, _ in settings(model)]
    assert len(names) > 60 and "verify.jaccard_threshold" in names and "kafka.staged.decisions_topic" in names
    for name in names:
        assert f"`{name}`" in config and f"`{env_name(tuple(name.split('.')))}`" in config
    paths = [ctx.command_path for _, ctx in commands()]
    assert "streamdedup bench kafka" in paths and "streamdedup topics create" in paths
    assert all(f"## {p}\n" in cli for p in paths)


def test_default_yaml_holds_the_reference_defaults() -> None:
    """config/default.yaml and the reference say the same: every documented setting is in the
    file with the model's default (test_config checks each appears once and nothing else)."""
    tree = yaml.safe_load((ROOT / "config" / "default.yaml").read_text(encoding="utf-8"))
    for path, model in sections():
        node = tree
        for part in path:
            node = node[part]
        for name, field in settings(model):
            default = field.get_default(call_default_factory=True)
            if isinstance(default, SecretStr):
                default = default.get_secret_value()
            value = node[name]
            if isinstance(default, tuple):
                value = tuple(value)
            assert value == default, f"config/default.yaml {'.'.join((*path, name))}: {value!r}, the model says {default!r}"
