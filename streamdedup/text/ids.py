"""A batch's document ids as one UTF-8 buffer (pure): what the JSON fast path produces and
the engine's record encoder reads, without a Python string per document."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from streamdedup._kernels import readonly
from streamdedup.text.decode import MAX_ID_BYTES
from streamdedup.errors import InputError


class Ids(Sequence[str]):
    """A batch's document ids as UTF-8 in one buffer (id i is ``buf[off[i]:off[i + 1]]``);
    strings are made only for the ids a caller looks at (file mode's fast path)."""

    def __init__(self, buf: np.ndarray, off: np.ndarray):
        if off.shape[0] > 1 and int(np.diff(off).max()) > MAX_ID_BYTES:
            raise InputError(f"a document id is over {MAX_ID_BYTES} bytes")
        self.buf = buf
        self.off = off

    def __len__(self) -> int:
        return self.off.shape[0] - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return self.buf[self.off[i]:self.off[i + 1]].tobytes().decode("utf-8")


def id_arrays(ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` (an :class:`Ids` or strings) as the kernels take them: UTF-8 buffer and offsets,
    read-only views whichever way they were made (an :class:`Ids` is a kernel's output, strings
    go through :func:`utf8_ids`): one compiled kernel, not one per mix (``_kernels.readonly``)."""
    buf, off = (ids.buf, ids.off) if isinstance(ids, Ids) else utf8_ids(ids)
    return readonly(buf), readonly(off)


def sparse_utf8(ids: dict[int, str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids of some positions of ``n`` as one UTF-8 buffer and offsets (empty elsewhere)."""
    lengths = np.zeros(n + 1, dtype=np.int64)
    if not ids:
        # read-only like the other case's np.frombuffer: one compiled records.encode_batch
        return np.frombuffer(b"\0", dtype=np.uint8), lengths
    order = sorted(ids)
    parts = [ids[i].encode("utf-8") for i in order]
    lengths[1:][order] = [len(p) for p in parts]
    return np.frombuffer(b"".join(parts) or b"\0", dtype=np.uint8), np.cumsum(lengths)


def utf8_ids(ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Ids as one UTF-8 buffer and offsets; refuses ids the record cannot hold."""
    joined = "".join(ids)  # type: ignore[arg-type]
    if joined.isascii():
        lengths = [len(x) for x in ids]
        data = joined.encode("ascii")
    else:
        parts = [x.encode("utf-8") for x in ids]
        lengths = [len(p) for p in parts]
        data = b"".join(parts)
    off = np.zeros(len(ids) + 1, dtype=np.int64)
    if lengths:
        np.cumsum(lengths, out=off[1:])
        if max(lengths) > MAX_ID_BYTES:
            bad = next(x for x, n in zip(ids, lengths) if n > MAX_ID_BYTES)
            raise InputError(f"document id {bad[:40]!r}... is over {MAX_ID_BYTES} bytes")
    return np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8), off
