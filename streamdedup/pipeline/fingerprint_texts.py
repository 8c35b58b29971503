"""Input records -> fingerprint records where the texts are (pure): ``streamdedup fingerprint``
and the library call behind it.

A source that will not ship its stories fingerprints them itself and sends the records (by
default text-free: version 5, without the canonical text) to a decider, or keeps them to
query with. The records are the staged topology's (``pipeline.fingerprints``), so a decider
reads them as it reads a fingerprint worker's: each names the fingerprint settings it was
made with (its params key), and a decider with other settings refuses it naming them. Input
records are judged as every runtime judges them (``pipeline.prepare``): a record that cannot
be decoded becomes a dead-letter record with its stage and reason, never a gap.

A record's source position is ``(source, 0, first_offset + k)`` for the k-th record given:
the decider uses positions to tell a re-sent record from a new one, so a source that sends
the same input again gives it the same positions.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from streamdedup.config import Config
from streamdedup.engine.checkpoint import Source
from streamdedup.pipeline.fingerprints import FingerprintCodec
from streamdedup.pipeline.prepare import Preparer
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.text.decode import wall_clock_ms


class TextFingerprinter:
    """Fingerprint records of input records (JSON, as ``input`` configures) for one source."""

    def __init__(self, cfg: Config, source: str = "texts", with_text: bool = False):
        if not source:
            raise ValueError("a source needs a name: it is the records' position topic")
        self.preparer = Preparer(cfg)
        self.codec = FingerprintCodec(Fingerprinter(cfg.fingerprint))
        self.source = Source(source)
        self.with_text = with_text

    def announcement(self) -> bytes:
        """The params announcement: sent first, it lets a decider with other settings name them."""
        return self.codec.encode_params()

    def records(self, values: Sequence[bytes], first_offset: int = 0, now_ms: int | None = None) -> list[bytes]:
        """One record per value, in order: a fingerprint, or a dead letter with its reason.
        ``now_ms``: the event time of a record without one (default: the wall clock)."""
        n = len(values)
        if n == 0:
            return []
        data, scan = self.preparer.scan_values(list(values))
        offsets = np.arange(first_offset, first_offset + n, dtype=np.int64)
        name = self.source.topic
        prep = self.preparer.prepare(data, scan, 0, n, lambda k: f"{name}:0:{first_offset + k}",
                                     wall_clock_ms() if now_ms is None else now_ms)
        return self.codec.encode_prepared(prep, [self.source], np.zeros(n, np.int64), offsets, self.with_text)
