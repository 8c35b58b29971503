"""``streamdedup fingerprint``: input records to fingerprint records, computed where the texts are."""

from __future__ import annotations

import base64
from typing import BinaryIO, Iterator

import click

from streamdedup.cli._common import config_option, fill_kernel_cache, get_config

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
def fingerprint(config_path: str | None, input_path: str, output_path: str, source: str | None, with_text: bool) -> None:
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

    cfg = get_config(config_path)
    fill_kernel_cache(cfg, "worker")
    name = source or ("stdin" if input_path == "-" else click.format_filename(input_path).rsplit("/", 1)[-1])
    fp = TextFingerprinter(cfg, name, with_text)
    counts = {"records": 0, "fingerprints": 0, "dead_letter": 0}
    with click.open_file(input_path, "rb") as inp, click.open_file(output_path, "wb", atomic=output_path != "-") as out:
        out.write(base64.b64encode(fp.announcement()) + b"\n")
        for lines in _chunks(inp):
            records = fp.records(lines, counts["records"])
            out.write(b"".join(base64.b64encode(r) + b"\n" for r in records))
            dead = sum(1 for r in records if r[1] == KIND_DEAD)
            counts["records"] += len(lines)
            counts["dead_letter"] += dead
            counts["fingerprints"] += len(lines) - dead
    click.echo(f"{counts['records']} records: {counts['fingerprints']} fingerprints, {counts['dead_letter']} dead letters"
               f" ({'with' if with_text else 'without'} text)", err=True)
