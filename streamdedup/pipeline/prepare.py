"""prepare: raw records -> the engine's columns and dead letters (pure, runtime-neutral).

A runtime hands over a batch of raw records as a scan (``scan.LineScanner``: file mode scans a
chunk of JSONL, Kafka a list of record values) and how to name a record's source; it gets back
which records are dead letters (with stage and reason), which were decoded in Python, and
which go to the engine. Every runtime judges a record the same way because this is the only
place that does it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from streamdedup.config import CanonicalConfig, Config
from streamdedup.text.decode import Decoded, RecordDecoder, Rejected, wall_clock_ms
from streamdedup.text.ids import Ids
from streamdedup.text.canonical import PreparedTexts
from streamdedup.text.scan import BLANK, FAST, LineScanner, Scanned, gather_documents


@dataclass
class Prepared:
    """Records ``lo..hi`` of a scan, sorted out."""

    data: bytes
    scan: Scanned
    lo: int
    hi: int
    #: record index -> why it is a dead letter (in record order)
    dead: dict[int, Rejected]
    #: record index -> its decoded form, for the records the JSON fast path left to Python
    slow: dict[int, Decoded]
    #: record indices the engine decides, in order
    docs: np.ndarray
    #: valid records the runtime held back (already decided: replays), in order
    held: np.ndarray
    #: event time of a record that has none: one value, or one per record of the scan
    default_time: int | np.ndarray
    canonical: CanonicalConfig

    def raw(self, k: int) -> bytes:
        return self.data[self.scan.starts[k]:self.scan.ends[k]]

    def gather(self, docs: np.ndarray | None = None) -> tuple[Ids, PreparedTexts, np.ndarray]:
        """Ids, texts and event times of ``docs`` (default: all of :attr:`docs`) for the engine."""
        docs = self.docs if docs is None else docs
        t = self.default_time if np.isscalar(self.default_time) else np.asarray(self.default_time)[docs]
        return gather_documents(self.data, self.scan, docs, self.slow, self.canonical, t)


class Preparer:
    """Decodes with one configuration; file mode and the Kafka runtimes share it."""

    def __init__(self, cfg: Config):
        self.decoder = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)
        self.scanner = LineScanner(cfg.input, cfg.fingerprint.max_text_bytes, cfg.fingerprint.canonical.strip_html)
        self.canonical = cfg.fingerprint.canonical

    def _usable_times(self, times: np.ndarray) -> np.ndarray:
        now = wall_clock_ms()
        bad = (times < 0) | (times > now + self.decoder.max_future_skew_ms)
        if not bad.any():
            return times
        times = times.copy()
        times[bad] = now if self.decoder.invalid_time_at is None else self.decoder.invalid_time_at
        return times

    def scan_values(self, values: list[bytes]) -> tuple[bytes, Scanned]:
        """Scan separate records (Kafka values) in one call."""
        return self.scanner.scan_records(values)

    def prepare(self, data: bytes, scan: Scanned, lo: int, hi: int, name_of: Callable[[int], str],
                default_time: int | np.ndarray, hold: np.ndarray | None = None) -> Prepared:
        """Sort out records ``lo..hi`` of ``scan``.

        Args:
            name_of: names record ``k`` when it has no id (``line:17``, ``topic:0:42``).
            default_time: event time of a record without one (a value, or one per scan record:
                Kafka message timestamps, which a producer sets; one before 1970 or past the
                wall clock plus ``input.max_future_skew_hours`` is replaced by the wall clock,
                as a record's own invalid time is, so it cannot expire the index's window).
            hold: per record of ``lo..hi``, True for a record the engine must not decide (a
                replay): it is still decoded, so a dead letter stays a dead letter.
        """
        status = scan.status[lo:hi]
        doc_mask = status == FAST
        dead: dict[int, Rejected] = {}
        slow: dict[int, Decoded] = {}
        decode = self.decoder
        per_record = not np.isscalar(default_time)
        if per_record:
            default_time = self._usable_times(np.asarray(default_time, dtype=np.int64))
        for k in (np.flatnonzero(~doc_mask) + lo).tolist():
            if scan.status[k] == BLANK:
                dead[k] = decode.blank()
                continue
            now = int(default_time[k]) if per_record else default_time  # type: ignore[index]
            res = decode(data[scan.starts[k]:scan.ends[k]], lambda k=k: name_of(k), now)
            if type(res) is Rejected:
                dead[k] = res
                continue
            slow[k] = res
            scan.slow_mask[k] = True
            doc_mask[k - lo] = True
        if hold is not None and hold.any():
            held = np.flatnonzero(doc_mask & hold) + lo
            doc_mask &= ~hold
        else:
            held = np.zeros(0, np.int64)
        return Prepared(data, scan, lo, hi, dead, slow, np.flatnonzero(doc_mask) + lo, held, default_time, self.canonical)
