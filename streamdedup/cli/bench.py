"""``streamdedup bench ...``: benchmarks that print figures (not timed tests)."""

from __future__ import annotations

import json
import random

import click
from rich.table import Table

from streamdedup._optional import require
from streamdedup.cli._common import config_option, get_config, make_console


@click.group()
def bench() -> None:
    """Benchmarks and accuracy harnesses on the Reuters-21578 corpus."""


def _require_baselines(command: str, *modules: str) -> None:
    """Fail before minutes of benchmarking, not after them, when a baseline is not installed."""
    for module in modules:
        require(module, "bench", f"streamdedup bench {command}")


@bench.command("fingerprint")
@config_option
@click.option("--rounds", type=click.IntRange(1, 50), default=5, show_default=True, help="passes over the corpus (medians reported)")
@click.option("--batch-size", type=click.IntRange(1, 1_000_000), default=512, show_default=True, help="texts per fingerprint call")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_fingerprint(config_path: str | None, rounds: int, batch_size: int, as_json: bool) -> None:
    """streamdedup fingerprint_batch vs rensa vs datasketch, single core, same run."""
    from streamdedup.bench.fingerprint import run

    _require_baselines("fingerprint", "datasketch", "rensa")
    res = run(get_config(config_path), rounds=rounds, batch_size=batch_size)
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    console = make_console()
    table = Table("engine", "docs/s (median)", "MB/s")
    for name, v in res["docs_per_s"].items():
        table.add_row(name, f"{v:,.0f}", f"{res['mb_per_s'][name]:.1f}")
    console.print(f"Reuters-21578 bodies: {res['documents']} docs, mean {res['mean_doc_bytes']:.0f} bytes, {res['rounds']} rounds")
    console.print(table)
    console.print(f"streamdedup / rensa: {res['ratio_vs_rensa_median']:.2f}x (median of per-round ratios)")
    console.print(f"streamdedup / datasketch: {res['ratio_vs_datasketch_median']:.1f}x")
    rb = res["record_bytes"]
    console.print(
        f"stored record bytes: mean {rb['mean']:.0f}, p50 {rb['p50']:.0f}, p99 {rb['p99']:.0f}, max {rb['max']} "
        f"({rb['share_le_600'] * 100:.1f}% <= 600)"
    )


@bench.command("estimates")
@config_option
@click.option("--pairs", type=click.IntRange(10, 100_000), default=200, show_default=True, help="pairs per edit kind")
@click.option("--jaccard-pairs", type=click.IntRange(80, 100_000), default=2000, show_default=True,
              help="pairs spanning Jaccard 0.2-1 for the Jaccard estimate")
@click.option("--fit", is_flag=True, help="Also fit the calibration constants on the other half of the corpus.")
@click.option("--seed", type=int, default=7, show_default=True, help="random seed of the pairs and edits")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_estimates(config_path: str | None, pairs: int, jaccard_pairs: int, fit: bool, seed: int, as_json: bool) -> None:
    """Jaccard and LD estimate accuracy on held-out Reuters documents."""
    from streamdedup.bench import estimates as est

    _require_baselines("estimates", "rapidfuzz")
    cfg = get_config(config_path)
    docs = est.documents()
    random.Random(seed).shuffle(docs)
    half = len(docs) // 2
    fit_docs, held_out = docs[:half], docs[half:]
    out: dict = {}
    if fit:
        out["fitted_constants"] = est.fit(cfg, fit_docs, pairs * 2, random.Random(seed + 1))
    out["ld"] = est.ld_report(cfg, held_out, pairs, random.Random(seed + 2))
    out["jaccard"] = est.jaccard_report(cfg, held_out, jaccard_pairs, random.Random(seed + 3))
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    console = make_console()
    if fit:
        console.print(f"fitted on the other half: {out['fitted_constants']}")
    j = out["jaccard"]
    console.print(
        f"Jaccard (K={cfg.fingerprint.minhash.num_perm}): {j['pairs']} pairs over J in [0.2, 1]: "
        f"MAE {j['mae']:.4f}, bias {j['bias']:+.4f}"
    )
    console.print("  MAE per bucket: " + ", ".join(f"{k}: {v:.3f}" for k, v in j["per_bucket"].items()))
    table = Table("edit kind", "pairs", "raw |err|/len", "raw signed", "calibrated |err|/len", "calibrated signed", "cal. p90", "'related'")
    for r in out["ld"]:
        table.add_row(
            r["kind"], str(r["pairs"]), f"{r['raw_median_abs']:.3f}", f"{r['raw_median_signed']:+.3f}",
            f"{r['calibrated_median_abs']:.3f}", f"{r['calibrated_median_signed']:+.3f}", f"{r['calibrated_p90_abs']:.3f}",
            f"{r['related_rate']:.2f}",
        )
    console.print("LD estimates (medians over pairs; error relative to the longer canonical text):")
    console.print(table)


@bench.command("accuracy")
@config_option
@click.option("--suite", type=click.Choice(["standard", "hard", "zh", "ja", "th", "revisions", "short"]), default="standard",
              show_default=True,
              help="standard: eight edit kinds and shared-footer negatives; hard: character noise 0.5-3%, short teasers, "
                   "compound copies, hyphenated wraps, entities, curly quotes and near-miss negatives; "
                   "zh: People's Daily 1998 with character noise, teasers, new headlines, Traditional script and near misses, "
                   "ja/th: the same kinds on the UDHR, datasketch on character 3-grams; "
                   "revisions: corrections and updates vs cosmetic copies (Reuters, People's Daily), and Reuters' CORRECTED stories; "
                   "short: teasers after a header block, mid-story excerpts, key points, very short teasers (Reuters, People's Daily), "
                   "short stories under other boilerplate, and their near misses")
@click.option("--per-kind", type=click.IntRange(1, 5000), default=None,
              help="synthetic copies per edit kind (hard, zh, ja, th, short: also negatives per kind)  "
                   "[default: 150 standard, 200 hard, 100 zh, revisions and short, 6 ja/th]")
@click.option("--hard-negatives", type=click.IntRange(0, 5000), default=None, help="standard suite only  [default: 300]")
@click.option("--stories", type=click.IntRange(10, 100_000), default=None,
              help="hard, zh, ja, th, revisions, short: the first N stories of the corpus (quick checks)  [default: all]")
@click.option("--seed", type=int, default=11, show_default=True, help="random seed of the synthetic copies")
@click.option("--no-datasketch", is_flag=True, help="Skip the datasketch MinHashLSH baseline.")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_accuracy(config_path: str | None, suite: str, per_kind: int | None, hard_negatives: int | None, stories: int | None,
                   seed: int, no_datasketch: bool, as_json: bool) -> None:
    """Precision/recall on a news stream with synthetic copies and hard negatives (Reuters; People's Daily for zh)."""
    from streamdedup.bench.accuracy import run as run_accuracy

    if suite != "standard" and hard_negatives is not None:
        raise click.UsageError(f"--hard-negatives is for the standard suite; the {suite} suite makes --per-kind of each negative kind")
    if suite == "standard" and stories is not None:
        raise click.UsageError("--stories is not for the standard suite; its figures are on the whole corpus")
    if not no_datasketch and suite not in ("revisions", "short"):
        _require_baselines("accuracy", "datasketch")
    if suite not in ("standard", "revisions", "short"):
        _require_baselines(f"accuracy --suite {suite}", "rapidfuzz", *(("opencc",) if suite == "zh" else ()))
    cfg = get_config(config_path)
    default_per_kind = {"standard": 150, "hard": 200, "zh": 100, "revisions": 100, "short": 100}.get(suite, 6)
    res = run_accuracy(cfg, per_kind=per_kind or default_per_kind,
                       hard_negatives=300 if hard_negatives is None else hard_negatives, seed=seed,
                       with_datasketch=not no_datasketch, suite=suite, stories=stories)
    if as_json:
        click.echo(json.dumps(res, indent=2, default=str))
        return
    from streamdedup.cli._accuracy_report import print_accuracy, print_revisions, print_short

    {"revisions": print_revisions, "short": print_short}.get(suite, print_accuracy)(make_console(), res)


@bench.command("engine")
@config_option
@click.option("--rounds", type=click.IntRange(1, 20), default=3, show_default=True, help="runs of each side (medians reported)")
@click.option("--documents", type=click.IntRange(0, 100_000_000), default=5_000_000, show_default=True,
              help="indexed documents for the index-size test (0 skips it)")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_engine(config_path: str | None, rounds: int, documents: int, as_json: bool) -> None:
    """File mode end to end vs a datasketch streaming filter; throughput and memory at scale."""
    from streamdedup.bench import engine as eb

    _require_baselines("engine", "datasketch")
    cfg = get_config(config_path)
    res: dict = {"file_mode": eb.file_mode(cfg, rounds), "datasketch": eb.datasketch_stream(cfg)}
    res["ratio_vs_datasketch"] = res["file_mode"]["docs_per_s"] / res["datasketch"]["docs_per_s"]
    if documents:
        res["index_size"] = eb.index_size(cfg, documents)
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    console = make_console()
    fm = res["file_mode"]
    console.print(f"file mode, Reuters ({fm['documents']:,} stories, RocksDB state): {fm['docs_per_s']:,.0f} docs/s "
                  f"(median of {rounds}); per micro-batch {fm['us_per_doc_p50']:.1f} us/doc p50, {fm['us_per_doc_p99']:.1f} p99")
    ds = res["datasketch"]
    console.print(f"datasketch MinHash + MinHashLSH streaming filter: {ds['docs_per_s']:,.0f} docs/s "
                  f"({ds['documents']:,} stories) -> streamdedup is {res['ratio_vs_datasketch']:.1f}x")
    if documents:
        ix = res["index_size"]
        console.print(f"index size: {ix['indexed']:,} documents indexed (filled at {ix['fill_docs_per_s']:,.0f} docs/s)")
        console.print(f"  {ix['probe']:,} fresh documents with {ix['checkpoint']:,} indexed: {ix['docs_per_s_at_checkpoint']:,.0f} docs/s "
                      f"(median batch {ix['us_per_doc_median_at_checkpoint']:.1f} us/doc); with {ix['documents']:,}: "
                      f"{ix['docs_per_s_at_full']:,.0f} docs/s ({ix['us_per_doc_median_at_full']:.1f} us/doc); "
                      f"ratio {ix['ratio_full_vs_checkpoint']:.2f}")
        console.print(f"  RAM {ix['rss_bytes_per_doc']:.0f} B/doc (index arrays {ix['index_array_bytes_per_doc']:.0f}), "
                      f"disk {ix['disk_bytes_per_doc']:.0f} B/doc")


@bench.command("decider")
@config_option
@click.option("--documents", type=click.IntRange(1000, 10_000_000), default=200_000, show_default=True,
              help="Reuters-derived records (news stories, 20% resends and variants)")
@click.option("--long-documents", type=click.IntRange(0, 1_000_000), default=2000, show_default=True,
              help="20-50 KB pages (0 skips them)")
@click.option("--rounds", type=click.IntRange(1, 20), default=3, show_default=True, help="passes (medians reported)")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_decider(config_path: str | None, documents: int, long_documents: int, rounds: int, as_json: bool) -> None:
    """The staged topology's decider on pre-computed fingerprint records (its ceiling), and the
    per-record cost of the fingerprint workers."""
    from streamdedup.bench.decider import run as run_decider

    res = run_decider(get_config(config_path), documents, long_documents, rounds)
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    console = make_console()
    for name, label in (("reuters", "Reuters stories"), ("long", "20-50 KB pages")):
        if name not in res:
            continue
        r = res[name]
        console.print(f"{label}: {r['documents']:,} records, batches of {res['batch_size']}: decider "
                      f"{r['decider_fingerprints_per_s']:,.0f} fingerprints/s (median of {res['rounds']}; decode "
                      f"{r['decode_us_per_record']:.2f} us of {r['decider_us_per_record']:.2f} us/record); {r['counts']}")
        console.print(f"  worker {r['worker_us_per_record']:.1f} us/record (prepare {r['prepare_us_per_record']:.1f}, fingerprint "
                      f"{r['fingerprint_us_per_record']:.1f}, encode {r['encode_us_per_record']:.2f}); fingerprint record "
                      f"{r['record_bytes_mean']:.0f} B mean (p99 {r['record_bytes_p99']:.0f}) for {r['value_bytes_mean']:.0f} B values: "
                      f"{r['record_to_value'] * 100:.1f}%")


@bench.command("kafka")
@config_option
@click.option("--bootstrap-servers", default=None, help="broker to use (default kafka.bootstrap_servers; scripts/kafka-local start)")
@click.option("--records", type=click.IntRange(1000, 10_000_000), default=200_000, show_default=True,
              help="input records per round")
@click.option("--feed", type=click.Choice(["wire", "resends", "long"]), default="wire", show_default=True,
              help="wire: new stories + 20% resends/variants; resends: Reuters cycled (~90% duplicates, worst case); "
                   "long: 20-50 KB pages, 20% near-duplicates (--topology staged)")
@click.option("--no-latency", is_flag=True, help="skip the latency test")
@click.option("--latency-only", "latency_rate", type=click.FloatRange(100, 1_000_000), default=None, metavar="DOCS_PER_S",
              help="skip the throughput rounds: only the latency test, at this input rate")
@click.option("--topology", type=click.Choice(["single", "staged", "faust"]), default="single", show_default=True,
              help="staged: the staged topology (--workers) against the single-index processor and the passthrough, "
                   "each as its own processes; --feed wire or long (20-50 KB pages); faust: the same with faust workers "
                   "(the faust extra)")
@click.option("--rounds", type=click.IntRange(1, 20), default=3, show_default=True,
              help="--topology staged|faust: alternating rounds (medians reported)")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="--topology staged|faust: worker processes")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def bench_kafka(config_path: str | None, bootstrap_servers: str | None, records: int, feed: str, no_latency: bool,
                latency_rate: float | None, topology: str, rounds: int, workers: int, as_json: bool) -> None:
    """Processor vs transactional passthrough on one broker; latency at half the processor's rate."""
    from streamdedup.bench.kafka import latency
    from streamdedup.bench.kafka import run as run_kafka
    from streamdedup.logs import setup_logging

    setup_logging(30)
    cfg = get_config(config_path)
    bootstrap = bootstrap_servers or cfg.kafka.bootstrap_servers
    if topology in ("staged", "faust"):
        from streamdedup.bench.staged import run as run_staged

        if topology == "faust":
            require("faust", "faust", "streamdedup bench kafka --topology faust")
        res = run_staged(bootstrap, records, feed, workers, rounds, with_latency=not no_latency, topology=topology)
        click.echo(json.dumps(res, indent=2) if as_json else _staged_lines(res))
        return
    if latency_rate is not None:
        lat = latency(cfg, bootstrap, latency_rate, kind=feed)
        if as_json:
            click.echo(json.dumps(lat, indent=2))
            return
        make_console().print(_latency_line(lat, f"{lat['rate']:,.0f} docs/s"))
        return
    res = run_kafka(cfg, bootstrap, records, not no_latency, feed)
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    console = make_console()
    console.print(f"{res['records']:,} Reuters-derived records ({res['feed']} feed), batches of {res['batch_size']}, one partition, exactly-once")
    runs = lambda xs: ", ".join(f"{x:,.0f}" for x in xs)  # noqa: E731
    console.print(f"transactional passthrough: {res['passthrough_docs_per_s']:,.0f} docs/s (median of {runs(res['passthrough_runs'])})")
    console.print(f"streamdedup processor:     {res['processor_docs_per_s']:,.0f} docs/s (median of {runs(res['processor_runs'])}), "
                  f"{res['ratio'] * 100:.0f}% of passthrough; {res['processor_counts']}")
    if "latency" in res:
        lat = res["latency"]
        console.print(_latency_line(lat, f"{lat['rate']:,.0f} docs/s (50% of max)"))


def _staged_lines(r: dict) -> str:
    t = r["topology"]
    return "\n".join([
        f"{r['records']:,} records ({r['feed']}, {r['value_bytes']:,.0f} B values), {r['partitions']} input partitions, "
        f"medians of {len(r['rounds'])} rounds",
        f"transactional passthrough: {r['passthrough_docs_per_s']:,.0f} docs/s",
        f"single-index processor:    {r['single_docs_per_s']:,.0f} docs/s; {r['messages_per_record']['single']:.2f} messages, "
        f"{r['bytes_per_record']['single']:,.0f} B written per record",
        f"{t}, {r['workers']} workers:{' ' * (6 - len(t) + 5)}{r[t + '_docs_per_s']:,.0f} docs/s "
        f"({r[t + '_vs_single']:.2f}x single); "
        f"{r['messages_per_record'][t]:.2f} messages, {r['bytes_per_record'][t]:,.0f} B written per record",
        *_cpu_lines(r),
        *(f"latency, {lat['topology']} at {lat['rate']:,.0f} docs/s: p50 {lat['p50_ms']:.0f} ms, p99 {lat['p99_ms']:.0f} ms "
          f"({lat['seen']:,}/{lat['records']:,} seen)" for lat in r.get("latency", []))])


def _cpu_lines(r: dict) -> list[str]:
    """CPU per record by stage and thread role (medians of the rounds), and the rate at which the
    machine's cores would all be busy with it."""
    lines = ["CPU per record (us; each stage less its cost on a few records; medians of the rounds):"]
    for name, stages in r.get("cpu_us_per_record", {}).items():
        parts = "; ".join(f"{stage} {p['total']:.0f} (" + ", ".join(f"{k} {v:.1f}" for k, v in p.items() if k != "total") + ")"
                          for stage, p in stages.items())
        lines.append(f"  {name}: {parts}; all cores busy at {r['cpu_bound_docs_per_s'][name]:,.0f} docs/s")
        if any(p["total"] <= 0 for p in stages.values()):
            lines.append("  (a figure at or below 0: the run was too short to tell its work from the spread of the "
                         "processes' start-up; use more --records)")
    return lines


def _latency_line(lat: dict, at: str) -> str:
    return (f"end-to-end latency at {at}: p50 {lat['p50_ms']:.0f} ms, p99 {lat['p99_ms']:.0f} ms, max {lat['max_ms']:.0f} ms "
            f"({lat['seen']:,}/{lat['records']:,} seen); after the first 5 s: p50 {lat['steady_p50_ms']:.0f} ms, "
            f"p99 {lat['steady_p99_ms']:.0f} ms")


@bench.command("soak")
@config_option
@click.option("--bootstrap-servers", default=None,
              help="broker to use (default: the local one of scripts/kafka-local, reused if running, else started and stopped)")
@click.option("--rate", type=click.FloatRange(1, 1_000_000), default=3000, show_default=True, help="input records per second")
@click.option("--seconds", type=click.FloatRange(1, 86_400), default=300, show_default=True, help="how long the load runs")
@click.option("--partitions", type=click.IntRange(1, 1000), default=1, show_default=True, help="input and output topic partitions")
@click.option("--max-documents", type=click.IntRange(16, 2**31 - 1), default=None,
              help="engine.max_documents for the processor (default: the config's); lower it to see the index fill and evict")
@click.option("--sample-every", type=click.FloatRange(0.5, 600), default=5.0, show_default=True, help="seconds between RSS/lag samples")
@click.option("--window", "window_s", type=click.FloatRange(1, 3600), default=30.0, show_default=True, help="latency window, seconds")
@click.option("--seed", type=int, default=21, show_default=True, help="random seed of the feed")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True), default=None, help="also write the report here")
def bench_soak(config_path: str | None, bootstrap_servers: str | None, rate: float, seconds: float, partitions: int,
               max_documents: int | None, sample_every: float, window_s: float, seed: int, json_path: str | None) -> None:
    """The Kafka processor (own process) under a steady load: latency, lag, RSS over time, nothing lost."""
    from streamdedup.bench import soak
    from streamdedup.bench.soak_probe import broker

    cfg = get_config(config_path)
    with broker(bootstrap_servers) as bootstrap:
        res = soak.run(cfg, bootstrap, rate, seconds, config_path=config_path, partitions=partitions, max_documents=max_documents,
                       sample_every=sample_every, window_s=window_s, seed=seed)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(res, f, indent=2)
    _print_soak(make_console(), res)
    if not res["ok"]:
        raise click.ClickException("the soak failed: records lost, doubled or unknown, or the processor did not exit cleanly (see above)")


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _print_soak(console, res: dict) -> None:
    p = res["producer"]
    console.print(f"soak: {res['rate']:g} records/s for {res['seconds']:g} s, {res['partitions']} partition(s), batch {res['batch_size']}, "
                  f"max_documents {res['max_documents']:,}; produced {p['records']:,} at {p['achieved_rate']:,.0f}/s "
                  f"(producer at most {p['max_late_ms']:,.0f} ms late), drained {res['drain_s']} s after the load")
    table = Table("t (s)", "produced", "seen", "lag", "RSS MB", "CPU %", "indexed", "load 1m")
    for r in res["samples"]:
        table.add_row(f"{r['t_s']:.0f}", f"{r['produced']:,}", f"{r['seen']:,}", _ms(r["lag"]),
                      "-" if r["rss_mb"] is None else f"{r['rss_mb']:,.0f}", "-" if r["cpu_pct"] is None else f"{r['cpu_pct']:.0f}",
                      _ms(r["indexed"]), f"{r['load1']:.2f}")
    console.print(table)
    lat = res["latency"]
    console.print(f"visible latency (produce -> read_committed), {lat['n']:,} records: p50 {_ms(lat['p50_ms'])} ms, "
                  f"p95 {_ms(lat['p95_ms'])} ms, p99 {_ms(lat['p99_ms'])} ms, max {_ms(lat['max_ms'])} ms")
    windows = Table("window (s)", "records", "p50 ms", "p95 ms", "p99 ms", "max ms")
    for w in res["latency_windows"]:
        windows.add_row(f"{w['start_s']:.0f}-{w['end_s']:.0f}", f"{w['n']:,}", _ms(w["p50_ms"]), _ms(w["p95_ms"]), _ms(w["p99_ms"]),
                        _ms(w["max_ms"]))
    console.print(windows)
    rss = res["rss"]
    verdict = {True: "levelled off", False: "still growing", None: "undetermined"}[rss["levelled"]]
    console.print(f"RSS {_ms(rss['first_mb'])} -> {_ms(rss['last_mb'])} MB (max {_ms(rss['max_mb'])}): {verdict}; "
                  f"first third {rss['first_mb_per_min']} MB/min, last third {rss['last_mb_per_min']} MB/min ({rss['rule']})")
    ix = res["index"]
    full = (f"full at {ix['full_at_s']:.0f} s; RSS since then {ix['rss_mb_per_min_once_full']} MB/min" if ix["full_at_s"] is not None
            else "not full: RSS grows while the arena fills, up to engine.max_documents")
    console.print(f"index: {_ms(ix['indexed'])} documents of engine.max_documents {ix['max_documents']:,} ({full})")
    d = res["delivery"]
    console.print(f"outputs: {res['outputs']}; produced {d['produced']:,}, seen {d['seen']:,}: lost {d['lost']}, doubled {d['doubled']}, "
                  f"unknown {d['unexpected']} -> {'nothing lost' if d['ok'] else 'FAILED ' + str(d['examples'])}")
    console.print(f"processor exit code {res['processor_exit_code']} after SIGTERM; its summary: {res.get('processor_summary')}")
    console.print(f"machine: {res['cpu_count']} cores, load average {_load(res['loadavg_start'])} at the start, "
                  f"{_load(res['loadavg_end'])} at the end; processor CPU {res['processor_cpu_pct_mean']}% of one core (mean)")


def _load(avg) -> str:
    return "/".join(f"{x:.2f}" for x in avg)
