"""fingerprint -> decide: the two steps between prepare and route (pure, runtime-neutral).

:class:`FingerprintAndDecide` is what file mode and the single processor call per micro-batch:
the prepared texts become a :class:`~streamdedup.sketch.fingerprint.FingerprintBatch` (the
step a staged topology's fingerprint workers run in their own processes), and the engine
decides on it (``Deduplicator.run_fingerprinted``, the step the staged decider runs on the
workers' records: :func:`streamdedup.pipeline.fingerprints.decide`). :func:`warm_up` runs both
steps once on a scratch engine, so that a long-running processor's first batch does not carry
the kernels' load time.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from streamdedup.config import Config
from streamdedup.engine.checkpoint import Checkpoint, Source
from streamdedup.engine.deduplicator import BeforeCommit, Deduplicator
from streamdedup.sketch.fingerprint import FingerprintBatch, Fingerprinter
from streamdedup.state.base import MemoryStore
from streamdedup.text.canonical import PreparedTexts


class FingerprintAndDecide:
    """The fingerprint step with the engine's fingerprint configuration, then the engine's decide."""

    def __init__(self, engine: Deduplicator):
        self.engine = engine
        self.fingerprinter = Fingerprinter(engine.cfg.fingerprint)

    def fingerprint(self, texts: Sequence[str] | PreparedTexts) -> FingerprintBatch:
        """Texts (or the JSON fast path's prepared texts) -> their fingerprints, one row each."""
        fp = self.fingerprinter
        return fp.fingerprint_prepared(texts) if isinstance(texts, PreparedTexts) else fp.fingerprint_batch(texts)

    def __call__(self, ids: Sequence[str], texts: Sequence[str] | PreparedTexts, times: np.ndarray, sources: np.ndarray,
                 offsets: np.ndarray, positions: dict[Source, int] | None = None,
                 before_commit: BeforeCommit | None = None) -> Checkpoint:
        """Fingerprint and decide a micro-batch; its state commit records ``positions``.

        ``sources`` are ``engine.source_id`` values (-1: none), ``offsets`` positions in them.
        A batch without documents still commits its positions (and the caller's action).
        """
        return self.decide(ids, lambda: self.fingerprint(texts), times, sources, offsets, positions, before_commit)

    def decide(self, ids: Sequence[str], fingerprints: Callable[[], FingerprintBatch], times: np.ndarray,
               sources: np.ndarray, offsets: np.ndarray, positions: dict[Source, int] | None = None,
               before_commit: BeforeCommit | None = None) -> Checkpoint:
        """Decide a micro-batch whose fingerprints ``fingerprints()`` returns (made now, or by a
        runtime that fingerprinted it ahead, while the previous batch was decided: the result of
        a future, which raises what the fingerprint step raised)."""
        engine = self.engine
        # a batch that fails in any step stops the engine (a fingerprint error, a bad argument
        # as much as a decide error): the runtime's next batch must not commit positions past it
        with engine.stops_on_failure():
            if len(ids) == 0:
                return engine.commit_positions(positions, before_commit)
            return engine.run_fingerprinted(ids, fingerprints(), times, sources, offsets, positions, before_commit)


def warm_up(cfg: Config) -> None:
    """Load every kernel the fingerprint and decide steps call per batch (Numba's cache load is
    ~1 s on the first call), on a scratch engine: no state is touched.

    Not the restore kernel: it ran when the runtime's engine was made from its state, if it ever
    runs; nor the exact-evidence kernels: only a noisy copy calls them, and they load (or, on a
    cold cache, compile: ~1.6 s once) at its question (``warmup.units``).
    """
    eng = cfg.engine.model_copy(update={"max_documents": 16, "index_sizing": "grow"})
    step = FingerprintAndDecide(Deduplicator(cfg.model_copy(update={"engine": eng}), MemoryStore()))
    text = "warm up the kernels with a short story about nothing in particular at all"
    texts = [text, text + " and one more sentence", text]
    step(["a", "b", "c"], texts, np.zeros(3, np.int64), np.full(3, -1, np.int64), np.full(3, -1, np.int64))
