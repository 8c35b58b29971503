"""The ``streamdedup`` command line (entry point ``streamdedup.cli:main``)."""

from __future__ import annotations

import click

from streamdedup._kernels.cache import on_first_compile
from streamdedup.cli._common import COMPILE_NOTICE, compile_notice, reset_compile_notice
from streamdedup.cli._fatal import fatal_message
from streamdedup.cli.bench import bench
from streamdedup.cli.bench_cost import bench_cost
from streamdedup.cli.demo import demo
from streamdedup.cli.explain import explain
from streamdedup.cli.inspect import inspect
from streamdedup.cli.run import run, topics
from streamdedup.cli.tune import tune
from streamdedup.cli.ui import ui
from streamdedup.cli.warmup import warm_up

#: commands that say what they compile themselves
_OWN_NOTICE = frozenset({"warm-up"})
_STOP_NOTICE = "streamdedup.stop_compile_notice"


class _Main(click.Group):
    """The top-level group: any error ends the command with one line naming it (and one JSON
    log line when the JSON logger is on) and exit code 1, the traceback only with ``--debug``;
    a command that starts compiling a kernel (the cache lacks it) says so once on stderr."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, cmd, rest = super().resolve_command(ctx, args)
        if name not in _OWN_NOTICE and _STOP_NOTICE not in ctx.meta:
            # the notice comes when a compile starts, not from a guess beforehand: a cached
            # kernel says nothing, and a refusal (a missing extra, a bad option) stays one line
            ctx.meta[_STOP_NOTICE] = on_first_compile(compile_notice)
        return name, cmd, rest

    def invoke(self, ctx: click.Context):
        reset_compile_notice()
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(fatal_message(exc)) from None
        finally:
            ctx.meta.pop(_STOP_NOTICE, lambda: None)()


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="streamdedup")
@click.option("--debug", is_flag=True, help="Show the traceback of a fatal error (default: one line naming it).")
def main(debug: bool) -> None:
    """Streaming near-duplicate filter for news pipelines."""


main.add_command(explain)
main.add_command(inspect)
main.add_command(tune)
main.add_command(ui)
bench.add_command(bench_cost)
main.add_command(bench)
main.add_command(demo)
main.add_command(run)
main.add_command(topics)
main.add_command(warm_up)
