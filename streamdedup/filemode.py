"""Streaming file mode, the embedded default: JSONL in, unique/duplicates/dead-letter JSONL out.

Every input line ends in exactly one of the three outputs. Output lines are the input object,
byte for byte, with a ``"_dedup"`` object spliced in before the closing brace (the object is
re-serialised only if it already has a ``_dedup`` key). Dead-letter lines carry the raw line,
its number, the stage and the reason.

State lives in the state directory (default ``OUTPUT_DIR/state``) and outputs are appended, so
running again continues the same index: a second run on the rest of the input decides exactly
as one uninterrupted run would. The state commit records how many lines of each input file
were done; running again on the *same* file resumes after them. Outputs of a micro-batch are
written before its state commit (and fsynced first when ``state.sync`` is on), so a crash, or
with ``state.sync`` a power loss, can repeat the last batches' output lines but never lose one
(at-least-once). The commit itself runs on a worker thread while the next batch is decided.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import numpy as np
import orjson

from .config import Config
from .decisions import DUPLICATE, REJECTED, UNIQUE_TAGS, BatchDecisions
from .decode import Decoded, RecordDecoder, Rejected
from .engine import Deduplicator
from .state import open_store
from .state.pipelined import PipelinedStore

#: what every unique line gets spliced in (the tags of a unique document never vary)
_UNIQUE_SPLICE = b'"_dedup":' + orjson.dumps(UNIQUE_TAGS) + b"}"
_READ_CHUNK = 1 << 20


@dataclass
class Summary:
    lines: int = 0
    skipped_resumed: int = 0
    unique: int = 0
    duplicates: int = 0
    dead_letter: int = 0
    relations: Counter = field(default_factory=Counter)
    dead_letter_stages: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def docs_per_s(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else 0.0

    def reconciles(self) -> bool:
        return self.unique + self.duplicates + self.dead_letter == self.lines


def _splice(raw: bytes, decoded: Decoded, tags: bytes) -> bytes:
    """The input line with ``"_dedup": tags`` before its closing brace (``tags`` ends with ``}``)."""
    if decoded.obj is None:
        return orjson.dumps({"id": decoded.id, "text": decoded.text, "_dedup": orjson.Fragment(tags[9:-1])})
    body = raw.rstrip()
    if "_dedup" in decoded.obj or not body.endswith(b"}"):
        return orjson.dumps({**decoded.obj, "_dedup": orjson.Fragment(tags[9:-1])})
    return body[:-1] + (b"," if decoded.obj else b"") + tags


def _dead_letter(raw: bytes, line_no: int, stage: str, reason: str) -> bytes:
    out = {"line": line_no, "stage": stage, "reason": reason}
    try:
        out["raw"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        out["raw_base64"] = base64.b64encode(raw).decode("ascii")
    return orjson.dumps(out)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    """Lines without their end of line, read a megabyte at a time."""
    rest = b""
    while True:
        chunk = stream.read(_READ_CHUNK)
        if not chunk:
            break
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        for line in parts:
            yield line[:-1] if line.endswith(b"\r") else line
    if rest:
        yield rest[:-1] if rest.endswith(b"\r") else rest


def input_key(path: str) -> str:
    return "stdin" if path == "-" else "file:" + str(Path(path).resolve())


class _Writer:
    """The three output files of a run, and the counts of what went where.

    The main thread turns decisions into output lines; the lines are written (and, with
    ``sync``, fsynced) by the action :meth:`batch` returns, which the store runs right before
    the batch's state commit, on its commit thread: a write never waits on an fsync of the
    same file, and the main thread never waits on either.
    """

    def __init__(self, out: Path, summary: Summary, sync: bool):
        self.files = {name: open(out / f"{name}.jsonl", "ab") for name in ("unique", "duplicates", "dead_letter")}
        self.summary = summary
        self.sync = sync
        self.dead: list[bytes] = []

    def dead_letter(self, raw: bytes, line_no: int, stage: str, reason: str) -> None:
        self.dead.append(_dead_letter(raw, line_no, stage, reason))
        self.summary.dead_letter += 1
        self.summary.dead_letter_stages[stage] += 1

    def batch(self, pending: list[tuple[int, bytes, Decoded]], decisions: BatchDecisions) -> Callable[[], None]:
        """Output lines of a decided batch (and the dead letters since the last one), to write."""
        unique, dups = [], []
        codes = decisions.codes.tolist()
        for k, (line_no, raw, d) in enumerate(pending):
            code = codes[k]
            if code == DUPLICATE:
                dec = decisions.decision(k)
                dups.append(_splice(raw, d, b'"_dedup":' + orjson.dumps(dec.tags()) + b"}"))
                self.summary.relations[dec.relation] += 1
            elif code == REJECTED:
                self.dead_letter(raw, line_no, "text", decisions.decision(k).reason or "rejected")
            else:
                unique.append(_splice(raw, d, _UNIQUE_SPLICE))
        self.summary.unique += len(unique)
        self.summary.duplicates += len(dups)
        chunks = [(self.files[name], b"\n".join(lines) + b"\n") for name, lines in
                  (("unique", unique), ("duplicates", dups), ("dead_letter", self.dead)) if lines]
        self.dead = []
        return lambda: self._write(chunks)

    def _write(self, chunks: list) -> None:
        for f, data in chunks:
            f.write(data)
            f.flush()
            if self.sync:
                os.fsync(f.fileno())

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def run_file(
    cfg: Config,
    input_path: str,
    output_dir: str,
    state_dir: str | None = None,
    progress: Callable[[int], None] | None = None,
    stop_after: int | None = None,
) -> Summary:
    """Deduplicate a JSONL (or text) file; returns the counts. ``stop_after`` lines (tests)."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary()
    writer = _Writer(out, summary, cfg.state.sync)
    # state commits (and the output writes before each) run on a worker while the next batch
    # is decided
    store = PipelinedStore(open_store(state_dir or cfg.state.dir or str(out / "state"), sync=cfg.state.sync))
    try:
        engine = Deduplicator(cfg, store)
    except BaseException:
        store.close()
        writer.close()
        raise
    key = input_key(input_path)
    done_before = int(engine.positions.get(key, 0)) if key != "stdin" else 0
    summary.skipped_resumed = done_before
    stream = sys.stdin.buffer if input_path == "-" else open(input_path, "rb")
    decoder = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)
    batch_size = cfg.engine.batch_size
    t0 = time.perf_counter()
    try:
        pending: list[tuple[int, bytes, Decoded]] = []
        line_no = 0

        def flush() -> None:
            n = len(pending)
            times = np.fromiter((d.event_time_ms for _, _, d in pending), np.int64, n)
            engine.process_columns(
                [d.id for _, _, d in pending], [d.text for _, _, d in pending], times, np.full(n, -1, np.int64),
                np.fromiter((ln for ln, _, _ in pending), np.int64, n),
                {key: line_no} if key != "stdin" else None,
                before_commit=lambda decisions: writer.batch(pending, decisions))
            pending.clear()

        now_ms = int(time.time() * 1000)
        for raw in _lines(stream):
            line_no += 1
            if line_no <= done_before:
                continue
            if stop_after is not None and summary.lines >= stop_after:
                line_no -= 1
                break
            summary.lines += 1
            if not raw.strip():
                writer.dead_letter(raw, line_no, "json", "empty line")
                continue
            res = decoder(raw, lambda: f"line:{line_no}", now_ms)
            if type(res) is Rejected:
                writer.dead_letter(raw, line_no, res.stage, res.reason)
                continue
            pending.append((line_no, raw, res))
            if len(pending) >= batch_size:
                flush()
                now_ms = int(time.time() * 1000)
                if progress:
                    progress(summary.lines)
        flush()
        if progress:
            progress(summary.lines)
    finally:
        try:
            engine.close()  # waits for the last commit, which syncs the outputs first
        finally:
            summary.seconds = time.perf_counter() - t0
            writer.close()
            if stream is not sys.stdin.buffer:
                stream.close()
    return summary
