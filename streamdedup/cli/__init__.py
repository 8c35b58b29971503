"""The ``streamdedup`` command line (entry point ``streamdedup.cli:main``)."""

from __future__ import annotations

import click

from .bench import bench
from .demo import demo
from .explain import explain
from .run import run, topics
from .tune import tune


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="streamdedup")
def main() -> None:
    """Streaming near-duplicate filter for news pipelines."""


main.add_command(explain)
main.add_command(tune)
main.add_command(bench)
main.add_command(demo)
main.add_command(run)
main.add_command(topics)
