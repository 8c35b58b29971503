"""``streamdedup inspect``: decided duplicates next to their originals, with a word diff and why
they matched; from the Kafka duplicates topic (read_committed) or a file-mode output directory."""

from __future__ import annotations


import click
from rich.text import Text
import orjson

from streamdedup.errors import InspectError
from streamdedup.runtime.since import parse_since
from streamdedup.tools.inspection.reader import DuplicateSource, Entry, Filter, clusters, follow, pairs
from streamdedup.cli._common import compile_notice, config_option, get_config, kafka_overrides, make_console
from streamdedup.cli.inspect_view import clusters_table, render_pair, safe

RELATIONS = ("exact", "near_duplicate", "contains", "contained_in")
#: the kernels pairing calls (fingerprints and the full comparison): compiled before, with the notice
_UNITS = ("fingerprint", "explain", "evidence")


def open_source(cfg, output_dir: str | None, input_path: str | None, topic: str | None, lookup_window: int) -> DuplicateSource:
    """A file-mode output directory when given, else the Kafka duplicates topic."""
    if output_dir is not None:
        from streamdedup.tools.inspection.file_source import FileDuplicates

        return FileDuplicates(output_dir, cfg, input_path)
    if input_path is not None:
        raise click.UsageError("--input goes with --output-dir (file mode); in Kafka mode originals come from the input topic")
    from streamdedup.tools.inspection.kafka_source import KafkaDuplicates

    return KafkaDuplicates(cfg, topic, lookup_window=lookup_window)


def _filter(relations, min_sim, max_sim, ids, since) -> Filter:
    if min_sim is not None and max_sim is not None and min_sim > max_sim:
        raise click.UsageError(f"--min-similarity {min_sim} is above --max-similarity {max_sim}")
    since_ms = None
    if since is not None:
        try:
            s = parse_since(since)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from None
        since_ms = s.value if s.kind == "time" else None
    return Filter(frozenset(relations) if relations else None, min_sim, max_sim, frozenset(ids) if ids else None, since_ms)


class _Out:
    """Prints pairs and clusters as rich renderings or JSON lines."""

    def __init__(self, cfg, as_json: bool, context: int):
        self.cfg, self.as_json, self.context = cfg, as_json, context
        self.console = make_console()
        self.fp = None
        self.undecodable = 0  # duplicates whose text these input settings could not decode

    def pairs(self, source: DuplicateSource, entries: list[Entry]) -> int:
        if not entries:
            return 0
        if self.fp is None:
            from streamdedup.sketch.fingerprint import Fingerprinter
            from streamdedup.warmup.fill import fill

            fill(self.cfg, _UNITS, announce=compile_notice)
            self.fp = Fingerprinter(self.cfg.fingerprint)
        bad = 0
        for e in entries:
            if not isinstance(e.doc, str):
                continue
            bad += 1
            self._say(safe(f"undecodable duplicate at {e.partition}:{e.offset}: {e.doc}"))
        if bad and not self.undecodable:  # said once, with the first undecodable ones
            inp = self.cfg.input
            self._say(safe(f"{bad} of {len(entries)} duplicates could not be decoded with these input settings "
                           f"(input.format {inp.format}, input.text_fields {list(inp.text_fields)}, input.id_field "
                           f"{inp.id_field!r}): give inspect the configuration the run used, --config FILE"))
        self.undecodable += bad
        for p in pairs(source, entries, self.cfg, self.fp):
            if self.as_json:
                click.echo(orjson.dumps(p.to_json()).decode())
            else:
                self.console.print(render_pair(p, self.cfg.verify, self.context))
                self.console.rule(style="dim")
        return len(entries)

    def _say(self, text: str) -> None:
        if self.as_json:
            click.echo(text, err=True)
        else:
            self.console.print(Text(text, style="yellow"))


@click.command()
@config_option
@click.option("--output-dir", "--dir", "output_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="File mode: the run's output directory (without it: the Kafka duplicates topic).")
@click.option("--input", "input_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="File mode: the run's input file, to fetch originals by line number (else by id from unique.jsonl).")
@click.option("--bootstrap-servers", default=None, help="Kafka: overrides kafka.bootstrap_servers.")
@click.option("--topic", default=None, help="Kafka: the duplicates topic (default kafka.duplicates_topic).")
@click.option("--relation", "relations", multiple=True, type=click.Choice(RELATIONS), help="Only these relations (repeatable).")
@click.option("--min-similarity", type=click.FloatRange(0.0, 1.0), default=None, help="Only recorded Jaccard >= this.")
@click.option("--max-similarity", type=click.FloatRange(0.0, 1.0), default=None, help="Only recorded Jaccard <= this.")
@click.option("--id", "ids", multiple=True, help="Only duplicates with this id, or of this root or matched id (repeatable).")
@click.option("--since", default=None, metavar="SINCE",
              help="Read forward from SINCE: earliest, an offset N of each partition, -N (the last N of each), an "
                   "ISO-8601 time or an age (48h); default: the latest --limit duplicates.")
@click.option("--limit", type=click.IntRange(1, None), default=10, show_default=True,
              help="Duplicates shown (roots with --clusters).")
@click.option("--scan", "max_scan", type=click.IntRange(1, None), default=100_000, show_default=True,
              help="Records read at most to find them (the range of --clusters).")
@click.option("--follow", "follow_", is_flag=True, help="Then keep showing new duplicates as they come (Ctrl-C ends).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line (per duplicate, or per root with --clusters).")
@click.option("--clusters", "show_clusters", is_flag=True, help="Roots with their copy counts over the range read.")
@click.option("--context", type=click.IntRange(-1, None), default=12, show_default=True,
              help="Unchanged words kept around each change; -1 shows whole texts.")
@click.option("--lookup-window", type=click.IntRange(1, None), default=10_000, show_default=True,
              help="Kafka: records per partition searched for an original that has no position tag (older records).")
def inspect(config_path, output_dir, input_path, bootstrap_servers, topic, relations, min_similarity, max_similarity, ids,
            since, limit, max_scan, follow_, as_json, show_clusters, context, lookup_window) -> None:
    """Show duplicates next to their originals: word diff, why they matched, the thresholds."""

    cfg = kafka_overrides(get_config(config_path), bootstrap_servers, ())
    filt = _filter(relations, min_similarity, max_similarity, ids, since)
    try:
        source = open_source(cfg, output_dir, input_path, topic, lookup_window)
    except InspectError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        _inspect(source, cfg, filt, since, limit, max_scan, follow_, as_json, show_clusters, context)
    except InspectError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        pass
    finally:
        source.close()


def _inspect(source, cfg, filt, since, limit, max_scan, follow_, as_json, show_clusters, context) -> None:
    out = _Out(cfg, as_json, context)
    if show_clusters:
        page = source.read(source.start(since), max_scan, filt, max_scan) if since else source.latest(max_scan, filt, max_scan)
        found = clusters(page.entries)
        if as_json:
            for c in found[:limit]:
                click.echo(orjson.dumps({"root": c.root, "copies": c.copies, "relations": dict(c.relations),
                                         "min_similarity": c.min_similarity, "first_ms": c.first_ms, "last_ms": c.last_ms,
                                         "position": c.position}).decode())
        else:
            out.console.print(clusters_table(found, page.scanned, limit))
        return
    if since is not None:
        page = source.read(source.start(since), limit, filt, max_scan)
    else:
        page = source.latest(limit, filt, max_scan)
    shown = out.pairs(source, page.entries)
    if shown and out.undecodable == shown:
        raise InspectError(f"none of the {shown} duplicates read could be decoded: they need the input settings "
                           "of the run that decided them (--config FILE)")
    if not follow_:
        if not shown and not as_json:
            out.console.print(f"no duplicates matched among {page.scanned:,} records read", style="yellow")
        return
    for entries in follow(source, page.next, filt):
        out.pairs(source, entries)
