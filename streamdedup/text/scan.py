"""Python face of the JSON fast path (``_kernels.jsonscan``), for file mode's lines and the
Kafka processor's record values (pure).

:class:`LineScanner` splits a chunk of JSONL into lines and classifies each: FAST lines come
back as spans (id, closing brace) and an unescaped text ready for the fingerprint kernel;
SLOW lines are for :class:`streamdedup.text.decode.RecordDecoder`; BLANK lines are dead letters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streamdedup._kernels import jsonscan as K
from streamdedup._kernels import readonly
from streamdedup.text.canonical import prepare_batch
from streamdedup.config import CanonicalConfig, InputConfig
from streamdedup.text.decode import HOUR_MS, MAX_ID_BYTES, Decoded, wall_clock_ms
from streamdedup.text.ids import Ids
from streamdedup.text.canonical import PreparedTexts

FAST, SLOW, BLANK = K.FAST, K.SLOW, K.BLANK
_NONE = readonly(np.zeros(1, dtype=np.uint8))


def _bytes(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("ascii"), dtype=np.uint8).copy() if s else np.zeros(0, np.uint8)


@dataclass
class Scanned:
    """The lines of one chunk: ``starts``/``ends`` per line and what the scan found."""

    n: int
    starts: np.ndarray
    ends: np.ndarray
    status: np.ndarray
    id_lo: np.ndarray
    id_hi: np.ndarray
    close_at: np.ndarray
    text_buf: np.ndarray
    text_off: np.ndarray
    times: np.ndarray  # -1: no event time in the line
    #: set by the caller for the SLOW lines the Python decoder accepted
    slow_mask: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.slow_mask is None:
            self.slow_mask = np.zeros(self.n, dtype=np.bool_)


class LineScanner:
    def __init__(self, cfg: InputConfig, max_text_bytes: int, strip_html: bool):
        names = [cfg.id_field, *cfg.text_fields, cfg.time_field or "", cfg.text_separator]
        #: the fast path handles JSON with ASCII field names and separator (one that cannot
        #: take part in markup); anything else goes to the Python decoder
        self.enabled = (cfg.format == "json" and all(n.isascii() for n in names)
                        and not any(c in cfg.text_separator for c in "<&"))
        if not self.enabled:
            return
        self.id_key = _bytes(cfg.id_field)
        width = max(len(f) for f in cfg.text_fields)
        self.text_keys = np.zeros((len(cfg.text_fields), max(width, 1)), dtype=np.uint8)
        self.text_key_len = np.zeros(len(cfg.text_fields), dtype=np.int64)
        for k, f in enumerate(cfg.text_fields):
            self.text_keys[k, :len(f)] = _bytes(f)
            self.text_key_len[k] = len(f)
        self.sep = _bytes(cfg.text_separator)
        self.time_key = _bytes(cfg.time_field or "")
        self.has_time = cfg.time_field is not None
        self.max_future_skew_ms = int(cfg.max_future_skew_hours * HOUR_MS)
        self.dedup_key = _bytes("_dedup")
        self.max_record = cfg.max_record_bytes
        self.max_text = max_text_bytes
        self.check_html = strip_html

    def scan_records(self, values: list[bytes]) -> tuple[bytes, Scanned]:
        """Scan separate records (Kafka values): no line splitting, one record each."""
        n = len(values)
        data = b"".join(values)
        lengths = np.fromiter(map(len, values), np.int64, n)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        return data, self._scan(np.frombuffer(data, dtype=np.uint8), starts, ends, n)

    def _scan(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> Scanned:
        status = np.full(n, K.SLOW, dtype=np.uint8)
        id_lo = np.empty(n, dtype=np.int64)
        id_hi = np.empty(n, dtype=np.int64)
        close_at = np.empty(n, dtype=np.int64)
        text_buf = np.empty(max(buf.shape[0], 1), dtype=np.uint8)
        text_off = np.zeros(n + 1, dtype=np.int64)
        times = np.full(n, -1, dtype=np.int64)
        if self.enabled:
            time_max = wall_clock_ms() + self.max_future_skew_ms
            K.scan_lines(buf, starts, ends, n, self.id_key, self.text_keys, self.text_key_len, self.sep, self.time_key,
                         self.has_time, time_max, self.dedup_key, self.max_record, self.max_text, MAX_ID_BYTES, self.check_html,
                         status, id_lo, id_hi, close_at, text_buf, text_off, times)
        else:
            K.mark_blank(buf, starts, ends, n, status)
        return Scanned(n, starts[:n], ends[:n], status, id_lo, id_hi, close_at, text_buf, text_off, times)

    def scan(self, buf: np.ndarray, final: bool) -> tuple[Scanned, int]:
        """Scan the complete lines of ``buf`` (all of it when ``final``); returns them and
        where the incomplete last line starts (``len(buf)`` when there is none)."""
        size = buf.shape[0]
        starts = np.empty(size + 1, dtype=np.int64)
        ends = np.empty_like(starts)
        n, rest = K.split_lines(buf, starts, ends)
        if final and rest < size:
            starts[n], ends[n] = rest, size - (1 if buf[size - 1] == 13 else 0)
            n += 1
            rest = size
        return self._scan(buf, starts, ends, n), rest


def gather_documents(data: bytes, s: Scanned, docs: np.ndarray, slow: dict[int, Decoded], canonical: CanonicalConfig,
                     default_time: int | np.ndarray) -> tuple[Ids, PreparedTexts, np.ndarray]:
    """Ids, texts (the fingerprint kernel's input) and event times of the records ``docs`` of a
    scan, in order: fast records from their spans, slow ones (``s.slow_mask``) from ``slow``.
    A fast record without an event time gets ``default_time`` (one value, or one per record)."""
    n = len(docs)
    if n == 0:  # a batch of dead letters only: nothing for the kernels
        empty = np.zeros(1, np.int64)
        return Ids(np.zeros(0, np.uint8), empty), PreparedTexts(np.zeros(0, np.uint8), empty), np.zeros(0, np.int64)
    from_b = s.slow_mask[docs]
    times = s.times[docs].copy()
    missing = times < 0
    times[missing] = default_time if np.isscalar(default_time) else np.asarray(default_time)[missing]
    id_b, t_b = _NONE, _NONE
    id_lo, id_hi = np.zeros(n, np.int64), np.zeros(n, np.int64)
    t_lo, t_hi = np.zeros(n, np.int64), np.zeros(n, np.int64)
    if from_b.any():
        decs = [slow[k] for k in docs[from_b].tolist()]
        id_parts = [d.id.encode("utf-8") for d in decs]
        lens = np.fromiter(map(len, id_parts), np.int64, len(id_parts))
        id_hi[from_b] = np.cumsum(lens)
        id_lo[from_b] = id_hi[from_b] - lens
        id_b = np.frombuffer(b"".join(id_parts), dtype=np.uint8) if lens.sum() else _NONE
        raw, t_off = prepare_batch([d.text for d in decs], canonical)
        t_lo[from_b] = t_off[:-1]
        t_hi[from_b] = t_off[1:]
        t_b = raw if raw.shape[0] else _NONE
        times[from_b] = [d.event_time_ms for d in decs]
    buf = np.frombuffer(data, dtype=np.uint8)
    # read-only inputs, whichever way they were made: one compiled gather (see _kernels.readonly)
    ids = Ids(*K.gather(buf, s.id_lo[docs], s.id_hi[docs], readonly(id_b), id_lo, id_hi, from_b))
    if t_b is _NONE and np.array_equal(s.text_off[docs[1:]], s.text_off[docs[:-1] + 1]):
        # all fast and adjacent in the scan's buffer (no record between two of them wrote a
        # text: file mode's dead letters write none, but Kafka leaves replayed fast records
        # out of the documents), so the batch's texts are a view of it
        lo = s.text_off[docs[0]]
        texts = PreparedTexts(s.text_buf[lo:s.text_off[docs[-1] + 1]], np.append(s.text_off[docs], s.text_off[docs[-1] + 1]) - lo)
    else:
        texts = PreparedTexts(*K.gather(readonly(s.text_buf), s.text_off[docs], s.text_off[docs + 1], readonly(t_b), t_lo, t_hi,
                                        from_b))
    return ids, texts, times
