"""``streamdedup run``: file mode (``--input``) or the Kafka processor (issue #4)."""

from __future__ import annotations

import click

from ..errors import StreamdedupError
from ._common import config_option, get_config, make_console


@click.command()
@config_option
@click.option("--input", "input_path", type=str, default=None, help="JSONL file to deduplicate, or - for stdin (file mode).")
@click.option("--output-dir", type=click.Path(file_okay=False), default=None, help="Where unique/duplicates/dead_letter.jsonl go (file mode).")
@click.option("--state-dir", type=click.Path(file_okay=False), default=None, help="RocksDB state (default OUTPUT_DIR/state).")
def run(config_path: str | None, input_path: str | None, output_dir: str | None, state_dir: str | None) -> None:
    """Deduplicate a stream."""
    cfg = get_config(config_path)
    if input_path is None:
        raise click.UsageError("give --input PATH|- and --output-dir DIR (file mode); the Kafka mode is not built yet")
    if output_dir is None:
        raise click.UsageError("--output-dir is required with --input")
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from ..filemode import run_file

    console = make_console()
    try:
        if console.is_terminal:
            with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:,} lines"),
                          TimeElapsedColumn(), console=console, transient=True) as bar:
                task = bar.add_task("deduplicating", total=None)
                summary = run_file(cfg, input_path, output_dir, state_dir, progress=lambda n: bar.update(task, completed=n))
        else:
            summary = run_file(cfg, input_path, output_dir, state_dir)
    except (StreamdedupError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    if summary.skipped_resumed:
        console.print(f"resumed: skipped {summary.skipped_resumed:,} lines already done with this state")
    console.print(
        f"{summary.lines:,} lines in {summary.seconds:.2f} s ({summary.docs_per_s:,.0f} docs/s): "
        f"unique {summary.unique:,}, duplicates {summary.duplicates:,}, dead-letter {summary.dead_letter:,}"
    )
    if summary.relations:
        console.print("  duplicates by relation: " + ", ".join(f"{k} {v:,}" for k, v in summary.relations.most_common()))
    if summary.dead_letter_stages:
        console.print("  dead-letter by stage: " + ", ".join(f"{k} {v:,}" for k, v in summary.dead_letter_stages.most_common()))
    if not summary.reconciles():
        raise click.ClickException("counts do not reconcile: this is a bug")
    console.print(f"outputs in {output_dir}: unique.jsonl, duplicates.jsonl, dead_letter.jsonl")
