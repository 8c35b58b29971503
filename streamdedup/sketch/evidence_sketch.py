"""Evidence sketches of canonical texts, and the Jaccards they estimate (pure).

What a deployment without texts keeps to answer the exact-evidence question
(``_kernels.sketches`` says what a sketch is): per text :data:`SKETCH_BYTES` bytes, the plain
8-gram MinHash then the one with digits read as 0, one byte a slot.
"""

from __future__ import annotations

import numpy as np

from streamdedup._kernels import readonly
from streamdedup._kernels import sketches as K

SKETCH_BYTES = K.SKETCH_BYTES
#: what a record that keeps its text (or no sketches) is written with
NO_SKETCH = np.zeros((0, SKETCH_BYTES), np.uint8)
#: the near-word share of a pair answered from sketches: none is measured (no sketch holds
#: words), so the rule on it passes and a reason says the figures were estimated
NEAR_UNMEASURED = float("inf")
#: the chance that two one-byte slots agree though their bins' least hashes differ
_CHANCE = 2.0 ** -K.BITS
_NO_KEY = (np.uint64(0), np.uint64(0), False)


def of_texts(buf: np.ndarray, start: np.ndarray, length: np.ndarray, key: tuple = _NO_KEY) -> np.ndarray:
    """``(n, SKETCH_BYTES)`` uint8: the sketches of the texts ``buf[start[i]:][:length[i]]``
    (``key``: ``sketch.params.hash_key`` of the fingerprint settings)."""
    n = start.shape[0]
    plain = np.empty((n, K.SLOTS), dtype=np.uint8)
    folded = np.empty((n, K.SLOTS), dtype=np.uint8)
    # read-only whichever way the buffer came (a batch's, a decoded record's): one compile
    K.sketch_batch(readonly(np.ascontiguousarray(buf, dtype=np.uint8)), readonly(np.ascontiguousarray(start, np.int64)),
                   readonly(np.ascontiguousarray(length, np.int64)), key[0], key[1], key[2], plain, folded)
    return np.ascontiguousarray(np.hstack((plain, folded)))


def of_records(buf: np.ndarray, at: np.ndarray, length: np.ndarray, no_text: np.ndarray, key: tuple = _NO_KEY) -> np.ndarray:
    """The sketches of decoded fingerprint records: a text-free record's are the
    :data:`SKETCH_BYTES` at ``buf[at[i]:]``; a record with text (in a batch with text-free ones)
    has its text there, ``length[i]`` bytes, and gets its sketches made from it."""
    sketch = of_texts(buf, at, np.where(no_text, 0, length), key)
    rows = np.flatnonzero(no_text)
    sketch[rows] = buf[at[rows, None] + np.arange(SKETCH_BYTES)]
    return sketch


def of_batch(batch, key: tuple = _NO_KEY) -> np.ndarray:
    """A :class:`~streamdedup.sketch.fingerprint.FingerprintBatch`'s sketches: the ones it
    carries, else made from its canonical texts (and kept on it)."""
    if batch.evidence_sketch is None:
        batch.evidence_sketch = of_texts(batch.canon_buf, batch.canon_start, batch.lengths, key)
    return batch.evidence_sketch


def jaccards(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The byte 8-gram Jaccard of two texts estimated from their sketches, plain and with
    digits read as 0: the share of agreeing slots less the share that agree by chance
    (``(p - c) / (1 - c)``, b-bit minwise hashing), at least 0."""
    same = a == b
    plain = float(np.count_nonzero(same[:K.SLOTS])) / K.SLOTS
    folded = float(np.count_nonzero(same[K.SLOTS:])) / K.SLOTS
    return (max(0.0, (plain - _CHANCE) / (1.0 - _CHANCE)), max(0.0, (folded - _CHANCE) / (1.0 - _CHANCE)))
