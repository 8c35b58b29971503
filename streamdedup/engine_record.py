"""The engine's stored record: one per indexed document, the durable truth (pure core).

Layout, engine record version 2, little-endian; the store key is the document's seq::

    offset  bytes  field
    0       1      engine record version (2)
    1       1      relation code of the decision (0 = unique; _kernels.verify.REL_*)
    2       1      flags: bit 0 = boilerplate slots were left out of the estimates
    3       1      zero
    4       2      id length (UTF-8 bytes)
    6       2      root id length (0: the document is its own root)
    8       8      root seq (the cluster's first document)
    16      8      matched seq (-1 for a unique document)
    24      4x5    float32 estimates of the match: Jaccard, calibrated LD similarity,
                   containment new-in-earlier, containment earlier-in-new, signature
                   embedding (NaN = not computed)
    44      2      n, hot-count entries that are not 1
    46      2      matched id length
    48      ..     id, root id, matched id, then n entries of (band u16, count u8)
    ..      ..     the fingerprint record (``record.py``, version 1)

What it holds and why: the fingerprint (to rebuild the in-memory index and verification arena
on start, so a restarted engine decides exactly as one that never stopped), the band cells'
hot counts (they depended on documents that may have been evicted since, so they cannot be
recomputed), and the decision with the ids it names (a Kafka batch whose outputs were not
committed is re-emitted from these, not decided again). Reasons are not stored: they are
text made from the relation and the estimates (:func:`streamdedup.decisions.reason`).
The records of a micro-batch are written by one Numba call (``_kernels.records``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from . import record
from .errors import IncompatibleFingerprintError

ENGINE_RECORD_VERSION = 2
HEAD = struct.Struct("<BBBxHHqq5fHH")
assert HEAD.size == 48


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
    fp: record.FingerprintRecord

    @property
    def is_root(self) -> bool:
        return self.root_seq == self.seq


def _ids(data: bytes) -> tuple[tuple, int, str, str, str | None]:
    head = HEAD.unpack_from(data, 0)
    version, _, _, n_id, n_root, _, _, _, _, _, _, _, _, n_matched = head
    if version != ENGINE_RECORD_VERSION:
        raise IncompatibleFingerprintError(
            f"state record version {version} is not {ENGINE_RECORD_VERSION}: this state was written by "
            "another streamdedup version; use a new state directory"
        )
    pos = HEAD.size
    doc_id = data[pos:pos + n_id].decode("utf-8")
    pos += n_id
    root_id = data[pos:pos + n_root].decode("utf-8") if n_root else doc_id
    pos += n_root
    matched = data[pos:pos + n_matched].decode("utf-8") if n_matched else None
    return head, pos + n_matched, doc_id, root_id, matched


def ids(data: bytes) -> tuple[str, str]:
    """(id, root id) of a record, without decoding the rest."""
    _, _, doc_id, root_id, _ = _ids(data)
    return doc_id, root_id


def decode(seq: int, data: bytes, bands: int, num_perm: int, params_key: int | None = None) -> StoredDocument:
    head, pos, doc_id, root_id, matched = _ids(data)
    _, relation, flags, _, _, root_seq, matched_seq, j, ld, c_ba, c_ab, emb, n_hot, _ = head
    hot = np.ones(bands, dtype=np.uint8)
    for _ in range(n_hot):
        band, count = struct.unpack_from("<HB", data, pos)
        hot[band] = count
        pos += 3
    fp = record.decode(data[pos:], num_perm, params_key)
    return StoredDocument(seq, doc_id, root_seq, root_id, matched_seq, matched, relation, flags, (j, ld, c_ba, c_ab, emb), hot, fp)
