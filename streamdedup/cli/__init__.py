"""The ``streamdedup`` command line (entry point ``streamdedup.cli:main``)."""

from __future__ import annotations

import click

from ._fatal import fatal_message
from .bench import bench
from .demo import demo
from .explain import explain
from .run import run, topics
from .tune import tune
from .warmup import warm_up

#: the commands that call the Numba kernels (``tune``, ``topics`` and ``warm-up`` itself get no
#: notice)
KERNEL_COMMANDS = frozenset({"run", "demo", "bench", "explain"})
COMPILE_NOTICE = (
    "compiling the Numba kernels not in the cache yet (up to a minute on the first run after an install; "
    "cached afterwards, or run 'streamdedup warm-up' first)"
)


class _Main(click.Group):
    """The top-level group: any error ends the command with one line naming it (and one JSON
    log line when the JSON logger is on) and exit code 1, the traceback only with ``--debug``;
    a command about to compile kernels says so on stderr first."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        # not in the group's callback: that runs before the subcommand parses ``--help``, and
        # only here are the subcommand's arguments still in sight
        name, cmd, rest = super().resolve_command(ctx, args)
        asks_help = any(a in ctx.help_option_names for a in rest)
        bare_group = isinstance(cmd, click.Group) and not rest  # prints its usage only
        if name in KERNEL_COMMANDS and not (asks_help or bare_group or ctx.resilient_parsing):
            from .._kernels.cache import missing_kernels

            if missing_kernels():
                click.echo(COMPILE_NOTICE, err=True)
        return name, cmd, rest

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(fatal_message(exc)) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="streamdedup")
@click.option("--debug", is_flag=True, help="Show the traceback of a fatal error (default: one line naming it).")
def main(debug: bool) -> None:
    """Streaming near-duplicate filter for news pipelines."""


main.add_command(explain)
main.add_command(tune)
main.add_command(bench)
main.add_command(demo)
main.add_command(run)
main.add_command(topics)
main.add_command(warm_up)
