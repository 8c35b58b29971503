"""Streaming file mode, the embedded default: JSONL in, unique/duplicates/dead-letter JSONL out.

Every input line ends in exactly one of the three outputs. Output lines are the input object,
byte for byte, with a ``"_dedup"`` object spliced in before the closing brace (the object is
re-serialised only if it already has a ``_dedup`` key). Dead-letter lines carry the raw line,
its number, the stage and the reason.

State lives in the state directory (default ``OUTPUT_DIR/state``) and outputs are appended, so
running again continues the same index: a second run on the rest of the input decides exactly
as one uninterrupted run would. The state commit records how many lines of each input file
were done; running again on the *same* file resumes after them. Outputs of a micro-batch are
flushed before its state commit, so a crash can repeat the last batch's output lines but never
lose one (at-least-once).
"""

from __future__ import annotations

import base64
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import orjson

from .config import Config
from .decode import Decoded, Rejected, decode_record
from .engine import Decision, Deduplicator, Document
from .state import open_store


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


def _with_tags(raw: bytes, decoded: Decoded, tags: dict) -> bytes:
    if decoded.obj is None:
        return orjson.dumps({"id": decoded.id, "text": decoded.text, "_dedup": tags})
    body = raw.rstrip()
    if "_dedup" in decoded.obj or not body.endswith(b"}"):
        return orjson.dumps({**decoded.obj, "_dedup": tags})
    sep = b"," if decoded.obj else b""
    return body[:-1] + sep + b'"_dedup":' + orjson.dumps(tags) + b"}"


def _dead_letter(raw: bytes, line_no: int, stage: str, reason: str) -> bytes:
    out = {"line": line_no, "stage": stage, "reason": reason}
    try:
        out["raw"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        out["raw_base64"] = base64.b64encode(raw).decode("ascii")
    return orjson.dumps(out)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    for line in stream:
        if line.endswith(b"\n"):
            line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
        yield line


def input_key(path: str) -> str:
    return "stdin" if path == "-" else "file:" + str(Path(path).resolve())


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
    engine = Deduplicator(cfg, open_store(state_dir or cfg.state.dir or str(out / "state"), sync=cfg.state.sync))
    key = input_key(input_path)
    done_before = int(engine.positions.get(key, 0)) if key != "stdin" else 0
    summary = Summary(skipped_resumed=done_before)
    files = {name: open(out / f"{name}.jsonl", "ab") for name in ("unique", "duplicates", "dead_letter")}
    stream = sys.stdin.buffer if input_path == "-" else open(input_path, "rb")
    max_text = cfg.fingerprint.max_text_bytes
    batch_size = cfg.engine.batch_size
    t0 = time.perf_counter()
    try:
        pending: list[tuple[int, bytes, Decoded]] = []
        dead: list[bytes] = []
        line_no = 0

        def write(decisions: list[Decision]) -> None:
            buf_u, buf_d = [], []
            for (n, raw, d), dec in zip(pending, decisions):
                if dec.status == "rejected":
                    dead.append(_dead_letter(raw, n, "text", dec.reason or "rejected"))
                    summary.dead_letter += 1
                    summary.dead_letter_stages["text"] += 1
                elif dec.status == "unique":
                    buf_u.append(_with_tags(raw, d, dec.tags()))
                    summary.unique += 1
                else:
                    buf_d.append(_with_tags(raw, d, dec.tags()))
                    summary.duplicates += 1
                    summary.relations[dec.relation] += 1
            for name, lines in (("unique", buf_u), ("duplicates", buf_d), ("dead_letter", dead)):
                if lines:
                    files[name].write(b"\n".join(lines) + b"\n")
                    files[name].flush()

        def flush() -> None:
            docs = [Document(d.id, d.text, d.event_time_ms, -1, n) for n, _, d in pending]
            engine.process(docs, {key: line_no} if key != "stdin" else None, before_commit=write)
            dead.clear()
            pending.clear()

        for raw in _lines(stream):
            line_no += 1
            if line_no <= done_before:
                continue
            if stop_after is not None and summary.lines >= stop_after:
                line_no -= 1
                break
            summary.lines += 1
            if not raw.strip():
                dead.append(_dead_letter(raw, line_no, "json", "empty line"))
                summary.dead_letter += 1
                summary.dead_letter_stages["json"] += 1
                continue
            res = decode_record(raw, cfg.input, f"line:{line_no}", int(time.time() * 1000), max_text)
            if isinstance(res, Rejected):
                dead.append(_dead_letter(raw, line_no, res.stage, res.reason))
                summary.dead_letter += 1
                summary.dead_letter_stages[res.stage] += 1
            else:
                pending.append((line_no, raw, res))
            if len(pending) >= batch_size:
                flush()
                if progress:
                    progress(summary.lines)
        flush()
        if progress:
            progress(summary.lines)
    finally:
        summary.seconds = time.perf_counter() - t0
        for f in files.values():
            f.close()
        if stream is not sys.stdin.buffer:
            stream.close()
        engine.close()
    return summary
