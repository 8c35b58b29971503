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
_UNIQUE_TAIL = b"," + _UNIQUE_SPLICE + b"\n"
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

    def batch(self, line_nos: list[int], raws: list[bytes], decoded: list[Decoded], decisions: BatchDecisions
              ) -> Callable[[], None]:
        """Output lines of a decided batch (and the dead letters since the last one), to write."""
        unique: list = []
        dups: list[bytes] = []
        codes = decisions.codes.tolist()
        for k, code in enumerate(codes):
            raw = raws[k]
            if code == DUPLICATE:
                dec = decisions.decision(k)
                dups.append(_splice(raw, decoded[k], b'"_dedup":' + orjson.dumps(dec.tags()) + b"}"))
                self.summary.relations[dec.relation] += 1
            elif code == REJECTED:
                self.dead_letter(raw, line_nos[k], "text", decisions.decision(k).reason or "rejected")
            elif raw[-1:] == b"}" and decoded[k].obj and "_dedup" not in decoded[k].obj:
                # the common line: its bytes up to the closing brace, then the constant tags
                # (a view, so the line is copied once, into the chunk)
                unique.append(memoryview(raw)[:-1])
                unique.append(_UNIQUE_TAIL)
            else:
                unique.append(_splice(raw, decoded[k], _UNIQUE_SPLICE) + b"\n")
        self.summary.unique += len(codes) - len(dups) - sum(1 for c in codes if c == REJECTED)
        self.summary.duplicates += len(dups)
        chunks = [(self.files[name], data) for name, data in
                  (("unique", b"".join(unique)), ("duplicates", b"".join(d + b"\n" for d in dups)),
                   ("dead_letter", b"".join(d + b"\n" for d in self.dead))) if data]
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
        line_nos: list[int] = []
        raws: list[bytes] = []
        decoded: list[Decoded] = []
        line_no = 0
        lines = 0

        def flush() -> None:
            n = len(decoded)
            engine.process_columns(
                [d.id for d in decoded], [d.text for d in decoded], np.fromiter((d.event_time_ms for d in decoded), np.int64, n),
                np.full(n, -1, np.int64), np.array(line_nos, dtype=np.int64), {key: line_no} if key != "stdin" else None,
                before_commit=lambda decisions: writer.batch(line_nos, raws, decoded, decisions))
            line_nos.clear()
            raws.clear()
            decoded.clear()

        now_ms = int(time.time() * 1000)
        fallback_id = lambda: f"line:{line_no}"  # noqa: E731 (read when a record has no id)
        for raw in _lines(stream):
            line_no += 1
            if line_no <= done_before:
                continue
            if stop_after is not None and lines >= stop_after:
                line_no -= 1
                break
            lines += 1
            if not raw or raw.isspace():
                writer.dead_letter(raw, line_no, "json", "empty line")
                continue
            res = decoder(raw, fallback_id, now_ms)
            if type(res) is Rejected:
                writer.dead_letter(raw, line_no, res.stage, res.reason)
                continue
            line_nos.append(line_no)
            raws.append(raw)
            decoded.append(res)
            if len(decoded) >= batch_size:
                summary.lines = lines
                flush()
                now_ms = int(time.time() * 1000)
                if progress:
                    progress(lines)
        summary.lines = lines
        flush()
        if progress:
            progress(lines)
    finally:
        try:
            engine.close()  # waits for the last commit, which syncs the outputs first
        finally:
            summary.seconds = time.perf_counter() - t0
            writer.close()
            if stream is not sys.stdin.buffer:
                stream.close()
    return summary
