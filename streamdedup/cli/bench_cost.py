"""``streamdedup bench cost``: where one record's CPU goes, per runtime (``bench.cost``)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from streamdedup.cli._common import config_option, get_config, make_console


@click.command("cost")
@config_option
@click.option("--bootstrap-servers", default=None, help="broker to use (default kafka.bootstrap_servers; scripts/kafka-local start)")
@click.option("--records", type=click.IntRange(1000, 10_000_000), default=100_000, show_default=True,
              help="Kafka records per round")
@click.option("--rounds", type=click.IntRange(1, 20), default=2, show_default=True,
              help="alternating rounds of the passthrough and the processor (medians reported)")
@click.option("--file", "file_mode", is_flag=True,
              help="file mode instead: streamdedup run --input on the Reuters corpus as its own process, its imports "
                   "alone, and the same run in this process with its stages timed")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_cost(config_path: str | None, bootstrap_servers: str | None, records: int, rounds: int, file_mode: bool,
               as_json: bool) -> None:
    """One record's CPU in microseconds, split into its parts: the Kafka processor against a
    transactional passthrough (same broker, same topic, alternating rounds), or file mode."""
    from streamdedup.logs import setup_logging

    setup_logging(30)
    cfg = get_config(config_path)
    if file_mode:
        from streamdedup.bench.cost_file import file_cost

        res = file_cost(cfg, config_path, rounds)
        if as_json:
            click.echo(json.dumps(res, indent=2))
        else:
            _print_file(res)
        return
    from streamdedup.bench.cost import kafka_cost

    res = kafka_cost(cfg, bootstrap_servers or cfg.kafka.bootstrap_servers, records, rounds)
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    console = make_console()
    console.print(f"{res['records']:,} Reuters-derived records ({res['feed']} feed), batches of {res['batch_size']}, "
                  f"exactly-once; CPU from the first batch to the last commit, us per record (median of {res['rounds']})")
    for side in ("passthrough", "processor"):
        r = res[side]
        t = Table(title=f"{side}: {r['rate']:,.0f} records/s, {r['total_us']:.1f} us CPU per record")
        for col in ("thread", "part", "us/record"):
            t.add_column(col, justify="right" if col == "us/record" else "left")
        for row in r["rows"]:
            t.add_row(row["thread"], row["part"], f"{row['us']:.2f}")
        console.print(t)


def _print_file(res: dict) -> None:
    console = make_console()
    n = res["records"]
    console.print(f"file mode, {n:,} Reuters stories (median of {res['rounds']} alternating rounds)")
    console.print(f"  whole process (streamdedup run --input): {res['whole_wall_s']:.2f} s wall, {res['whole_cpu_s']:.2f} s CPU "
                  f"({n / res['whole_wall_s']:,.0f} docs/s)")
    console.print(f"  of which Python start-up and imports: {res['imports_wall_s']:.2f} s wall, {res['imports_cpu_s']:.2f} s CPU")
    console.print(f"  the same run in a warm process: {res['in_process_wall_s']:.2f} s wall, {res['in_process_cpu_s']:.2f} s CPU "
                  f"({n / res['in_process_wall_s']:,.0f} docs/s)")
    rest = res["whole_cpu_s"] - res["imports_cpu_s"] - res["in_process_cpu_s"]
    console.print(f"  per-run set-up a warm process does not pay (kernel loads, tables, exit): {rest:.2f} s CPU")
    t = Table(title="in-process run, us per record")
    for col in ("thread", "part", "us/record"):
        t.add_column(col, justify="right" if col == "us/record" else "left")
    for row in res["rows"]:
        t.add_row(row["thread"], row["part"], f"{row['us']:.2f}")
    console.print(t)
