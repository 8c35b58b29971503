"""``streamdedup tune``: pick LSH bands and rows for a Jaccard threshold and show the S-curve."""

from __future__ import annotations

import click
import numpy as np
from rich.table import Table

from .._optional import require
from ..lsh import candidate_probability, optimal_params
from ._common import make_console

SIMILARITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@click.command()
@click.option("--threshold", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), required=True)
@click.option("--num-perm", type=click.IntRange(1, 1024), default=128, show_default=True)
@click.option("--fp-weight", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True)
@click.option("--fn-weight", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help="Write the S-curve to this PNG file.")
def tune(threshold: float, num_perm: int, fp_weight: float, fn_weight: float, plot: str | None) -> None:
    """Choose (bands, rows) for a Jaccard threshold."""
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
