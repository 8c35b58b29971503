"""A batch's document ids as one UTF-8 buffer (pure): what the JSON fast path produces and
the engine's record encoder reads, without a Python string per document."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .decode import MAX_ID_BYTES
from .errors import InputError


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
