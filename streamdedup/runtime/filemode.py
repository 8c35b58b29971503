"""Streaming file mode, the embedded default: JSONL in, unique/duplicates/dead-letter JSONL out
(and revisions JSONL under ``verify.revisions: topic``).

Every input line ends in exactly one of the outputs. Output lines are the input object,
byte for byte, with a ``"_dedup"`` object spliced in before the closing brace (the object is
re-serialised only if it already has a ``_dedup`` key). Dead-letter lines carry the raw line,
its number, the stage and the reason.

State lives in the state directory (default ``OUTPUT_DIR/state``) and outputs are appended, so
running again continues the same index: a second run on the rest of the input decides exactly
as one uninterrupted run would. The state commit records how many lines of each input file
were done; running again on the *same* file resumes after them. Outputs of a micro-batch are
written before its state commit (and fsynced first when ``state.sync`` is on), so a crash, or
with ``state.sync`` a power loss, can repeat the last batches' output lines but never lose one
(at-least-once). The commit itself runs on a worker thread while the next batch is decided,
and another worker fingerprints the batch after it (the kernel releases the GIL).
A batch that fails stops the run before anything later is written or committed (the rule of
a failed batch: ``single.processor``); running again resumes after the last committed line.

Speed: input is read in chunks of up to 8 MB (what is available, for pipes). The JSON fast
path (``scan.LineScanner``) checks and splits the chunk's lines in Numba; the plain lines
(ASCII, string id, text without markup) reach the engine as spans of the chunk, without a
Python object per line, and every other line goes through the Python decoder, which accepts
it or gives the reason for the dead letter.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import numpy as np
import orjson

from streamdedup._kernels.jsonscan import assemble
from streamdedup.config import Config
from streamdedup.engine.decisions import REJECTED, BatchDecisions
from streamdedup.text.decode import Decoded
from streamdedup.text.ids import Ids
from streamdedup.engine.deduplicator import Deduplicator, Source
from streamdedup.pipeline import Prepared, Preparer
from streamdedup.pipeline.decide import FingerprintAndDecide
from streamdedup.pipeline.outputs import OutputCounts
from streamdedup.pipeline.route import (DEAD_LETTER_DEST, DEST_INDEX, OUTPUTS, destinations, duplicate_tags, outputs_in_use,
                                      rejected_tags)
from streamdedup.pipeline.tags import UNIQUE_SPLICE, DeadLetterTags, dead_letter_line, file_tags, with_time_invalid
from streamdedup.text.scan import LineScanner, Scanned
from streamdedup.state import open_store
from streamdedup.state.pipelined import PipelinedStore

_UNIQUE_TAIL = b"," + UNIQUE_SPLICE + b"\n"
_TAIL_ARRAY = np.frombuffer(_UNIQUE_TAIL, dtype=np.uint8)
#: each output file's destination
_FILE_DEST = {o.file: o.dest for o in OUTPUTS}
_READ_CHUNK = 8 << 20


@dataclass
class Summary(OutputCounts):
    """A file-mode run's counts: its records are the input's lines."""

    skipped_resumed: int = 0
    dead_letter_stages: Counter = field(default_factory=Counter)

    @property
    def docs_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def _splice(raw: bytes, decoded: Decoded, tags: bytes) -> bytes:
    """The input line with ``"_dedup": tags`` before its closing brace (``tags`` ends with ``}``)."""
    if decoded.obj is None:
        return orjson.dumps({"id": decoded.id, "text": decoded.text, "_dedup": orjson.Fragment(tags[9:-1])})
    body = raw.rstrip()
    if "_dedup" in decoded.obj or not body.endswith(b"}"):
        return orjson.dumps({**decoded.obj, "_dedup": orjson.Fragment(tags[9:-1])})
    return body[:-1] + (b"," if decoded.obj else b"") + tags


def _chunks(stream: BinaryIO, scanner: LineScanner) -> Iterator[tuple[bytes, Scanned]]:
    """Chunks of the input with their complete lines scanned (a partial last line waits)."""
    rest = b""
    while True:
        chunk = stream.read1(_READ_CHUNK) if hasattr(stream, "read1") else stream.read(_READ_CHUNK)
        final = not chunk
        data = rest + chunk if rest else chunk
        if not data:
            return
        scanned, cut = scanner.scan(np.frombuffer(data, dtype=np.uint8), final)
        rest = data[cut:]
        if scanned.n:
            yield data, scanned
        if final:
            return


def input_key(path: str) -> str:
    return "stdin" if path == "-" else "file:" + str(Path(path).resolve())


class _Writer:
    """The output files of a run (``revisions.jsonl`` only with ``revisions_file``), and the
    counts of what went where.

    The main thread turns decisions into output lines; the lines are written (and, with
    ``sync``, fsynced) by the action :meth:`batch` returns, which the store runs right before
    the batch's state commit, on its commit thread: a write never waits on an fsync of the
    same file, and the main thread never waits on either.
    """

    def __init__(self, out: Path, summary: Summary, sync: bool, revisions_file: bool = False):
        names = tuple(o.file for o in outputs_in_use(revisions_file))
        self.files = {name: open(out / f"{name}.jsonl", "ab") for name in names}
        self.summary = summary
        self.sync = sync
        #: (line number, output line) of dead letters not yet handed to a commit
        self.dead: list[tuple[int, bytes]] = []

    def dead_letter(self, raw: bytes, line_no: int, tags: DeadLetterTags) -> None:
        self.dead.append((line_no, dead_letter_line(raw, line_no, tags)))
        self.summary.sent[DEAD_LETTER_DEST] += 1
        self.summary.dead_letter_stages[tags.stage] += 1

    def batch(self, data: bytes | None, s: Scanned | None, docs: np.ndarray, slow: dict[int, Decoded],
              base: int, decisions: BatchDecisions, through: int | None) -> Callable[[], None]:
        """Output lines of a decided batch and the dead letters up to line ``through`` (the
        position its commit records; None: all), to write. Later dead letters wait for the
        commit that covers them, or a crash after this one would write them twice.

        ``docs`` are line indices in the chunk ``data``; a fast line is spliced from its span
        by one Numba call per output file; Python makes only the tags of duplicates and the
        lines of slow ones (``slow``: their decoded objects by line index).
        """
        codes = decisions.codes
        chunks = []
        if len(codes):
            slow_mask = s.slow_mask if s is not None else None
            for k in np.flatnonzero(codes == REJECTED).tolist():
                line = int(docs[k])
                raw = data[s.starts[line]:s.ends[line]]
                self.dead_letter(raw, base + line + 1, rejected_tags(decisions.decision(k).reason, f"line:{base + line + 1}"))
            for name, which in self._split(decisions):
                if not len(which):
                    continue
                tagged = name != "unique"
                lines = docs[which]
                kinds = np.zeros(len(which), np.uint8)
                extra_len = np.zeros(len(which), np.int64)
                extra: list[bytes] = []
                # Python only for duplicates (their tags) and slow lines; fast unique lines
                # are all kind 0 (span + the constant tail)
                # (and revisions: on the unique file under the default verify.revisions)
                revised = decisions.revised[which]
                special = np.arange(len(which)) if tagged else np.flatnonzero(slow_mask[lines] | revised)
                for j in special.tolist():
                    k, line = int(which[j]), int(lines[j])
                    tags = UNIQUE_SPLICE
                    if tagged or revised[j]:
                        dup = duplicate_tags(decisions.decision(k))
                        tags = file_tags(dup)
                        if name == "duplicates":
                            self.summary.relations[dup.relation] += 1
                        self.summary.revisions += bool(revised[j])
                        kinds[j] = 1
                    if line in slow:
                        if slow[line].time_invalid is not None:
                            tags = with_time_invalid(tags, slow[line].time_invalid)
                        piece = _splice(data[s.starts[line]:s.ends[line]], slow[line], tags) + b"\n"
                        kinds[j] = 2
                    else:
                        piece = b"," + tags + b"\n"
                    extra.append(piece)
                    extra_len[j] = len(piece)
                extra_off = np.zeros(len(which) + 1, np.int64)
                np.cumsum(extra_len, out=extra_off[1:])
                out = assemble(np.frombuffer(data, np.uint8), s.starts[lines], s.close_at[lines], kinds,
                               np.frombuffer(b"".join(extra) or b"\0", np.uint8), extra_off, _TAIL_ARRAY)
                chunks.append((self.files[name], out))
                self.summary.sent[_FILE_DEST[name]] += len(which)
        due = self.dead if through is None else [d for d in self.dead if d[0] <= through]
        if due:
            self.dead = [] if through is None else [d for d in self.dead if d[0] > through]
            chunks.append((self.files["dead_letter"], b"".join(line + b"\n" for _, line in sorted(due))))
        return lambda: self._write(chunks)

    def _split(self, decisions: BatchDecisions) -> list[tuple[str, np.ndarray]]:
        """Each output file's documents (indices into the batch's decisions), by the one routing
        rule (``route.destinations``); refused texts are written as dead letters apart."""
        where = destinations(decisions.codes, decisions.revised, decisions.verify)
        return [(name, np.flatnonzero(where == DEST_INDEX[dest])) for name, dest in _FILE_DEST.items()
                if name in self.files and dest != DEAD_LETTER_DEST]

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
    writer = _Writer(out, summary, cfg.state.sync, cfg.verify.revisions == "topic")
    engine = _open_engine(cfg, state_dir or cfg.state.dir or str(out / "state"), writer)
    key = input_key(input_path)
    # stdin cannot be resumed: it has no position to record
    source = Source(key) if key != "stdin" else None
    done_before = engine.resume_positions().get(source, 0) if source else 0
    summary.skipped_resumed = done_before
    stream = sys.stdin.buffer if input_path == "-" else open(input_path, "rb")
    preparer = Preparer(cfg)
    step = FingerprintAndDecide(engine)
    t0 = time.perf_counter()
    # one worker thread fingerprints the next micro-batch (the kernel releases the GIL) while
    # this thread decides the current one, runs the revision test and builds its output lines
    ahead = ThreadPoolExecutor(1, thread_name_prefix="fingerprint")
    pending: _Batch | None = None
    try:
        end = [0]
        for prep, batch, base, done in _batches(stream, preparer, writer, done_before, cfg.engine.batch_size, stop_after, end):
            ids, texts, times = prep.gather(batch)
            nxt = _Batch(prep, batch, base, done, ids, times, ahead.submit(step.fingerprint, texts))
            if pending is not None:
                _flush(step, writer, pending, source, progress)
            pending = nxt
        if pending is not None:
            _flush(step, writer, pending, source, progress)
        # dead letters after the last document, and the final position
        engine.commit_positions({source: end[0]} if source else None,
                                before_commit=lambda d: writer.batch(None, None, np.zeros(0, np.int64), {}, 0, d, None))
        if progress:
            progress(summary.records)
    finally:
        ahead.shutdown(cancel_futures=True)
        try:
            engine.close()  # waits for the last commit, which syncs the outputs first
        finally:
            summary.seconds = time.perf_counter() - t0
            writer.close()
            if stream is not sys.stdin.buffer:
                stream.close()
    return summary


def _batches(stream: BinaryIO, preparer: Preparer, writer: _Writer, done_before: int, batch_size: int,
             stop_after: int | None, end: list[int]) -> Iterator[tuple[Prepared, np.ndarray, int, int]]:
    """The micro-batches of the input after its first ``done_before`` lines (and at most
    ``stop_after`` lines): each as its chunk's prepared lines, their line indices, the lines
    before the chunk and the lines of the run done with it. Dead letters go to ``writer`` as
    their chunk is prepared; ``end[0]`` is the lines read in the end (the position to record)."""
    summary = writer.summary
    line_no = 0  # lines before the current chunk
    lines = 0
    for data, s in _chunks(stream, preparer.scanner):
        base = line_no
        line_no += s.n
        first = max(0, done_before - base)
        if first >= s.n:
            continue
        last = s.n if stop_after is None else min(s.n, first + stop_after - lines)
        before = lines
        lines += last - first
        summary.records = lines
        prep = preparer.prepare(data, s, first, last, lambda k, base=base: f"line:{base + k + 1}", int(time.time() * 1000))
        for k, why in prep.dead.items():
            line = base + k + 1
            writer.dead_letter(prep.raw(k), line, DeadLetterTags(why.stage, why.reason, f"line:{line}"))
        docs = prep.docs
        for b in range(0, len(docs), batch_size):
            batch = docs[b:b + batch_size]
            yield prep, batch, base, before + int(batch[-1]) - first + 1
        if last < s.n:
            line_no = base + last
            break
    end[0] = line_no


def _open_engine(cfg: Config, state_dir: str, writer: _Writer) -> Deduplicator:
    """The engine on its state; the writer's files are closed if it cannot start."""
    # state commits (and the output writes before each) run on a worker while the next batch
    # is decided
    store = PipelinedStore(open_store(state_dir, sync=cfg.state.sync))
    try:
        return Deduplicator(cfg, store)
    except BaseException:
        store.close()
        writer.close()
        raise


@dataclass
class _Batch:
    """A micro-batch of a chunk (line indices ``docs``), its fingerprints on their way."""

    prep: Prepared
    docs: np.ndarray
    base: int
    done: int  # lines of the run done once it is decided (for ``progress``)
    ids: Ids
    times: np.ndarray
    fingerprints: Future


def _flush(step: FingerprintAndDecide, writer: _Writer, b: _Batch, source: Source | None,
           progress: Callable[[int], None] | None) -> None:
    """Decide a micro-batch and hand its outputs to the store."""
    prep, docs, base = b.prep, b.docs, b.base
    through = base + int(docs[-1]) + 1  # lines done once this batch is committed
    sid = step.engine.source_id(source) if source else -1
    step.decide(b.ids, b.fingerprints.result, b.times, np.full(len(docs), sid, np.int64), docs + (base + 1),
                {source: through} if source else None,
                before_commit=lambda decisions: writer.batch(prep.data, prep.scan, docs, prep.slow, base, decisions, through))
    if progress:
        progress(b.done)
