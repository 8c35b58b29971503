"""The ``streamdedup`` command line (entry point ``streamdedup.cli:main``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from importlib import import_module
from typing import Callable

import click

from streamdedup.cli import _startup
from streamdedup.cli._common import COMPILE_NOTICE, compile_notice, reset_compile_notice
from streamdedup.cli._fatal import fatal_message

#: commands that say what they compile themselves
_OWN_NOTICE = frozenset({"warm-up"})
#: commands that end the start-up themselves (``_startup.done``)
_OWN_STARTUP = frozenset({"run"})
_STOP_NOTICE = "streamdedup.stop_compile_notice"


def on_first_compile(callback: Callable[[], None]) -> Callable[[], None]:
    """:func:`streamdedup._kernels.cache.on_first_compile`, imported when a command is looked
    up: it loads NumPy and Numba, which ``import streamdedup.cli`` does not."""
    from streamdedup._kernels.cache import on_first_compile as listen

    return listen(callback)


def _command(module: str, name: str) -> Callable[[], click.Command]:
    return lambda: getattr(import_module(f"streamdedup.cli.{module}"), name)


def _bench() -> click.Command:
    from streamdedup.cli.bench import bench
    from streamdedup.cli.bench_cost import bench_cost

    bench.add_command(bench_cost)
    return bench


class _Commands(MutableMapping):
    """The subcommands by name, each module imported when its command is first looked up: a
    run loads the pipeline, not the web inspector, the benchmarks or the what-if replay."""

    def __init__(self, lazy: dict[str, Callable[[], click.Command]]):
        self._lazy = lazy
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in self._lazy:
                raise KeyError(name)
            self._loaded[name] = self._lazy.pop(name)()
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._lazy.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name in self._loaded:
            del self._loaded[name]
        else:
            del self._lazy[name]

    def __iter__(self):
        return iter([*self._loaded, *self._lazy])

    def __len__(self) -> int:
        return len(self._loaded) + len(self._lazy)


class _Main(click.Group):
    """The top-level group: any error ends the command with one line naming it (and one JSON
    log line when the JSON logger is on) and exit code 1, the traceback only with ``--debug``;
    a command that starts compiling a kernel (the cache lacks it) says so once on stderr."""

    def main(self, args=None, *rest, **kwargs):
        if args is None:
            # the process's own command line (the console script), not a caller's (CliRunner)
            _startup.begin()
        return super().main(args, *rest, **kwargs)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, cmd, rest = super().resolve_command(ctx, args)
        if name not in _OWN_NOTICE and _STOP_NOTICE not in ctx.meta:
            _startup.load_numeric()
            # the notice comes when a compile starts, not from a guess beforehand: a cached
            # kernel says nothing, and a refusal (a missing extra, a bad option) stays one line
            ctx.meta[_STOP_NOTICE] = on_first_compile(compile_notice)
        # `run` ends the start-up itself, once it has imported what its mode needs
        if name not in _OWN_STARTUP:
            _startup.done()
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


def _version(ctx: click.Context, _param, value: bool) -> None:
    """``--version``: the release and the formats it writes and reads (the modules that hold them
    load the kernels' module, so only when asked)."""
    if not value or ctx.resilient_parsing:
        return
    from streamdedup import __version__
    from streamdedup._kernels.fprecords import CODEC_VERSION, TEXT_FREE_VERSION
    from streamdedup._kernels.records import ENGINE_VERSION, ENGINE_VERSION_READ
    from streamdedup.engine.checkpoint import META_VERSION

    click.echo(f"streamdedup {__version__}: state records v{ENGINE_VERSION} (reads v{ENGINE_VERSION_READ}-"
               f"v{ENGINE_VERSION}), state metadata v{META_VERSION}, fingerprint records v{CODEC_VERSION} "
               f"(text-free v{TEXT_FREE_VERSION})")
    ctx.exit()


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version, the state's and the fingerprint records' formats, and exit.")
@click.option("--debug", is_flag=True, help="Show the traceback of a fatal error (default: one line naming it).")
def main(debug: bool) -> None:
    """Streaming near-duplicate filter for news pipelines."""


main.commands = _Commands({
    "explain": _command("explain", "explain"),
    "fingerprint": _command("fingerprint", "fingerprint"),
    "inspect": _command("inspect", "inspect"),
    "tune": _command("tune", "tune"),
    "ui": _command("ui", "ui"),
    "bench": _bench,
    "demo": _command("demo", "demo"),
    "run": _command("run", "run"),
    "topics": _command("run", "topics"),
    "warm-up": _command("warmup", "warm_up"),
})
