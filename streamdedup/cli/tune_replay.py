"""``streamdedup tune --replay``: what a configuration change would do to recent input.

The input is decided twice, with the current configuration (``--config`` and ``STREAMDEDUP_*``
variables, as ``run`` loads it) and with the candidate (the current one plus ``--set``), in
memory; nothing is produced and no state is opened (``streamdedup.tools.whatif``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np
from rich.table import Table

from streamdedup._optional import require
from streamdedup.config import Config, with_settings
from streamdedup.errors import ConfigError
from streamdedup.tools.whatif import RULES, DUPLICATE_CHANGED, DUPLICATE_TO_UNIQUE, LINKED, REVISION_S, UNIQUE_TO_DUPLICATE, Outcome, Replayer, ReplayInput, ReplayReport
from streamdedup.cli._common import fill_kernel_cache, make_console

SWEEP_POINTS = 11


def replay_main(cfg: Config, target: str, sets: tuple[str, ...], since: str | None, limit: int, bootstrap: str | None,
                plot: str | None, sweep: str | None, as_json: bool, show: int) -> None:
    if not sets:
        raise click.UsageError("--replay compares the current config with a candidate: give at least one --set SETTING=VALUE")
    try:
        candidate = with_settings(cfg, list(sets))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    sweep_key = sweep or sets[0].partition("=")[0].strip()
    values = _sweep_values(cfg, candidate, sweep_key) if plot else None
    if plot:
        matplotlib = require("matplotlib", "tools", "streamdedup tune --replay --plot")
        matplotlib.use("Agg")
    if bootstrap:
        cfg = cfg.model_copy(update={"kafka": cfg.kafka.model_copy(update={"bootstrap_servers": bootstrap})})
    source, where = _read(cfg, target, since, limit)
    fill_kernel_cache(cfg, "run")
    replayer = Replayer(source, int(time.time() * 1000))
    t0 = time.perf_counter()
    report = replayer.compare(cfg, candidate)
    seconds = time.perf_counter() - t0
    points = replayer.sweep(cfg, sweep_key, values) if values is not None else None
    if as_json:
        out = {"source": where, "settings": list(sets), "seconds": round(seconds, 3), **report.to_json()}
        if points is not None:
            out["sweep"] = {"setting": sweep_key, "points": [{"value": v, "duplicates": d} for v, d in points]}
        click.echo(json.dumps(out))
    else:
        _print(report, where, sets, seconds, show)
    if plot and points is not None:
        _plot(plot, sweep_key, points, _value(cfg, sweep_key), _value(candidate, sweep_key), where)
        if not as_json:
            make_console().print(f"duplicates vs {sweep_key} written to {plot}")


def _read(cfg: Config, target: str, since: str | None, limit: int) -> tuple[ReplayInput, str]:
    """A replay input from a JSONL file (an existing path) or a topic (anything else)."""
    path = Path(target)
    if path.is_file():
        skip = 0
        if since is not None:
            if not since.strip().isdecimal():
                raise click.BadParameter("for a file, --since is a number of lines to skip", param_hint="--since")
            skip = int(since)
        source = ReplayInput.from_file(str(path), skip, limit)
        return source, f"{target} from line {skip + 1}"
    from streamdedup.runtime.since import parse_since
    from streamdedup.tools.whatif_input import read_recent

    try:
        start = None if since is None else parse_since(since, option="--since")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    source = read_recent(cfg, target, start, limit)
    return source, f"topic {target} ({len(source.values or [])} records, " + (f"from {since})" if since else "the most recent)")


def _value(cfg: Config, dotted: str):
    node = cfg
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def _sweep_values(cfg: Config, candidate: Config, key: str) -> list[float]:
    """Points around the current and candidate values of a threshold (a setting in [0, 1])."""
    try:
        a, b = _value(cfg, key), _value(candidate, key)
    except AttributeError:
        raise click.UsageError(f"--sweep {key}: not a setting") from None
    if not all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in (a, b)):
        raise click.UsageError(f"--plot sweeps a threshold (a setting between 0 and 1); {key} is not one: give --sweep SETTING")
    lo, hi = max(0.0, min(a, b) - 0.25), min(1.0, max(a, b) + 0.25)
    points = sorted({round(float(v), 3) for v in np.linspace(lo, hi, SWEEP_POINTS)} | {a, b})
    # the model checks each point (an open bound such as lsh.threshold's 0 and 1 is left out)
    ok = []
    for v in points:
        try:
            with_settings(cfg, [f"{key}={v}"])
        except ConfigError:
            continue
        ok.append(v)
    return ok


def _side(o: Outcome) -> str:
    if o.status not in LINKED:
        return o.status + (f"\n{o.reason}" if o.reason else "")
    fig = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    matched = "" if o.matched == o.duplicate_of else f", matched {o.matched}"
    return (f"{o.relation} of {o.duplicate_of}{matched}\nJ {fig(o.jaccard)}  LD {fig(o.ld_similarity)}  "
            f"contained {fig(o.containment_in_matched)} / contains {fig(o.containment_of_matched)}"
            + (f"\nrevision: {'; '.join(o.changed)}" if o.status == REVISION_S else ""))


def _print(report: ReplayReport, where: str, sets: tuple[str, ...], seconds: float, show: int) -> None:
    console = make_console()
    console.print(f"replayed {report.records:,} records of {where} in {seconds:.2f} s: current config vs "
                  + ", ".join(sets) + " (in memory; nothing produced, no state touched)")
    counts = Table("", "current", "candidate")
    for status in sorted(set(report.current) | set(report.candidate)):
        counts.add_row(status, f"{report.current[status]:,}", f"{report.candidate[status]:,}")
    console.print(counts)
    flips = report.counts()
    main = (UNIQUE_TO_DUPLICATE, DUPLICATE_TO_UNIQUE, DUPLICATE_CHANGED)
    console.print("would flip: " + ", ".join(f"{k} {flips.get(k, 0):,}" for k in main)
                  + "".join(f", {k} {v:,}" for k, v in flips.items() if k not in main))
    if report.kept:
        # where a tighter setting did not flip a duplicate, the rule that still accepts it
        # names what to tighten (raising one threshold leaves the other rules accepting)
        kept = Table("rule", "duplicates", "tightened by", title="duplicates the candidate keeps, by the rule that accepts them")
        for rule, n in report.kept.most_common():
            kept.add_row(rule, f"{n:,}", RULES[rule])
        console.print(kept)
    if not report.flips:
        return
    table = Table("record", "id", "flip", "current", "candidate", title=f"flipped records (first {min(show, len(report.flips))} of {len(report.flips):,})",
                  show_lines=True)
    for f in report.flips[:show]:
        table.add_row(f.name, f.id or "-", f.kind, _side(f.current), _side(f.candidate))
    console.print(table)


def _plot(path: str, key: str, points: list[tuple[float, int]], current: float, candidate: float, where: str) -> None:
    import matplotlib.pyplot as plt

    xs, ys = [p[0] for p in points], [p[1] for p in points]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(xs, ys, marker="o")
    ax.axvline(current, color="grey", linestyle="--", label=f"current {current}")
    ax.axvline(candidate, color="tab:orange", linestyle="--", label=f"candidate {candidate}")
    ax.set_xlabel(key)
    ax.set_ylabel("duplicates found")
    ax.set_title(f"duplicates vs {key}\n{where}", fontsize=10)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
