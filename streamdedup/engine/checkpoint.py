"""What the engine keeps about the stream besides its records (pure core): the sources it
reads, the metadata committed with every micro-batch, the checkpoint a runtime holds for a
decided batch, the guard that stops the engine after a failed batch, and the restore of the
in-memory index and arena from the stored records.

The records themselves are ``engine_record``; the deciding is ``engine``.
"""

from __future__ import annotations

import json
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

import numpy as np

from streamdedup import __version__
from streamdedup._kernels import records as KR
from streamdedup.engine.decisions import BatchDecisions
from streamdedup.errors import EngineStoppedError, IncompatibleFingerprintError

if TYPE_CHECKING:
    from streamdedup.engine.arena import Arena
    from streamdedup.engine.index import CandidateIndex
    from streamdedup.state.base import Store

#: 4: input positions and the source table as lists of (topic, partition[, offset])
META_VERSION = 4
#: records read per restore call on start-up
_RESTORE_CHUNK = 4096


@dataclass(frozen=True, order=True)
class Source:
    """A stream the engine reads: a Kafka topic partition, or a file (``file:/path``, partition 0)."""

    topic: str
    partition: int = 0

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}"


@dataclass
class StateMeta:
    """The engine's metadata, committed with every micro-batch's records."""

    params_key: int
    next_seq: int = 0
    seq_lo: int = 0
    watermark: int = -(2**62)
    #: next offset to read per source (where to resume)
    positions: dict[Source, int] = field(default_factory=dict)
    #: the engine's ids of sources: ``sources[i]`` is id i, as stored in the records
    sources: list[Source] = field(default_factory=list)
    #: first seq of the oldest micro-batch whose outputs were not confirmed (replays look there)
    last_batch_seq: int = 0

    def dumps(self) -> bytes:
        # the release and its records' format ride along, so that another release can name them
        return json.dumps({"version": META_VERSION, "release": __version__, "records": KR.ENGINE_VERSION,
                           "params_key": self.params_key, "next_seq": self.next_seq,
                           "seq_lo": self.seq_lo, "watermark": self.watermark,
                           "positions": [[s.topic, s.partition, o] for s, o in self.positions.items()],
                           "sources": [[s.topic, s.partition] for s in self.sources],
                           "last_batch_seq": self.last_batch_seq}).encode()

    @classmethod
    def loads(cls, raw: bytes) -> "StateMeta":
        m = json.loads(raw)
        records = m.get("records", KR.ENGINE_VERSION)  # absent from older metadata of this format
        if m.get("version") != META_VERSION or not isinstance(records, int) or records > KR.ENGINE_VERSION:
            raise IncompatibleFingerprintError(other_release(m))
        return cls(m["params_key"], m["next_seq"], m["seq_lo"], m["watermark"],
                   {Source(t, p): o for t, p, o in m["positions"]}, [Source(t, p) for t, p in m["sources"]],
                   m["last_batch_seq"])

    @classmethod
    def open(cls, raw: bytes | None, params_key: int) -> "StateMeta":
        """The stored metadata ``raw`` (fresh when None), refused when it was built with other
        fingerprint parameters."""
        if raw is None:
            return cls(params_key)
        meta = cls.loads(raw)
        if meta.params_key != params_key:
            raise IncompatibleFingerprintError(
                f"the state was built with fingerprint params {meta.params_key:08x} and this "
                f"configuration has {params_key:08x}; use a new state directory"
            )
        return meta


def other_release(m: dict) -> str:
    """Why state metadata ``m`` is not this release's to continue: who wrote it, in which formats,
    what this release reads, and what to do."""
    version, records = m.get("version"), m.get("records")
    newer = isinstance(version, int) and version > META_VERSION or isinstance(records, int) and records > KR.ENGINE_VERSION
    writer = f"streamdedup {m['release']}" if isinstance(m.get("release"), str) else \
        ("a newer streamdedup release" if newer else "an older streamdedup release")
    formats = f"state metadata v{version}" + (f", state records v{records}" if records is not None else "")
    mine = (f"streamdedup {__version__} reads state metadata v{META_VERSION} and state records "
            f"v{KR.ENGINE_VERSION_READ}-v{KR.ENGINE_VERSION}")
    todo = ("run the release that wrote it (or a newer one), or start this one on a new state directory "
            "with --rebuild-from-input" if newer else
            "start on a new state directory with --rebuild-from-input (see the operations page, 'Upgrades')")
    return f"this state was written by {writer} ({formats}); {mine}: {todo}"


class StopsOnFailure:
    """``with guard():`` around a batch. A batch that raises leaves the engine's in-memory
    index, arena and metadata part-way through it, and a later batch decided on them would
    commit input positions past records that have no decision (a restart then
    dead-lettered 512 good records as empty). So the first failure stops the engine: every
    later batch raises before it commits anything; a restart rebuilds from the last commit."""

    def __init__(self) -> None:
        self.failed: BaseException | None = None

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if self.failed is not None:
            raise EngineStoppedError(f"an earlier batch failed ({type(self.failed).__name__}: {self.failed}); "
                                     "this engine decides nothing more: restart from the state")
        try:
            yield
        except BaseException as exc:
            self.failed = exc
            raise


class Checkpoint:
    """One decided micro-batch: its decisions, the input positions its state commit records,
    and that commit (submitted; :meth:`wait_durable` blocks until it landed).

    The contract with a runtime: outputs of a batch may become visible (a Kafka transaction
    commit, a file write) only after :meth:`wait_durable` returned, so the state is never
    behind the outputs; an engine built with ``explicit_confirm`` is then told
    :meth:`Deduplicator.confirm_outputs` ``(checkpoint.through)`` once they are durable, and
    until then keeps their decisions for :meth:`Deduplicator.unconfirmed_decisions`.
    """

    def __init__(self, decisions: BatchDecisions, positions: dict[Source, int], through: int | None, commit: Future | None):
        self.decisions = decisions
        self.positions = positions
        #: engine seq after this batch; None when it indexed no document
        self.through = through
        self._commit = commit

    def wait_durable(self) -> None:
        """Block until the batch's state commit landed (raises its error)."""
        if self._commit is not None:
            self._commit.result()


def restore(store: "Store", meta: StateMeta, index: "CandidateIndex", arena: "Arena", bits: int, window_ms: int) -> None:
    """Rebuild ``index`` and ``arena`` by re-inserting the stored records in seq order."""
    seqs: list[int] = []
    values: list[bytes] = []
    for seq, raw in store.iter_from(meta.seq_lo):
        seqs.append(seq)
        values.append(raw)
        if len(seqs) == _RESTORE_CHUNK:
            _restore_chunk(seqs, values, meta, index, arena, bits, window_ms)
            seqs, values = [], []
    if seqs:
        _restore_chunk(seqs, values, meta, index, arena, bits, window_ms)


def _restore_chunk(seqs: list[int], values: list[bytes], meta: StateMeta, index: "CandidateIndex", arena: "Arena",
                   bits: int, window_ms: int) -> None:
    off = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=off[1:])
    buf = np.frombuffer(b"".join(values), dtype=np.uint8)
    # a record's signature is smaller than the record: reserving the chunk's bytes is enough
    arena.reserve(int(off[-1]), index.slot_seq, index.slot_time, meta.seq_lo, meta.watermark - window_ms, seqs[0])
    bad = KR.restore_batch(buf, off, np.asarray(seqs, dtype=np.int64), bits, index.arrays(), arena.arrays())
    if bad >= 0:
        raise IncompatibleFingerprintError(
            f"state record {seqs[bad]} is not an engine record of this version and configuration; use a new state directory")
