"""Helpers shared by the CLI commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from streamdedup.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from streamdedup.config import Config

COMPILE_NOTICE = (
    "compiling the Numba kernels into their on-disk cache (once after an install or upgrade, ~40 s on two cores; "
    "'streamdedup warm-up' does it ahead of time)"
)
_notice = {"said": False}


def compile_notice() -> None:
    """Say :data:`COMPILE_NOTICE` on stderr, once per command (the CLI resets it per command)."""
    if not _notice["said"]:
        _notice["said"] = True
        click.echo(COMPILE_NOTICE, err=True)


def reset_compile_notice() -> None:
    _notice["said"] = False


def fill_kernel_cache(cfg: Config, need: str) -> None:
    """Compile the kernels a run of kind ``need`` (``kernel_cache.NEEDS``) calls and the cache
    lacks, in parallel processes, after the notice; nothing when they are cached."""
    from streamdedup.warmup.fill import NEEDS, fill

    fill(cfg, NEEDS[need], announce=compile_notice)


config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), default=None,
    help="YAML config file (defaults: built-in, same as config/default.yaml); STREAMDEDUP_* env vars override.",
)


def get_config(path: str | None) -> Config:
    # imported here, as rich below: `import streamdedup.cli` stays light (click), so that the
    # command line's start-up (`_startup.begin`) comes before the heavy imports
    from streamdedup.config import load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        # a fatal error like any other (exit 1, one line), not a usage error: the command line
        # was right, the configuration it names is not
        raise click.ClickException(str(exc)) from None


def make_console() -> Console:
    """A console that keeps tables readable when output goes to a file or CI log."""
    from rich.console import Console

    probe = Console()
    return probe if probe.is_terminal else Console(width=140)


def kafka_overrides(cfg: Config, bootstrap_servers: str | None, input_topics: tuple[str, ...]) -> Config:
    """``cfg`` with the command line's broker and input topics, where given."""
    updates: dict = {}
    if bootstrap_servers:
        updates["bootstrap_servers"] = bootstrap_servers
    if input_topics:
        updates["input_topics"] = tuple(input_topics)
    return cfg.model_copy(update={"kafka": cfg.kafka.model_copy(update=updates)}) if updates else cfg
