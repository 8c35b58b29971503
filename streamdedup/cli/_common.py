"""Helpers shared by the CLI commands."""

from __future__ import annotations

import click
from rich.console import Console

from ..config import Config, load_config
from ..errors import ConfigError

config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None,
    help="YAML config file (defaults: built-in, same as config/default.yaml); STREAMDEDUP_* env vars override.",
)


def get_config(path: str | None) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def make_console() -> Console:
    """A console that keeps tables readable when output goes to a file or CI log."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=140)
