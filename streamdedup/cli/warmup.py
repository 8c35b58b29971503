"""``streamdedup warm-up``: compile every Numba kernel into the on-disk cache, so that the first
real run starts in seconds (the Dockerfile runs it at image build)."""

from __future__ import annotations

import time

import click

from streamdedup.cli._common import config_option, get_config


@click.command("warm-up")
@config_option
@click.option("--processes", type=click.IntRange(1, 64), default=None,
              help="Compile in this many processes at most (default: one per CPU).")
def warm_up(config_path: str | None, processes: int | None) -> None:
    """Compile the Numba kernels into their on-disk cache (~20 s of CPU once; seconds when cached)."""
    from streamdedup._kernels.cache import cache_dir, missing_kernels
    from streamdedup.warmup.fill import NEEDS, fill

    cfg = get_config(config_path)
    cold = missing_kernels()
    click.echo(f"{'compiling' if cold else 'loading'} the Numba kernels (cache: {cache_dir()}) ...", err=True)
    t0 = time.perf_counter()
    # every unit, cached or not: the cache check does not know this config's argument types,
    # and a unit whose kernels are cached only loads them
    fill(cfg, NEEDS["all"], processes=processes, force=True)
    seconds = time.perf_counter() - t0
    still = missing_kernels()
    if still:
        raise click.ClickException(f"kernels not cached after warm-up (is the cache directory writable?): {', '.join(still)}")
    click.echo(f"kernels {'compiled and cached' if cold else 'loaded from the cache'} in {seconds:.1f} s")
