"""The engine's stored record: one per indexed document, the durable truth (pure core).

Layout, engine record version 3, little-endian; the store key is the document's seq::

    offset  bytes  field
    0       1      engine record version (3)
    1       1      relation code of the decision (0 = unique; _kernels.verify.REL_*)
    2       1      flags: bit 0 = boilerplate slots were left out of the estimates
    3       1      b, MinHash bits per slot (minhash.storage_bits)
    4       2      id length (UTF-8 bytes)
    6       2      n, hot-count entries that are not 1
    8       4      canonical length, bytes
    12      4      shingle count
    16      8      event time, ms since the epoch
    24      4      source partition (-1 for none)
    28      8      source offset / line number (-1 for none)
    36      16     digest of the canonical text
    52      2      fine LD signature length
    54      40     duplicates only: root seq (8), matched seq (8), float32 estimates of the
                   match (Jaccard, calibrated LD similarity, containment new-in-earlier,
                   containment earlier-in-new, signature embedding; NaN = not computed),
                   root id length (2), matched id length (2)
    ..      ..     id, then (duplicates) root id and matched id
    ..      3n     hot-count entries: band (2), count (1)
    ..      K*b/8  MinHash slots, low b bits each (b-bit minwise hashing, seed 004)
    ..      3 * bands  bits 8-31 of each band key's low half (what the index uses), main then lead
    ..      ..     fine LD signature

What it holds and why: the fingerprint as far as the engine uses it (to rebuild the in-memory
index and verification arena on start, so a restarted engine decides exactly as one that
never stopped), the band cells' hot counts (they depended on documents that may have been
evicted since, so they cannot be recomputed), and the decision with the ids it names (a
Kafka batch whose outputs were not committed is re-emitted from these, not decided again).
Not stored: reasons (text made from the relation and the estimates,
:func:`streamdedup.verify.reasons`), the coarse signature and the upper key bits (nothing in
the engine reads them), and for a unique document its root (itself) and estimates. The
fingerprint parameters are checked once, in the state's metadata. With defaults a unique
Reuters story's record is ~370 bytes. The records of a micro-batch are written by one Numba
call (``_kernels.records``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .errors import IncompatibleFingerprintError
from .estimate import unpack_bbit

ENGINE_RECORD_VERSION = 3
HEAD = struct.Struct("<BBBBHHIIqiq16sH")
DUP_HEAD = struct.Struct("<qq5fHH")
assert HEAD.size == 54 and DUP_HEAD.size == 40


@dataclass(frozen=True)
class StoredDocument:
    seq: int
    id: str
    root_seq: int
    root_id: str
    matched_seq: int
    matched_id: str | None
    relation: int
    flags: int
    numbers: tuple[float, float, float, float, float]
    hot: np.ndarray  # hot count per band cell, dense
    length: int
    n_shingles: int
    event_time_ms: int
    partition: int
    offset: int
    digest: bytes
    minhash_bits: int
    minhash: np.ndarray  # low ``minhash_bits`` of each slot, uint32
    band_keys: np.ndarray  # uint32, bits 8-31 of each key (the low byte is zero)
    signature: bytes

    @property
    def is_root(self) -> bool:
        return self.root_seq == self.seq


_NAN5 = (float("nan"),) * 5


def _head(seq: int, data: bytes) -> tuple:
    head = HEAD.unpack_from(data, 0)
    if head[0] != ENGINE_RECORD_VERSION:
        raise IncompatibleFingerprintError(
            f"state record {seq} has version {head[0]}, not {ENGINE_RECORD_VERSION}: this state was written by "
            "another streamdedup version; use a new state directory"
        )
    return head


def _ids(seq: int, data: bytes) -> tuple[tuple, tuple, int, str, str, str | None]:
    head = _head(seq, data)
    relation, n_id = head[1], head[4]
    pos = HEAD.size
    dup: tuple = ()
    n_root = n_matched = 0
    if relation:
        dup = DUP_HEAD.unpack_from(data, pos)
        n_root, n_matched = dup[7], dup[8]
        pos += DUP_HEAD.size
    doc_id = data[pos:pos + n_id].decode("utf-8")
    pos += n_id
    root_id = data[pos:pos + n_root].decode("utf-8") if n_root else doc_id
    pos += n_root
    matched = data[pos:pos + n_matched].decode("utf-8") if n_matched else None
    return head, dup, pos + n_matched, doc_id, root_id, matched


def ids(data: bytes, seq: int = -1) -> tuple[str, str]:
    """(id, root id) of a record, without decoding the rest."""
    _, _, _, doc_id, root_id, _ = _ids(seq, data)
    return doc_id, root_id


def decode(seq: int, data: bytes, bands: int, num_perm: int) -> StoredDocument:
    head, dup, pos, doc_id, root_id, matched = _ids(seq, data)
    _, relation, flags, bits, _, n_hot, length, n_sh, t_ms, part, off, digest, n_sig = head
    hot = np.ones(bands, dtype=np.uint8)
    for _ in range(n_hot):
        band, count = struct.unpack_from("<HB", data, pos)
        hot[band] = count
        pos += 3
    mh_len = num_perm * bits // 8
    minhash = unpack_bbit(data[pos:pos + mh_len], bits, num_perm)
    pos += mh_len
    raw_keys = np.frombuffer(data, dtype=np.uint8, count=3 * bands, offset=pos).reshape(bands, 3).astype(np.uint32)
    keys = (raw_keys[:, 0] << 8) | (raw_keys[:, 1] << 16) | (raw_keys[:, 2] << 24)
    pos += 3 * bands
    signature = data[pos:pos + n_sig]
    root_seq, matched_seq, numbers = (dup[0], dup[1], tuple(dup[2:7])) if relation else (seq, -1, _NAN5)
    return StoredDocument(seq, doc_id, root_seq, root_id, matched_seq, matched, relation, flags, numbers, hot, length, n_sh,
                          t_ms, part, off, digest, bits, minhash, keys, signature)
