"""Python face of the verification arena (the arrays behind ``_kernels.arena``).

Memory per document slot: ``num_perm`` slots at 1, 2 or 4 bytes (storage_bits <= 8, 16, 32),
8 (digest high half) + 4 + 4 + 4 (shingle count, length in bytes and in characters) + 8 + 4 (signature start, length), and
the fine signature itself in the byte ring (about canonical length / C bytes: ~55 on Reuters;
the ring is up to half larger than what it holds). With defaults ~190-230 bytes per document.
"""

from __future__ import annotations

import numpy as np

from streamdedup._kernels import arena as K


def slot_dtype(bits: int):
    """The type of a stored MinHash slot of ``bits`` bits (engine.sizing counts its bytes)."""
    return np.uint8 if bits <= 8 else np.uint16 if bits == 16 else np.uint32


#: initial signature bytes per document slot; the ring grows by half when live signatures
#: need more (news stories take ~55, a few KB of text ~250)
INITIAL_SIGNATURE_BYTES = 16
GROWTH = 1.5
MIN_RING = 1 << 16


class Arena:
    def __init__(self, capacity: int, num_perm: int, bits: int):
        self.capacity = capacity
        self.bits = bits
        self.minhash = np.zeros((capacity, num_perm), dtype=slot_dtype(bits))
        self.n_shingles = np.zeros(capacity, dtype=np.int32)
        self.length = np.zeros(capacity, dtype=np.int32)
        self.chars = np.zeros(capacity, dtype=np.int32)
        self.digest_hi = np.zeros(capacity, dtype=np.uint64)
        self.sig_start = np.zeros(capacity, dtype=np.int64)
        self.sig_len = np.zeros(capacity, dtype=np.int32)
        self.buf = np.zeros(max(MIN_RING, capacity * INITIAL_SIGNATURE_BYTES), dtype=np.uint8)
        self.state = np.zeros(2, dtype=np.int64)  # [cursor, tail seq]
        #: times the signature ring was grown (a metric: it means long texts or a late-event-time pin)
        self.grown = 0

    @property
    def tail(self) -> int:
        """Seq of the oldest document whose signature the ring still holds."""
        return int(self.state[K.A_TAIL])

    @property
    def bytes_used(self) -> int:
        arrays = (self.minhash, self.n_shingles, self.length, self.chars, self.digest_hi, self.sig_start, self.sig_len, self.buf)
        return sum(a.nbytes for a in arrays)

    def arrays(self) -> K.ArenaArrays:
        """The arrays as the kernels take them (made per call: :meth:`reserve` may replace the ring)."""
        return K.ArenaArrays(self.minhash, self.n_shingles, self.length, self.chars, self.digest_hi, self.sig_start,
                             self.sig_len, self.buf, self.state)

    def reserve(self, need: int, slot_seq: np.ndarray, slot_time: np.ndarray, seq_lo: int, min_time: int, next_seq: int) -> None:
        """Make room for ``need`` more signature bytes without overwriting a live document's."""
        live = int(K.live_bytes(self.state, self.sig_start, slot_seq, slot_time, self.capacity, seq_lo, min_time, next_seq))
        if self.buf.shape[0] - live >= need:
            return
        new = np.zeros(max(int(self.buf.shape[0] * GROWTH), int((live + need) * GROWTH)), dtype=np.uint8)
        cursor = int(self.state[K.A_CURSOR])
        K.regrow(self.buf, new, cursor - live, cursor)
        self.buf = new
        self.grown += 1
