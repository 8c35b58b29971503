"""The fingerprint record format: one document's fingerprint (and source position) as
bytes, sized by ``streamdedup bench fingerprint`` and used by ``verify.Fingerprint.from_record``.
It is not what the engine stores: the engine's per-document value in the state store is
:mod:`streamdedup.engine.record`.

Layout, version 2, little-endian (the document id is not part of it)::

    offset  bytes          field
    0       1              record format version (RECORD_VERSION)
    1       1              flags: bit 0 = empty canonical text
    2       1              b, MinHash bits per slot (minhash.storage_bits)
    3       1              number of LSH bands
    4       1              number of keys after the main bands (lead bands, then character bands)
    5       3              zero
    8       4              fingerprint params key (FingerprintParams.key): refuses mixed configs
    12      16             digest of the canonical text
    28      4              canonical length, bytes
    32      4              canonical length, characters (the LD calibration's bytes per character)
    36      4              shingle count
    40      8              event time, ms since the epoch
    48      4              source partition (-1 for none)
    52      8              source offset / line number (-1 for none)
    60      K * b / 8      MinHash slots, low b bits each (b-bit minwise hashing, Manasse)
    ..      4 * bands      band keys then lead and character band keys, low 32 bits each (enough to rebuild the
                           in-memory index; a 32-bit collision only costs one extra verification)
    ..      2 + n          fine LD signature, length-prefixed
    ..      2 + m          coarse LD signature, length-prefixed

With defaults (K = 128, b = 8, 31 + 10 bands) the fixed part is 60 + 128 + 164 = 352 bytes and
the signatures add about canonical_length / 16 * 1.125 + 4 bytes. ``streamdedup bench
fingerprint`` prints the distribution.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.sketch.estimate import pack_bbit, unpack_bbit
from streamdedup.sketch.fingerprint import FingerprintBatch

RECORD_VERSION = 2
_HEAD = struct.Struct("<BBBBB3xI16sIIIqiq")
_LEN = struct.Struct("<H")
FLAG_EMPTY = 1
MAX_SIGNATURE = 0xFFFF


@dataclass(frozen=True)
class FingerprintRecord:
    params_key: int
    digest: bytes
    length: int
    chars: int
    n_shingles: int
    event_time_ms: int
    partition: int
    offset: int
    minhash_bits: int
    minhash: np.ndarray  # low ``minhash_bits`` of each slot, uint32
    band_keys: np.ndarray  # uint32: the main bands, then the lead bands, then the character bands
    signature: bytes
    coarse_signature: bytes
    empty: bool


def encode(batch: FingerprintBatch, i: int, bits: int, event_time_ms: int = 0, partition: int = -1, offset: int = -1) -> bytes:
    """Record ``i`` of a batch as bytes."""
    fine = batch.signatures[i]
    coarse = batch.coarse_signatures[i]
    if len(fine) > MAX_SIGNATURE:
        raise ValueError(f"signature of {len(fine)} symbols does not fit the record format")
    bands = batch.band_keys.shape[1]
    lead_bands = batch.lead_keys.shape[1] + batch.char_keys.shape[1]
    head = _HEAD.pack(
        RECORD_VERSION,
        FLAG_EMPTY if batch.empty[i] else 0,
        bits,
        bands,
        lead_bands,
        batch.params.key,
        batch.digests[i],
        int(batch.lengths[i]),
        int(batch.chars[i]),
        int(batch.n_shingles[i]),
        event_time_ms,
        partition,
        offset,
    )
    keys = (batch.band_keys[i] & np.uint64(0xFFFFFFFF)).astype("<u4").tobytes()
    keys += (batch.lead_keys[i] & np.uint64(0xFFFFFFFF)).astype("<u4").tobytes()
    keys += (batch.char_keys[i] & np.uint64(0xFFFFFFFF)).astype("<u4").tobytes()
    return b"".join(
        (head, pack_bbit(batch.minhash[i], bits), keys, _LEN.pack(len(fine)), fine, _LEN.pack(len(coarse)), coarse)
    )


def _pack_rows(minhash: np.ndarray, bits: int) -> np.ndarray:
    """b-bit packing of every row at once, same bytes as :func:`pack_bbit` per row."""
    if bits == 32:
        return minhash.astype("<u4").view(np.uint8).reshape(minhash.shape[0], -1)
    if bits in (8, 16):
        low = (minhash & np.uint32((1 << bits) - 1)).astype(f"<u{bits // 8}")
        return low.view(np.uint8).reshape(minhash.shape[0], -1)
    per_byte = 8 // bits
    low = (minhash & np.uint32((1 << bits) - 1)).astype(np.uint8).reshape(minhash.shape[0], -1, per_byte)
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(low << shifts, axis=2).astype(np.uint8)


def encode_batch(batch: FingerprintBatch, bits: int, event_times: np.ndarray, partitions: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    """:func:`encode` for every row of a batch, with the fixed part built by numpy in one go."""
    n = len(batch)
    bands = batch.band_keys.shape[1]
    lead_bands = batch.lead_keys.shape[1] + batch.char_keys.shape[1]
    mh = _pack_rows(batch.minhash, bits)
    keys = batch.index_keys.astype("<u4")
    dtype = np.dtype([
        ("version", "u1"), ("flags", "u1"), ("bits", "u1"), ("bands", "u1"), ("lead_bands", "u1"), ("pad", "V3"),
        ("key", "<u4"), ("digest", "V16"), ("length", "<u4"), ("chars", "<u4"), ("n_shingles", "<u4"), ("time", "<i8"),
        ("partition", "<i4"), ("offset", "<i8"), ("minhash", "u1", (mh.shape[1],)), ("keys", "<u4", (bands + lead_bands,)),
    ])
    assert dtype.itemsize == _HEAD.size + mh.shape[1] + 4 * (bands + lead_bands)
    fixed = np.zeros(n, dtype=dtype)
    fixed["version"] = RECORD_VERSION
    fixed["flags"] = np.where(batch.empty, FLAG_EMPTY, 0)
    fixed["bits"] = bits
    fixed["bands"] = bands
    fixed["lead_bands"] = lead_bands
    fixed["key"] = batch.params.key
    fixed["digest"] = np.frombuffer(b"".join(batch.digests), dtype="V16")
    fixed["length"] = batch.lengths
    fixed["chars"] = batch.chars
    fixed["n_shingles"] = batch.n_shingles
    fixed["time"] = event_times
    fixed["partition"] = partitions
    fixed["offset"] = offsets
    fixed["minhash"] = mh
    fixed["keys"] = keys
    raw = fixed.tobytes()
    size = dtype.itemsize
    pack = _LEN.pack
    out = []
    for i, (fine, coarse) in enumerate(zip(batch.signatures, batch.coarse_signatures)):
        if len(fine) > MAX_SIGNATURE:
            raise ValueError(f"signature of {len(fine)} symbols does not fit the record format")
        out.append(b"".join((raw[i * size:(i + 1) * size], pack(len(fine)), fine, pack(len(coarse)), coarse)))
    return out


def decode(data: bytes, num_perm: int, expected_params_key: int | None = None) -> FingerprintRecord:
    """Parse a record; refuse one built with other parameters when a key is given."""
    if len(data) < _HEAD.size or data[0] != RECORD_VERSION:
        raise IncompatibleFingerprintError(f"not a version-{RECORD_VERSION} fingerprint record")
    version, flags, bits, bands, lead_bands, key, digest, length, chars, n_sh, t_ms, part, off = _HEAD.unpack_from(data, 0)
    if expected_params_key is not None and key != expected_params_key:
        raise IncompatibleFingerprintError(
            f"record built with params {key:08x}, this configuration is {expected_params_key:08x}"
        )
    pos = _HEAD.size
    mh_len = num_perm * bits // 8
    minhash = unpack_bbit(data[pos:pos + mh_len], bits, num_perm)
    pos += mh_len
    band_keys = np.frombuffer(data, dtype="<u4", count=bands + lead_bands, offset=pos).astype(np.uint32)
    pos += 4 * (bands + lead_bands)
    (n_fine,) = _LEN.unpack_from(data, pos)
    pos += 2
    fine = data[pos:pos + n_fine]
    pos += n_fine
    (n_coarse,) = _LEN.unpack_from(data, pos)
    pos += 2
    coarse = data[pos:pos + n_coarse]
    return FingerprintRecord(key, digest, length, chars, n_sh, t_ms, part, off, bits, minhash, band_keys, fine, coarse, bool(flags & FLAG_EMPTY))
