"""``streamdedup tune``: pick LSH bands and rows for a Jaccard threshold and show the S-curve
(``--threshold``), or replay recent input with a candidate configuration and show which
decisions would change (``--replay``, in ``tune_replay``)."""

from __future__ import annotations

import click
from click.core import ParameterSource
import numpy as np
from rich.table import Table

from streamdedup._optional import require
from streamdedup.sketch.lsh import candidate_probability, optimal_params
from streamdedup.cli._common import config_option, get_config, make_console

SIMILARITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


_LSH_ONLY = ("threshold", "num_perm", "fp_weight", "fn_weight")
_REPLAY_ONLY = ("config_path", "set_items", "since", "limit", "bootstrap_servers", "sweep", "as_json", "show")


def _given(names: tuple[str, ...]) -> list[str]:
    """The options among ``names`` given on the command line, as they are spelt there."""
    ctx = click.get_current_context()
    given = [p for p in ctx.command.params if p.name in names and ctx.get_parameter_source(p.name) is not ParameterSource.DEFAULT]
    return [p.opts[0] for p in given]


@click.command()
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=None,
              help="Jaccard threshold to choose LSH bands for (without --replay).")
@click.option("--num-perm", type=click.IntRange(1, 1024), default=128, show_default=True, help="MinHash slots to split into bands")
@click.option("--fp-weight", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
              help="weight of false candidates (the S-curve's area below the threshold)")
@click.option("--fn-weight", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
              help="weight of missed candidates (the area above it)")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Write a PNG: the S-curve, or with --replay duplicates found vs the --sweep setting.")
@click.option("--replay", "replay_target", metavar="TOPIC|FILE", default=None,
              help="Decide recent input (an existing file is read as JSONL, anything else is a topic) with the current "
                   "config and with --set applied, in memory, and show which decisions would change.")
@config_option
@click.option("--set", "set_items", metavar="SETTING=VALUE", multiple=True,
              help="--replay: the candidate change, a dotted setting (repeatable), e.g. verify.jaccard_threshold=0.6.")
@click.option("--since", default=None, help="--replay: a topic from earliest, an offset, -N (the last N of each partition), an ISO time or an age (48h); "
                                            "a file after this many lines. Default: a topic's most recent records, a file's first.")
@click.option("--limit", type=click.IntRange(1, None), default=20_000, show_default=True, help="--replay: records at most.")
@click.option("--bootstrap-servers", default=None, help="--replay TOPIC: overrides kafka.bootstrap_servers.")
@click.option("--sweep", metavar="SETTING", default=None, help="--replay --plot: the threshold to sweep (default: the first --set).")
@click.option("--json", "as_json", is_flag=True, help="--replay: one JSON object on stdout.")
@click.option("--show", type=click.IntRange(0, None), default=20, show_default=True, help="--replay: flipped records listed.")
def tune(threshold: float | None, num_perm: int, fp_weight: float, fn_weight: float, plot: str | None,
         replay_target: str | None, config_path: str | None, **replay_opts) -> None:
    """Choose (bands, rows) for a Jaccard threshold (--threshold), or see what a config change
    would decide differently on recent input (--replay TOPIC|FILE --set SETTING=VALUE)."""
    if replay_target is not None:
        if _given(_LSH_ONLY):
            raise click.UsageError(f"{_given(_LSH_ONLY)[0]} is for choosing LSH bands; with --replay give "
                                   "--set fingerprint.lsh.threshold=VALUE (or another setting)")
        from streamdedup.cli.tune_replay import replay_main

        replay_main(get_config(config_path), replay_target, replay_opts["set_items"], replay_opts["since"], replay_opts["limit"],
                    replay_opts["bootstrap_servers"], plot, replay_opts["sweep"], replay_opts["as_json"], replay_opts["show"])
        return
    if threshold is None:
        raise click.UsageError("give --threshold (LSH bands for it) or --replay TOPIC|FILE --set SETTING=VALUE")
    if _given(_REPLAY_ONLY):
        raise click.UsageError(f"{_given(_REPLAY_ONLY)[0]} is for --replay")
    if plot:
        matplotlib = require("matplotlib", "tools", "streamdedup tune --plot")
        matplotlib.use("Agg")
    choice = optimal_params(threshold, num_perm, fp_weight, fn_weight)
    console = make_console()
    console.print(
        f"threshold {threshold}, num_perm {num_perm}: bands={choice.bands} rows={choice.rows} "
        f"(uses {choice.bands * choice.rows} slots; steepest point {choice.threshold_estimate:.3f})"
    )
    console.print(
        f"expected false-positive area {choice.false_positive_area:.4f}, "
        f"false-negative area {choice.false_negative_area:.4f}"
    )
    table = Table("Jaccard", "P(candidate)")
    for s in SIMILARITIES:
        table.add_row(f"{s:.2f}", f"{float(candidate_probability(s, choice.bands, choice.rows)):.4f}")
    console.print(table)
    if plot:
        import matplotlib.pyplot as plt

        s = np.linspace(0, 1, 501)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(s, candidate_probability(s, choice.bands, choice.rows), label=f"b={choice.bands}, r={choice.rows}")
        ax.axvline(threshold, color="grey", linestyle="--", label=f"threshold {threshold}")
        ax.fill_between(s, 0, candidate_probability(s, choice.bands, choice.rows), where=s <= threshold, alpha=0.2, color="red", label="false-positive area")
        ax.fill_between(s, candidate_probability(s, choice.bands, choice.rows), 1, where=s >= threshold, alpha=0.2, color="orange", label="false-negative area")
        ax.set_xlabel("Jaccard similarity")
        ax.set_ylabel("probability of becoming a candidate")
        ax.set_title(f"LSH S-curve, num_perm={num_perm}")
        ax.legend(loc="lower right")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
        console.print(f"S-curve written to {plot}")
