"""``streamdedup run``: file mode (``--input``) or the Kafka processor."""

from __future__ import annotations

from pathlib import Path

import click

from streamdedup.errors import StreamdedupError
from streamdedup.cli import _startup
from streamdedup.cli._common import config_option, fill_kernel_cache, get_config, kafka_overrides, make_console


#: a run of fewer lines says no rate
RATE_FROM_LINES = 10_000


@click.command()
@config_option
@click.option("--input", "input_path", type=str, default=None, help="JSONL file to deduplicate, or - for stdin (file mode).")
@click.option("--output-dir", type=click.Path(file_okay=False), default=None,
              help="Where unique/duplicates/dead_letter.jsonl go (file mode; revisions.jsonl too under verify.revisions: topic).")
@click.option("--state-dir", type=click.Path(file_okay=False), default=None, help="RocksDB state (default OUTPUT_DIR/state, or ./state for Kafka).")
@click.option("--bootstrap-servers", default=None, help="Kafka mode: overrides kafka.bootstrap_servers.")
@click.option("--input-topic", "input_topics", multiple=True, help="Kafka mode: overrides kafka.input_topics (repeatable).")
@click.option("--stop-when-idle", type=click.FloatRange(0, None), default=None, help="Kafka mode: exit after this many seconds without input.")
@click.option("--rebuild-from-input", "rebuild_since", metavar="SINCE", default=None,
              help="Kafka mode, when the state is lost (the group committed offsets the state does not hold): first index "
                   "the input from SINCE (earliest, an offset, -N for the last N records, an ISO time, or an age such as 48h) up to the committed "
                   "offsets, emitting nothing.")
@click.option("--accept-empty-state", is_flag=True, help="Kafka mode: go on although the state holds less than the group committed.")
@click.option("--topology", type=click.Choice(["single", "staged", "faust"]), default="single", show_default=True,
              help="Kafka mode: single = one processor owns the index; staged = fingerprint/route workers and one decider "
                   "(give --role); faust = the staged worker as a faust agent (needs the staged decider; the faust extra).")
@click.option("--role", type=click.Choice(["worker", "decider"]), default=None,
              help="--topology staged: worker (fingerprint + route; scale by input partitions) or decider (owns the index, "
                   "--state-dir; a second one on the same state waits as standby).")
@click.option("--instance", default=None, help="--role worker: this worker's name in its transactional id (default: host name).")
def run(config_path: str | None, input_path: str | None, output_dir: str | None, state_dir: str | None,
        bootstrap_servers: str | None, input_topics: tuple[str, ...], stop_when_idle: float | None,
        rebuild_since: str | None, accept_empty_state: bool, topology: str, role: str | None, instance: str | None) -> None:
    """Deduplicate a stream: a JSONL file (--input) or Kafka topics (the default)."""
    cfg = get_config(config_path)
    if (topology == "staged") != (role is not None):
        raise click.UsageError("--topology staged needs --role worker|decider, and --role is only for --topology staged")
    if topology == "faust":
        if input_path is not None or state_dir is not None or instance is not None:
            raise click.UsageError("--topology faust is a Kafka worker without state: it takes no --input, --state-dir "
                                   "or --instance (the decider is --topology staged --role decider)")
        from streamdedup.cli.run_faust import run_faust

        _startup.done()
        run_faust(cfg, bootstrap_servers, input_topics, stop_when_idle)
        return
    if topology == "staged":
        if input_path is not None:
            raise click.UsageError("--topology staged is a Kafka topology: it takes no --input")
        from streamdedup.cli.run_staged import run_staged

        _startup.done()
        run_staged(cfg, role, state_dir, bootstrap_servers, input_topics, stop_when_idle, instance)  # type: ignore[arg-type]
        return
    if input_path is None:
        _run_kafka(cfg, state_dir, bootstrap_servers, input_topics, stop_when_idle, _lost_state(rebuild_since, accept_empty_state))
        return
    if rebuild_since is not None or accept_empty_state:
        raise click.UsageError("--rebuild-from-input and --accept-empty-state are for Kafka mode (without --input)")
    if output_dir is None:
        raise click.UsageError("--output-dir is required with --input")
    from streamdedup.runtime.filemode import run_file

    console = make_console()
    fill_kernel_cache(cfg, "run+restore" if Path(state_dir or cfg.state.dir or Path(output_dir) / "state").exists() else "run")
    _startup.done()
    try:
        if console.is_terminal:
            # a progress bar only on a terminal (its module: ~10 ms of a short run's start-up)
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

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
    # a short run's rate is its start-up (kernels loaded, state opened), not the speed of the filter
    rate = f" ({summary.docs_per_s:,.0f} docs/s, start-up included)" if summary.records >= RATE_FROM_LINES else ""
    on_file = cfg.verify.revisions == "topic"
    console.print(
        f"{summary.records:,} lines in {summary.seconds:.2f} s{rate}: "
        f"unique {summary.unique:,}, duplicates {summary.duplicates:,}, "
        + (f"revisions {summary.revisions_out:,}, " if on_file else "") + f"dead-letter {summary.dead_letter:,}"
    )
    if summary.relations:
        console.print("  duplicates by relation: " + ", ".join(f"{k} {v:,}" for k, v in summary.relations.most_common()))
    if summary.revisions and not on_file:
        where = "duplicates" if cfg.verify.revisions == "duplicates" else "unique"
        console.print(f"  revisions (content changed, tagged revision; counted with {where}): {summary.revisions:,}")
    if summary.dead_letter_stages:
        console.print("  dead-letter by stage: " + ", ".join(f"{k} {v:,}" for k, v in summary.dead_letter_stages.most_common()))
    if not summary.reconciles():
        raise click.ClickException("counts do not reconcile: this is a bug")
    console.print(f"outputs in {output_dir}: unique.jsonl, duplicates.jsonl, "
                  + ("revisions.jsonl, " if on_file else "") + "dead_letter.jsonl")


def _lost_state(rebuild_since: str | None, accept: bool):
    from streamdedup.runtime.since import parse_since

    if rebuild_since is not None and accept:
        raise click.UsageError("give --rebuild-from-input or --accept-empty-state, not both")
    if rebuild_since is None:
        return "accept" if accept else "refuse"
    try:
        return parse_since(rebuild_since, option="--rebuild-from-input")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--rebuild-from-input") from None


def _run_kafka(cfg, state_dir, bootstrap_servers, input_topics, stop_when_idle, lost_state) -> None:
    import logging

    from streamdedup.runtime.single.processor import Processor
    from streamdedup.logs import setup_logging

    _startup.done()
    setup_logging()
    cfg = kafka_overrides(cfg, bootstrap_servers, input_topics)
    state = state_dir or cfg.state.dir or "state"
    fill_kernel_cache(cfg, "kafka+restore" if Path(state).exists() else "kafka")
    processor = Processor(cfg, state, stop_when_idle, lost_state=lost_state)
    processor.install_signal_handlers()
    s = processor.run()
    logging.getLogger("streamdedup").info(
        "done", extra={**s.as_log(), "replayed": s.replayed, "batches": s.batches, "aborted_batches": s.aborted_batches,
                       "queries": s.queries},
    )
    # the same totals for the person at the terminal (the log line is for machines)
    replayed = f", {s.replayed:,} replayed (decided before a restart)" if s.replayed else ""
    replayed += f"; {s.queries:,} queries answered" if s.queries else ""
    own_topic = f"revisions {s.revisions_out:,}, " if cfg.verify.revisions == "topic" else ""
    click.echo(f"{s.records:,} records in {s.seconds:.1f} s: unique {s.unique:,}, duplicates {s.duplicates:,}, "
               f"{own_topic}dead-letter {s.dead_letter:,}{replayed}")
    if s.relations:
        click.echo("  duplicates by relation: " + ", ".join(f"{k} {v:,}" for k, v in s.relations.most_common()))
    if s.revisions and not own_topic:
        click.echo(f"  revisions (content changed, tagged revision; counted with the topic they went to): {s.revisions:,}")
    if not s.reconciles():
        raise click.ClickException("counts do not reconcile: this is a bug")


@click.group()
def topics() -> None:
    """Kafka topic administration."""


@topics.command("create")
@config_option
@click.option("--bootstrap-servers", default=None, help="HOST:PORT of the broker (default: kafka.bootstrap_servers)")
@click.option("--topology", type=click.Choice(["single", "staged"]), default="single", show_default=True,
              help="staged: also the fingerprints (1 partition) and decisions (one partition per input partition) topics.")
def topics_create(config_path: str | None, bootstrap_servers: str | None, topology: str) -> None:
    """Create the input, unique, duplicates and dead-letter topics named in the config (and the
    revisions topic under verify.revisions: topic)."""
    from streamdedup.runtime.kafka.admin import create_topics

    cfg = get_config(config_path)
    kcfg = cfg.kafka if not bootstrap_servers else cfg.kafka.model_copy(update={"bootstrap_servers": bootstrap_servers})
    for topic, outcome in create_topics(kcfg, staged=topology == "staged", revisions=cfg.verify.revisions == "topic").items():
        click.echo(f"{topic}: {outcome}")
