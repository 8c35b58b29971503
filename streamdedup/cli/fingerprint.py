"""``streamdedup fingerprint``: input records to fingerprint records, computed where the texts are."""

from __future__ import annotations

import base64
from contextlib import contextmanager
from typing import BinaryIO, Callable, Iterator

import click

from streamdedup.cli._common import config_option, fill_kernel_cache, get_config, kafka_overrides

#: input lines fingerprinted per call (one scan and one kernel pass each)
CHUNK = 4096


def _chunks(stream: BinaryIO) -> Iterator[list[bytes]]:
    lines: list[bytes] = []
    for line in stream:
        lines.append(line.rstrip(b"\r\n"))
        if len(lines) == CHUNK:
            yield lines
            lines = []
    if lines:
        yield lines


@click.command("fingerprint")
@config_option
@click.option("--input", "input_path", type=click.Path(dir_okay=False, allow_dash=True), default="-", show_default=True,
              help="JSONL input records (fields as the config's input settings say); - reads stdin.")
@click.option("--output", "output_path", type=click.Path(dir_okay=False, writable=True, allow_dash=True), default="-",
              show_default=True, help="Where the records go, one base64 line each; - writes stdout.")
@click.option("--source", default=None, help="The records' source name (default: the input file's name, or 'stdin').")
@click.option("--with-text", is_flag=True,
              help="Keep the canonical text in each record (a decider that keeps texts needs it); default: text-free.")
@click.option("--first-offset", type=click.IntRange(0, 2**62), default=0, show_default=True,
              help="The position of the first input line in --source: a source sending another file later goes on "
                   "from where the last one ended (a decider takes a position it has seen for a re-send).")
@click.option("--to-topic", default=None, metavar="TOPIC",
              help="Send the records (binary, not base64) to this Kafka topic of the config's cluster instead of "
                   "--output: a decider's fingerprints topic, or the query topic.")
@click.option("--client", default=None, help="With --to-topic: a 'client' header on each record (queries' rate limit).")
@click.option("--bootstrap-servers", default=None, help="With --to-topic: overrides kafka.bootstrap_servers.")
def fingerprint(config_path: str | None, input_path: str, output_path: str, source: str | None, with_text: bool,
                first_offset: int, to_topic: str | None, client: str | None, bootstrap_servers: str | None) -> None:
    """Fingerprint input records where they are: one fingerprint record per input line.

    The first line is the params announcement (the fingerprint settings, so a decider with
    other settings names them); then one line per input line, in order: its fingerprint
    record, or a dead-letter record with the reason it could not be read. Each line is a
    record in base64. Without --with-text no record carries the story's text: what leaves is
    the fingerprint (MinHash, band keys, LD signature, digest, anchor keys, lengths), the id
    and the time. Records are the staged topology's fingerprint records (versions 4 and 5).
    """
    from streamdedup.pipeline.fingerprint_texts import TextFingerprinter
    from streamdedup.pipeline.fingerprints import KIND_DEAD

    if (client or bootstrap_servers) and not to_topic:
        raise click.UsageError("--client and --bootstrap-servers go with --to-topic")
    cfg = kafka_overrides(get_config(config_path), bootstrap_servers, ())
    fill_kernel_cache(cfg, "worker")
    name = source or ("stdin" if input_path == "-" else click.format_filename(input_path).rsplit("/", 1)[-1])
    fp = TextFingerprinter(cfg, name, with_text)
    counts = {"records": 0, "fingerprints": 0, "dead_letter": 0}
    with click.open_file(input_path, "rb") as inp, _sink(cfg, output_path, to_topic, client) as send:
        send([fp.announcement()], [None])
        for lines in _chunks(inp):
            first = first_offset + counts["records"]
            records = fp.records(lines, first)
            send(records, [f"{name}:{first + k}".encode() for k in range(len(records))])
            dead = sum(1 for r in records if r[1] == KIND_DEAD)
            counts["records"] += len(lines)
            counts["dead_letter"] += dead
            counts["fingerprints"] += len(lines) - dead
    where = f" sent to {to_topic}" if to_topic else ""
    click.echo(f"{counts['records']} records: {counts['fingerprints']} fingerprints, {counts['dead_letter']} dead letters"
               f" ({'with' if with_text else 'without'} text){where}", err=True)


@contextmanager
def _sink(cfg, output_path: str, to_topic: str | None, client: str | None) -> Iterator[Callable[[list, list], None]]:
    """Where the records go: base64 lines to ``output_path``, or binary records to ``to_topic``
    keyed ``SOURCE:POSITION`` (the query topic answers under the query's key)."""
    if to_topic is None:
        with click.open_file(output_path, "wb", atomic=output_path != "-") as out:
            yield lambda records, _keys: out.write(b"".join(base64.b64encode(r) + b"\n" for r in records))
        return
    from confluent_kafka import Producer

    from streamdedup.runtime.kafka.clientlog import client_settings
    from streamdedup.runtime.kafka.transactions import produce_waiting

    failed: list = []
    producer = Producer(client_settings(cfg.kafka, {"enable.idempotence": True, "linger.ms": 20}))
    headers = [("client", client.encode())] if client else None

    def send(records: list[bytes], keys: list) -> None:
        for r, key in zip(records, keys):
            produce_waiting(producer, to_topic, r, key, headers=headers,
                            on_delivery=lambda err, _m: failed.append(err) if err is not None else None)
        producer.poll(0)

    yield send
    left = producer.flush(60)
    if left or failed:
        raise click.ClickException(f"{left + len(failed)} records not delivered to {to_topic}"
                                   + (f": {failed[0].str()}" if failed else " within 60 s"))
