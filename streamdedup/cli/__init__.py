"""The ``streamdedup`` command line (entry point ``streamdedup.cli:main``)."""

from __future__ import annotations

import click

from ..errors import StreamdedupError
from .bench import bench
from .demo import demo
from .explain import explain
from .run import run, topics
from .tune import tune
from .warmup import warm_up


class _Main(click.Group):
    """The top-level group: a :class:`~streamdedup.errors.StreamdedupError` (a missing extra, a
    state of another version, ...) ends the command with its one-line message and exit code 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except StreamdedupError as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="streamdedup")
def main() -> None:
    """Streaming near-duplicate filter for news pipelines."""


main.add_command(explain)
main.add_command(tune)
main.add_command(bench)
main.add_command(demo)
main.add_command(run)
main.add_command(topics)
main.add_command(warm_up)
