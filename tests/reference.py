"""Slow, obviously-correct reference implementations of every Numba kernel.

Each reference is written from the definition (whole-window hashes instead of rolling ones,
explicit sets, brute force) so that an optimisation bug in a kernel shows up as a mismatch.
``KERNELS`` is the one table that drives the equality tests in ``test_kernels.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from rapidfuzz.distance import Levenshtein

from streamdedup import _kernels as K
from streamdedup._kernels import fingerprint as KF
from streamdedup.text.canonical import _canonical_unicode, canonicalize, prepare_batch
from streamdedup.config import CanonicalConfig
from streamdedup.text.scripts import UNSPACED_SCRIPTS, token_classes
from streamdedup.text.unicode_map import tables

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
ROLL_BASE = 0x100000001B3
EMPTY = 0xFFFFFFFF


def fmix64(h: int) -> int:
    h &= MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    h ^= h >> 33
    return h


def rotl(x: int, r: int) -> int:
    r &= 63
    return ((x << r) | (x >> (64 - r))) & MASK if r else x


# ---------------------------------------------------------------- canonical form


def canonical_ascii_ref(text: str, lower: bool = True, punct: bool = True) -> str:
    """The kernel's byte rules: :func:`canonicalize`'s steps after what ``prepare_batch`` does
    before the kernel (escape sequences and HTML)."""
    cfg = CanonicalConfig(nfkc=False, casefold=lower, strip_html=False, punctuation_to_space=punct)
    return _canonical_unicode(text, cfg)


def fused(text: bytes, lower: bool = True, punct: bool = True, kind_word: bool = True, size: int = 5,
          num_perm: int = 128, classic: bool = False, seed: int = 1, bands: int = 25, rows: int = 5,
          n: int = 4, c: int = 16, factor: int = 8, k: int = 0, sig_seed: int = 7,
          alphabet: bytes = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
          chars: tuple[int, int, int, int, int] = (8, 3, 16, 0, 1), unspaced_size: int = 5) -> dict:
    """Run the fused batch kernel on one text and return every output (``chars``: the byte-gram
    sketch's size, sample bits, slots, bands, rows; 0 bands = off)."""
    raw = np.frombuffer(text, dtype=np.uint8) if text else np.zeros(0, np.uint8)
    offsets = np.array([0, len(text)], dtype=np.int64)
    size_buf = len(text) + 1
    canon = np.empty(size_buf, np.uint8)
    canon_off = np.empty(2, np.int64)
    mh = np.empty((1, num_perm), np.uint32)
    bk = np.empty((1, bands), np.uint64)
    nsh = np.empty(1, np.int64)
    fine = np.empty(size_buf, np.uint8)
    fine_off = np.empty(2, np.int64)
    coarse = np.empty(size_buf, np.uint8)
    coarse_off = np.empty(2, np.int64)
    dig = np.empty((1, 2), np.uint64)
    char_mh = np.empty((1, chars[2]), np.uint32)
    char_keys = np.empty((1, chars[3]), np.uint64)
    n_chars = np.empty(1, np.int64)
    u = tables(True, lower, punct)
    K.fingerprint_batch(raw, offsets, K.canonical_byte_map(lower, punct), u.umap, u.repl_off, u.repl, token_classes(),
                        kind_word, size, unspaced_size,
                        num_perm, num_perm.bit_length() - 1, classic,
                        np.uint64(seed), bands, rows, n, c, c * factor, k, np.uint64(sig_seed),
                        np.frombuffer(alphabet, np.uint8), canon, canon_off, mh, bk, nsh,
                        fine, fine_off, coarse, coarse_off, dig, 0, 4, 2, 0, 1, np.zeros((1, 0), np.uint64),
                        chars[0], chars[1], chars[2], chars[2].bit_length() - 1, chars[3], chars[4], char_mh, char_keys,
                        np.zeros(1, np.int64), n_chars, 0, 0, np.zeros((1, 0), np.uint32), np.zeros(1, np.int64),
                        np.uint64(0), np.uint64(0), False)
    return {
        "canonical": canon[: canon_off[1]].tobytes(),
        "minhash": [int(x) for x in mh[0]],
        "band_keys": [int(x) for x in bk[0]],
        "n_shingles": int(nsh[0]),
        "chars": int(n_chars[0]),
        "fine": fine[: fine_off[1]].tobytes(),
        "coarse": coarse[: coarse_off[1]].tobytes(),
        "digest": dig.astype("<u8").tobytes(),
        "char_minhash": [int(x) for x in char_mh[0]] if chars[3] and canon_off[1] else [],
        "char_keys": [int(x) for x in char_keys[0]] if chars[3] and canon_off[1] else [],
    }


def canonical_ascii_kernel(text: str, lower: bool = True, punct: bool = True) -> str:
    return fused(text.encode("ascii"), lower, punct)["canonical"].decode("ascii")


def fused_minhash_kernel(text: bytes, kind_word: bool, size: int, classic: bool) -> list[int]:
    return fused(text, kind_word=kind_word, size=size, num_perm=32, classic=classic, bands=8, rows=4)["minhash"]


def fused_minhash_ref(text: bytes, kind_word: bool, size: int, classic: bool) -> list[int]:
    canonical = canonical_ascii_ref(text.decode("ascii")).encode("ascii")
    hashes = shingle_hashes_ref(canonical, kind_word, size)
    return classic_ref(hashes, 32, 1) if classic else oph_ref(hashes, 32, 1)


def fused_tokens_kernel(text: bytes, size: int, unspaced_size: int) -> tuple[bytes, int, list[int]]:
    """Through ``prepare_batch`` as the library does (it sends texts whose NFKC depends on
    neighbouring characters through Python), then the kernel."""
    raw, _ = prepare_batch([text.decode("utf-8")], CanonicalConfig(strip_html=False))
    out = fused(raw.tobytes(), size=size, num_perm=32, bands=8, rows=4, unspaced_size=unspaced_size)
    return out["canonical"], out["n_shingles"], out["minhash"]


def fused_tokens_ref(text: bytes, size: int, unspaced_size: int) -> tuple[bytes, int, list[int]]:
    """Word shingles of any script: :func:`tokens_ref`, then shingles of ``unspaced_size``
    tokens when most tokens are single characters, else of ``size``."""
    canonical = canonical_bytes_ref(text)
    hashes = shingle_hashes_ref(canonical, True, size, unspaced_size)
    return canonical, len(hashes), oph_ref(hashes, 32, 1)


def fused_char_count_kernel(text: bytes) -> tuple[int, int]:
    """(UTF-8 bytes, characters) of the canonical text, through ``prepare_batch`` as the library does."""
    raw, _ = prepare_batch([text.decode("utf-8")], CanonicalConfig(strip_html=False))
    out = fused(raw.tobytes(), num_perm=32, bands=8, rows=4)
    return len(out["canonical"]), out["chars"]


def fused_char_count_ref(text: bytes) -> tuple[int, int]:
    canonical = canonical_bytes_ref(text)
    return len(canonical), len(canonical.decode("utf-8"))


def unicode_scan_kernel(texts: tuple[str, ...], fold: bool) -> list[int]:
    u = tables(True, True, True, fold)
    parts = [t.encode("utf-8") for t in texts]
    raw = np.frombuffer(b"".join(parts) or b"\0", dtype=np.uint8)
    offsets = np.cumsum([0] + [len(p) for p in parts]).astype(np.int64)
    out = np.zeros(len(texts), dtype=np.uint8)
    KF.unicode_scan(K.readonly(raw), K.readonly(offsets), u.first_ccc, u.last_ccc, u.fold_bits, out)
    return out.tolist()


def unicode_scan_ref(texts: tuple[str, ...], fold: bool) -> list[int]:
    """Per text, character by character in Python: unsafe (1) at the first character the tables
    send to Python (``first_ccc`` 255: composes, grows, or NFKC makes Han or kana of it; their
    content is tested against canonicalize() end to end), past the tables, or whose first
    combining class (of its NFKD) is below the previous character's last; else Traditional (2,
    :func:`fold.traditional_chars`) and kana (4) as found."""
    import unicodedata

    from streamdedup.text.charclass import KANA
    from streamdedup.text.fold import traditional_chars
    from streamdedup.text.scripts import TABLE_SIZE

    u = tables(True, True, True, fold)
    out = []
    for text in texts:
        flags, prev_last = 0, 0
        for ch in text:
            if ch.isascii():
                prev_last = 0
                continue
            cp = ord(ch)
            d = unicodedata.normalize("NFKD", ch)
            first = int(u.first_ccc[cp]) if cp < TABLE_SIZE else 255
            if cp >= TABLE_SIZE or first == 255 or (0 < unicodedata.combining(d[0]) < prev_last):
                flags |= 1
                break
            prev_last = unicodedata.combining(d[-1])
            if fold:
                flags |= 2 if ch in traditional_chars() else 0
                flags |= 4 if KANA.match(ch) else 0
        out.append(flags)
    return out


def fused_chars_kernel(text: bytes, size: int, sample_bits: int, num_perm: int, bands: int, rows: int) -> tuple[list[int], list[int]]:
    out = fused(text, chars=(size, sample_bits, num_perm, bands, rows))
    return out["char_minhash"], out["char_keys"]


def fused_chars_ref(text: bytes, size: int, sample_bits: int, num_perm: int, bands: int, rows: int) -> tuple[list[int], list[int]]:
    """The byte-gram sketch from its definition: grams of the canonical text, OPH and band keys
    seeded with ``seed ^ CHAR_SALT`` (the kernel's seed 1); an empty text has none."""
    canonical = canonical_ascii_ref(text.decode("ascii")).encode("ascii")
    if not canonical:
        return [], []
    salt = 1 ^ int(KF.CHAR_SALT)
    slots = oph_ref(byte_grams_ref(canonical, size, sample_bits), num_perm, salt)
    return slots, band_keys_ref(slots, bands, rows, salt)


def byte_grams_kernel(data: bytes, size: int, sample_bits: int) -> list[int]:
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(1, np.uint8)
    out = np.empty(len(data) + 1, dtype=np.uint64)
    n = KF.byte_grams(buf, 0, len(data), size, sample_bits, out)
    return [int(x) for x in out[:n]]


def byte_grams_ref(data: bytes, size: int, sample_bits: int = 0) -> list[int]:
    """Every ``size``-byte window as a big-endian integer (a shorter text: one window of all of
    it), those whose ``window * GOLDEN`` has ``sample_bits`` zero top bits, or all if none has."""
    if not data:
        return []
    k = min(size, len(data))
    grams = [int.from_bytes(data[i:i + k], "big") for i in range(len(data) - k + 1)]
    kept = [g for g in grams if sample_bits == 0 or ((g * GOLDEN) & MASK) >> (64 - sample_bits) == 0]
    return kept or grams


def gram_jaccards_kernel(a: bytes, b: bytes) -> tuple[float, float, float, float]:
    from streamdedup._kernels import evidence as KE

    size = KE.table_size(len(a), len(b))
    buf = lambda t: np.frombuffer(t, dtype=np.uint8) if t else np.zeros(0, np.uint8)  # noqa: E731
    return KE.gram_jaccards(buf(a), buf(b), np.zeros(size, np.uint64), np.zeros(size, np.uint8))


def gram_jaccards_ref(a: bytes, b: bytes) -> tuple[float, float, float, float]:
    """(plain, digits-as-0) Jaccard of the sets of 8-byte windows, then (plain, digits-as-0)
    containment of b's set in a's; texts under 8 bytes: 1.0 if equal, else 0.0."""
    if len(a) < 8 or len(b) < 8:
        v = 1.0 if a == b else 0.0
        return v, v, v, v
    fold = bytes.maketrans(b"0123456789", b"0" * 10)

    def sets(x: bytes, y: bytes) -> tuple[set, set]:
        return {x[i:i + 8] for i in range(len(x) - 7)}, {y[i:i + 8] for i in range(len(y) - 7)}

    (pa, pb), (fa, fb) = sets(a, b), sets(a.translate(fold), b.translate(fold))
    return (len(pa & pb) / len(pa | pb), len(fa & fb) / len(fa | fb),
            len(pa & pb) / len(pb), len(fa & fb) / len(fb))


def near_word_share_kernel(a: bytes, b: bytes) -> float:
    from streamdedup._kernels import evidence as KE

    size = KE.word_table_size(len(a), len(b))
    buf = lambda t: np.frombuffer(t, dtype=np.uint8) if t else np.zeros(0, np.uint8)  # noqa: E731
    return KE.near_word_share(buf(a), buf(b), np.zeros(size, np.uint64), np.zeros(size, np.int64), np.zeros(size, np.uint8))


def near_word_share_ref(a: bytes, b: bytes) -> float:
    """Share of b's words beyond a's (multisets, words split on spaces) that share the word or a
    one-byte deletion of it with one of a's words beyond b's (words over 32 bytes: only whole)."""
    from collections import Counter

    ca, cb = Counter(t for t in a.split(b" ") if t), Counter(t for t in b.split(b" ") if t)
    own, left = list((cb - ca).elements()), set((ca - cb).elements())
    if not own:
        return 1.0

    def forms(w: bytes) -> set[bytes]:
        return {w} | ({w[:i] + w[i + 1:] for i in range(len(w))} if len(w) <= 32 else set())

    left_forms = set().union(*(forms(v) for v in left)) if left else set()
    return sum(1 for w in own if forms(w) & left_forms) / len(own)


# ---------------------------------------------------------------- shingles


def word_hash_ref(word: bytes) -> int:
    """The kernel's word hash, from its definition: 8-byte big-endian chunks through FNV."""
    h = FNV_OFFSET
    full = len(word) - len(word) % 8
    for i in range(0, full, 8):
        h = ((h ^ int.from_bytes(word[i:i + 8], "big")) * FNV_PRIME) & MASK
    tail = word[full:]
    acc = int.from_bytes(tail, "big") if tail else 0
    return fmix64(((h ^ acc) * FNV_PRIME + len(tail)) & MASK)


def token_class_ref(ch: str) -> int:
    """0 spaced, 1 a token of its own, 2 a combining mark: from the properties, one character
    at a time (the kernel reads a table generated from them)."""
    import regex

    if regex.match(r"\p{M}", ch):
        return 2
    return 1 if any(regex.match(rf"\p{{Script={s}}}", ch) for s in UNSPACED_SCRIPTS) else 0


def tokens_ref(canonical: bytes) -> list[tuple[bytes, bool]]:
    """Tokens of canonical text and whether each is a single character of an unspaced script:
    words end at spaces; such a character is a token of its own; a combining mark joins the
    token before it; the character after a single-character token starts a new token."""
    out: list[tuple[bytes, bool]] = []
    cur, single = "", False
    for ch in canonical.decode("utf-8", "surrogateescape"):
        k = token_class_ref(ch)
        if ch == " " or k == 1 or (k == 0 and single):
            if cur:
                out.append((cur.encode("utf-8", "surrogateescape"), single))
            cur, single = "", False
        if ch != " ":
            cur += ch
            single = single if k == 2 else k == 1
    if cur:
        out.append((cur.encode("utf-8", "surrogateescape"), single))
    return out


def canonical_bytes_ref(text: bytes, lower: bool = True, punct: bool = True) -> bytes:
    """The canonical form of UTF-8 text (any script) from its definition: :func:`canonicalize`'s
    steps after what ``prepare_batch`` does before the kernel (escape sequences and HTML)."""
    cfg = CanonicalConfig(nfkc=True, casefold=lower, strip_html=False, punctuation_to_space=punct)
    return _canonical_unicode(text.decode("utf-8"), cfg).encode("utf-8")


def shingle_hashes_ref(canonical: bytes, kind_word: bool, size: int, unspaced_size: int = 5) -> list[int]:
    if not canonical:
        return []
    if kind_word:
        tokens = tokens_ref(canonical)
        if not tokens:
            return []
        hs = [word_hash_ref(t) for t, _ in tokens]
        if 2 * sum(single for _, single in tokens) > len(tokens):
            size = unspaced_size
        w = min(size, len(hs))
        out = []
        for s in range(len(hs) - w + 1):
            h = 0
            for j in range(w):
                h ^= rotl(hs[s + j], w - 1 - j)
            out.append(fmix64(h ^ w))
        return out
    k = min(size, len(canonical))
    out = []
    for s in range(len(canonical) - k + 1):
        h = 0
        for c in canonical[s:s + k]:
            h = (h * ROLL_BASE + c) & MASK
        out.append(fmix64(h))
    return out


def char_shingles_kernel(canonical: bytes, size: int) -> list[int]:
    buf = np.frombuffer(canonical, dtype=np.uint8) if canonical else np.zeros(1, np.uint8)
    out = np.empty(len(canonical) + 1, dtype=np.uint64)
    n = K.char_shingles(buf, 0, len(canonical), size, out)
    return [int(x) for x in out[:n]]


def char_shingles_ref(canonical: bytes, size: int) -> list[int]:
    return shingle_hashes_ref(canonical, False, size)


def combine_words_kernel(words: list[int], size: int) -> list[int]:
    arr = np.array(words, dtype=np.uint64) if words else np.zeros(1, np.uint64)
    out = np.empty(len(words) + 1, dtype=np.uint64)
    n = K.combine_words(arr, len(words), size, out)
    return [int(x) for x in out[:n]]


def combine_words_ref(words: list[int], size: int) -> list[int]:
    if not words:
        return []
    w = min(size, len(words))
    out = []
    for s in range(len(words) - w + 1):
        h = 0
        for j in range(w):
            h ^= rotl(words[s + j], w - 1 - j)
        out.append(fmix64(h ^ w))
    return out


# ---------------------------------------------------------------- MinHash


def oph_ref(hashes: list[int], num_perm: int, seed: int) -> list[int]:
    log2k = num_perm.bit_length() - 1
    slots = [EMPTY] * num_perm
    for x in hashes:
        h = fmix64(x ^ seed)
        b = h >> (64 - log2k)
        v = h & 0xFFFFFFFF
        if v == EMPTY:
            v = EMPTY - 1
        slots[b] = min(slots[b], v)
    if not hashes:
        return slots
    filled = list(slots)
    for j in range(num_perm):
        if filled[j] != EMPTY:
            continue
        attempt = 1
        while True:
            probe = fmix64(((j << 32) ^ attempt ^ seed) & MASK) & (num_perm - 1)
            if filled[probe] != EMPTY:
                slots[j] = filled[probe]
                break
            attempt += 1
    return slots


def oph_kernel(hashes: list[int], num_perm: int, seed: int) -> list[int]:
    arr = np.array(hashes, dtype=np.uint64) if hashes else np.zeros(1, np.uint64)
    out = np.empty(num_perm, dtype=np.uint32)
    K.oph_minhash(arr, len(hashes), num_perm, num_perm.bit_length() - 1, np.uint64(seed), out)
    return [int(x) for x in out]


def classic_ref(hashes: list[int], num_perm: int, seed: int) -> list[int]:
    out = []
    for j in range(num_perm):
        salt = fmix64((seed + (j + 1) * GOLDEN) & MASK)
        best = EMPTY
        for x in hashes:
            v = fmix64(x ^ salt) & 0xFFFFFFFF
            best = min(best, EMPTY - 1 if v == EMPTY else v)
        out.append(best)
    return out


def classic_kernel(hashes: list[int], num_perm: int, seed: int) -> list[int]:
    arr = np.array(hashes, dtype=np.uint64) if hashes else np.zeros(1, np.uint64)
    out = np.empty(num_perm, dtype=np.uint32)
    K.classic_minhash(arr, len(hashes), num_perm, np.uint64(seed), out)
    return [int(x) for x in out]


def band_keys_ref(slots: list[int], bands: int, rows: int, seed: int) -> list[int]:
    out = []
    for b in range(bands):
        h = fmix64(seed ^ (((b + 1) * GOLDEN) & MASK))
        for r in range(rows):
            h = fmix64(h ^ slots[b * rows + r])
        out.append(h)
    return out


def band_keys_kernel(slots: list[int], bands: int, rows: int, seed: int) -> list[int]:
    out = np.empty(bands, dtype=np.uint64)
    K.band_keys(np.array(slots, dtype=np.uint32), bands, rows, np.uint64(seed), out)
    return [int(x) for x in out]


# ---------------------------------------------------------------- LD signatures and digest


def signature_ref(canonical: bytes, n: int, c: int, factor: int, k: int, seed: int, alphabet: bytes) -> tuple[bytes, bytes]:
    """Take every N-byte window of canonical text from scratch and apply the selection rule."""
    span = 1 << 32
    fine_lo, fine_w, coarse_w = k * span // c, span // c, span // (c * factor)
    fine, coarse = bytearray(), bytearray()
    for p in range(len(canonical) - n + 1):
        h = int.from_bytes(canonical[p:p + n], "big")
        u = ((((h ^ seed) * GOLDEN) & MASK) >> 32) - fine_lo
        if 0 <= u < fine_w:
            m = fmix64(h ^ seed)
            fine.append(alphabet[((m & 0xFFFFFFFF) * len(alphabet)) >> 32])
            if u < coarse_w:
                coarse.append(alphabet[((m >> 32) * len(alphabet)) >> 32])
    return bytes(fine), bytes(coarse)


def signature_kernel(text: bytes, n: int, c: int, factor: int, k: int, seed: int, alphabet: bytes) -> tuple[bytes, bytes]:
    out = fused(text, n=n, c=c, factor=factor, k=k, sig_seed=seed, alphabet=alphabet)
    return out["fine"], out["coarse"]


def signature_from_raw_ref(text: bytes, n: int, c: int, factor: int, k: int, seed: int, alphabet: bytes) -> tuple[bytes, bytes]:
    canonical = canonical_ascii_ref(text.decode("ascii")).encode("ascii")
    return signature_ref(canonical, n, c, factor, k, seed, alphabet)


def digest_ref(data: bytes) -> bytes:
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h1, h2 = 0x243F6A8885A308D3, 0x13198A2E03707344 ^ len(data)
    full = len(data) - len(data) % 16
    for i in range(0, full, 16):
        k1 = int.from_bytes(data[i:i + 8], "little")
        k2 = int.from_bytes(data[i + 8:i + 16], "little")
        h1 ^= (rotl((k1 * c1) & MASK, 31) * c2) & MASK
        h1 = ((rotl(h1, 27) + h2) * 5 + 0x52DCE729) & MASK
        h2 ^= (rotl((k2 * c2) & MASK, 33) * c1) & MASK
        h2 = ((rotl(h2, 31) + h1) * 5 + 0x38495AB5) & MASK
    tail = data[full:]
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        k2 = int.from_bytes(tail[8:], "little") if len(tail) > 8 else 0
        h1 ^= (rotl((k1 * c1) & MASK, 31) * c2) & MASK
        h2 ^= (rotl((k2 * c2) & MASK, 33) * c1) & MASK
    h1 ^= len(data)
    h1 = (h1 + h2) & MASK
    h2 = (h2 + h1) & MASK
    h1, h2 = fmix64(h1), fmix64(h2)
    h1 = (h1 + h2) & MASK
    h2 = (h2 + h1) & MASK
    return h1.to_bytes(8, "little") + h2.to_bytes(8, "little")


def fused_digest_kernel(text: bytes) -> bytes:
    return fused(text)["digest"]


def fused_digest_ref(text: bytes) -> bytes:
    return digest_ref(canonical_ascii_ref(text.decode("ascii")).encode("ascii"))


def digest_kernel(data: bytes) -> bytes:
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(1, np.uint8)
    out = np.empty(2, dtype=np.uint64)
    K.digest128(buf, 0, len(data), out)
    return out.astype("<u8").tobytes()


# ---------------------------------------------------------------- edit distance


def levenshtein_bounded_ref(a: bytes, b: bytes, bound: int) -> int:
    d = Levenshtein.distance(a, b)
    return d if d <= bound else bound + 1


def levenshtein_bounded_kernel(a: bytes, b: bytes, bound: int) -> int:
    return int(K.levenshtein_bounded(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8), bound))


def semi_global_ref(a: bytes, b: bytes) -> int:
    """Brute force: the best Levenshtein distance of ``a`` to any substring of ``b``."""
    best = len(a)
    for i in range(len(b) + 1):
        for j in range(i, len(b) + 1):
            best = min(best, Levenshtein.distance(a, b[i:j]))
    return best


def semi_global_kernel(a: bytes, b: bytes) -> int:
    d, start, end = K.semi_global(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8))
    # the reported region must really achieve the distance
    assert Levenshtein.distance(a, b[start:end]) == d, (a, b, d, start, end)
    return int(d)


def semi_global_dp_ref(a: bytes, b: bytes) -> int:
    """The textbook DP for the same distance (free start and end in ``b``), for inputs too long
    for the brute force: row 0 is all zeros, the answer is the last row's minimum."""
    prev = [0] * (len(b) + 1)
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j - 1] + (x != y), prev[j] + 1, cur[j - 1] + 1)
        prev = cur
    return min(prev)


def semi_global_distance_kernel(a: bytes, b: bytes) -> int:
    return int(K.semi_global_distance(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)))


def edit_runs_ref(a: bytes, b: bytes, merge_gap: int = 0) -> tuple[int, list[int]]:
    """Full Levenshtein DP and its traceback, cell by cell: from the end, prefer a match, then a
    substitution, a deletion (from ``a``), an insertion; an edit starts or extends a run, a
    match ends it unless the next edit comes within ``merge_gap`` matches."""
    n, m = len(a), len(b)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for j in range(m + 1):
        dp[0][j] = j
    for i in range(1, n + 1):
        dp[i][0] = i
        for j in range(1, m + 1):
            dp[i][j] = min(dp[i - 1][j - 1] + (a[i - 1] != b[j - 1]), dp[i - 1][j] + 1, dp[i][j - 1] + 1)
    i, j, runs, cur, gap = n, m, [], 0, 0
    while i > 0 or j > 0:
        if i > 0 and j > 0 and a[i - 1] == b[j - 1] and dp[i][j] == dp[i - 1][j - 1]:
            i, j = i - 1, j - 1
            if cur:
                gap += 1
                if gap > merge_gap:
                    runs.append(cur)
                    cur = gap = 0
            continue
        if i > 0 and j > 0 and dp[i][j] == dp[i - 1][j - 1] + 1:
            i, j = i - 1, j - 1
        elif i > 0 and dp[i][j] == dp[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
        cur += 1
        gap = 0
    if cur:
        runs.append(cur)
    return dp[n][m], runs


def edit_runs_kernel(a: bytes, b: bytes, merge_gap: int = 0) -> tuple[int, list[int]]:
    runs = np.zeros(len(a) + len(b) + 1, dtype=np.int64)
    d, n = K.edit_runs(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8), merge_gap, runs)
    if merge_gap == 0:
        # with no merging every edit lies in exactly one run
        assert int(runs[:n].sum()) == d
    assert d == Levenshtein.distance(a, b)
    return int(d), runs[:n].tolist()


def siphash64_ref(k0: int, k1: int, m: int) -> int:
    """SipHash-2-4 (Aumasson and Bernstein) of one 8-byte little-endian message, from the paper."""
    mask = (1 << 64) - 1

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & mask

    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & mask
            v[1] = rotl(v[1], 13) ^ v[0]
            v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & mask
            v[3] = rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & mask
            v[3] = rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & mask
            v[1] = rotl(v[1], 17) ^ v[2]
            v[2] = rotl(v[2], 32)

    for block in (m, 8 << 56):  # the message, then its length in the last block
        v[3] ^= block
        rounds(2)
        v[0] ^= block
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def span_key_ref(text: bytes, p: int, key: tuple[int, int] | None = None) -> int:
    """An anchor key (``_kernels.anchors._span_key``): FNV-1a over the 40 bytes from ``p`` as
    five little-endian 64-bit words (through SipHash under ``key``, when given), murmur3's fmix64,
    its low 32 bits (0 read as 1); 0 when fewer than 40 bytes are left."""
    if p + 40 > len(text):
        return 0
    mask = (1 << 64) - 1
    h = 0xCBF29CE484222325
    for t in range(p, p + 40, 8):
        h = ((h ^ int.from_bytes(text[t:t + 8], "little")) * 0x100000001B3) & mask
    if key is not None:
        h = siphash64_ref(key[0], key[1], h)
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & mask
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & mask
    h ^= h >> 33
    return (h & 0xFFFFFFFF) or 1


def block_mask_ref(text: bytes, keys: list[int], hots: list[int], hot: int = 3) -> list[int]:
    """Boilerplate blocks (``_kernels.blocks``), numbered from 1 in text order (0: no block): a
    word start holding a key of ``keys`` whose count reaches ``hot`` opens one; the next word start
    holding any key, the text's end, or the first word start 400 or more bytes on closes it."""
    n = len(text)
    count = dict(zip(keys, hots))
    starts = [p for p in range(n) if p == 0 or text[p - 1] == 32]
    anchors = {p: count[k] for p in starts if (k := span_key_ref(text, p)) in count}
    mask = [0] * n
    open_at, blocks = None, 0
    for p in starts + [n]:
        if open_at is not None and (p == n or p in anchors or p - open_at >= 400):
            blocks += 1
            mask[open_at:p] = [blocks] * (p - open_at)
            open_at = None
        if open_at is None and anchors.get(p, 0) >= hot:
            open_at = p
    return mask


def block_mask_kernel(text: bytes, keys: list[int], hots: list[int], hot: int = 3) -> list[int]:
    from streamdedup._kernels.blocks import block_mask

    mask = np.zeros(len(text), np.int32)
    k, h = np.array(keys + [0], np.uint32), np.array(hots + [0], np.uint8)
    blocks = block_mask(np.frombuffer(text, np.uint8) if text else np.zeros(0, np.uint8), k, h, len(keys), hot, mask,
                        np.uint64(0), np.uint64(0), False)
    assert blocks == int(mask.max(initial=0))
    return mask.tolist()


def uncarried_hot_ref(keys: list[int], hots: list[int], other: list[int], hot: int = 3) -> bool:
    """Whether a key with a count of ``hot`` or more is not among ``other``."""
    return any(c >= hot and k not in other for k, c in zip(keys, hots))


def uncarried_hot_kernel(keys: list[int], hots: list[int], other: list[int], hot: int = 3) -> bool:
    from streamdedup._kernels.blocks import uncarried_hot

    return bool(uncarried_hot(np.array(keys + [0], np.uint32), np.array(hots + [0], np.uint8), len(keys),
                              np.array(other + [0], np.uint32), len(other), hot))


def blocks_held_ref(a: bytes, b: bytes, blocks: list[int]) -> list[float]:
    """For each block k of ``b`` (``blocks[p] == k``, from 1), the share of its distinct 8-byte
    windows lying wholly inside it that ``a`` has, counting a window once, for the first block
    in text order that has it; 1.0 for a block with none."""
    n = max(blocks, default=0)
    have = {a[p:p + 8] for p in range(len(a) - 7)}
    seen: set[bytes] = set()
    total, held = [0] * n, [0] * n
    for p in range(len(b) - 7):
        k = blocks[p]
        if k == 0 or blocks[p + 7] != k or b[p:p + 8] in seen:
            continue
        seen.add(b[p:p + 8])
        total[k - 1] += 1
        held[k - 1] += b[p:p + 8] in have
    return [h / t if t else 1.0 for h, t in zip(held, total)]


def blocks_held_kernel(a: bytes, b: bytes, blocks: list[int]) -> list[float]:
    from streamdedup._kernels import evidence as KE

    n = max(blocks, default=0)
    size = KE.table_size(len(a), len(b))
    buf = lambda t: np.frombuffer(t, dtype=np.uint8) if t else np.zeros(0, np.uint8)  # noqa: E731
    out = np.empty(n, np.float64)
    KE.blocks_held(buf(a), buf(b), np.array(blocks, np.int32), n, np.zeros(size, np.uint64), np.zeros(size, np.uint8), out)
    return out.tolist()


def left_out_ref(a: bytes, a_keys: list[int], a_hots: list[int], b: bytes, b_keys: list[int], b_hots: list[int],
                 hot: int = 3, shared: float = 0.5, min_bytes: int = 100) -> tuple[bytes, bytes] | None:
    """Both texts without the blocks the other does not carry (``_kernels.blocks.left_out``):
    a text's block is one its key of count ``hot`` or more that the other text lacks starts; it
    goes when less than ``shared`` of its 8-grams are in the other text. None when nothing goes
    from either, or either keeps less than ``min_bytes``."""
    if not (uncarried_hot_ref(a_keys, a_hots, b_keys, hot) or uncarried_hot_ref(b_keys, b_hots, a_keys, hot)):
        return None
    left = []
    for mine, keys, hots, other, other_keys in ((a, a_keys, a_hots, b, b_keys), (b, b_keys, b_hots, a, a_keys)):
        own = [0 if c >= hot and k in other_keys else c for k, c in zip(keys, hots)]
        mask = block_mask_ref(mine, keys, own, hot)
        held = blocks_held_ref(other, mine, mask)
        left.append(bytes(x for x, k in zip(mine, mask) if k == 0 or held[k - 1] >= shared))
    if left == [a, b] or len(left[0]) < min_bytes or len(left[1]) < min_bytes:
        return None
    return left[0], left[1]


def left_out_kernel(a: bytes, a_keys: list[int], a_hots: list[int], b: bytes, b_keys: list[int], b_hots: list[int],
                    hot: int = 3, shared: float = 0.5, min_bytes: int = 100) -> tuple[bytes, bytes] | None:
    from streamdedup._kernels import evidence as KE
    from streamdedup._kernels.blocks import left_out

    size = KE.table_size(len(a), len(b))
    longer = max(len(a), len(b))
    buf = lambda t: np.frombuffer(t, dtype=np.uint8) if t else np.zeros(0, np.uint8)  # noqa: E731
    out_a, out_b = np.empty(len(a), np.uint8), np.empty(len(b), np.uint8)
    kept_a, kept_b = left_out(buf(a), np.array(a_keys + [0], np.uint32), np.array(a_hots + [0], np.uint8), len(a_keys),
                              buf(b), np.array(b_keys + [0], np.uint32), np.array(b_hots + [0], np.uint8), len(b_keys),
                              hot, np.uint64(0), np.uint64(0), False, shared, min_bytes, np.zeros(size, np.uint64),
                              np.zeros(size, np.uint8), np.empty(longer, np.int32), np.empty(longer + 1, np.float64),
                              out_a, out_b)
    return None if kept_a < 0 else (out_a[:kept_a].tobytes(), out_b[:kept_b].tobytes())


def evidence_sketch_ref(text: bytes, key: tuple[int, int] | None = None) -> list[list[int]]:
    """The two evidence sketches of a text (``_kernels.sketches``): every 8-byte gram (one gram
    of all bytes below 8), plain and with ASCII digits as ``0``, through SipHash under ``key``,
    into one-permutation MinHash bins, the low 8 bits of each slot."""
    from streamdedup._kernels.sketches import SEED, SLOTS

    out = []
    for fold in (False, True):
        data = bytes(48 if fold and 48 <= c <= 57 else c for c in text)
        k = min(8, len(data))
        grams = [int.from_bytes(data[p:p + k], "big") for p in range(len(data) - k + 1)] if data else []
        if key is not None:
            grams = [siphash64_ref(key[0], key[1], g) for g in grams]
        out.append([v & 0xFF for v in oph_ref(grams, SLOTS, int(SEED))])
    return out


def evidence_sketch_kernel(text: bytes, key: tuple[int, int] | None = None) -> list[list[int]]:
    from streamdedup._kernels.sketches import SLOTS, sketch_batch

    buf = np.frombuffer(text + b"\0", dtype=np.uint8)  # one byte more: an empty text is still an array
    plain, folded = np.empty((1, SLOTS), np.uint8), np.empty((1, SLOTS), np.uint8)
    k0, k1 = key if key is not None else (0, 0)
    sketch_batch(buf, np.zeros(1, np.int64), np.array([len(text)], np.int64), np.uint64(k0), np.uint64(k1), key is not None,
                 plain, folded)
    return [plain[0].tolist(), folded[0].tolist()]


@dataclass(frozen=True)
class KernelCase:
    name: str
    kernel: Callable
    reference: Callable


#: kernel -> reference; the tests feed each row the same inputs.
KERNELS = {
    "canonical (fused)": KernelCase("canonical (fused)", canonical_ascii_kernel, canonical_ascii_ref),
    "minhash (fused)": KernelCase("minhash (fused)", fused_minhash_kernel, fused_minhash_ref),
    "ld_signature (fused)": KernelCase("ld_signature (fused)", signature_kernel, signature_from_raw_ref),
    "digest (fused)": KernelCase("digest (fused)", fused_digest_kernel, fused_digest_ref),
    "combine_words": KernelCase("combine_words", combine_words_kernel, combine_words_ref),
    "char_shingles": KernelCase("char_shingles", char_shingles_kernel, char_shingles_ref),
    "byte_grams": KernelCase("byte_grams", byte_grams_kernel, byte_grams_ref),
    "gram_jaccards": KernelCase("gram_jaccards", gram_jaccards_kernel, gram_jaccards_ref),
    "near_word_share": KernelCase("near_word_share", near_word_share_kernel, near_word_share_ref),
    "tokens (fused)": KernelCase("tokens (fused)", fused_tokens_kernel, fused_tokens_ref),
    "char count (fused)": KernelCase("char count (fused)", fused_char_count_kernel, fused_char_count_ref),
    "char sketch (fused)": KernelCase("char sketch (fused)", fused_chars_kernel, fused_chars_ref),
    "unicode_scan": KernelCase("unicode_scan", unicode_scan_kernel, unicode_scan_ref),
    "oph_minhash": KernelCase("oph_minhash", oph_kernel, oph_ref),
    "classic_minhash": KernelCase("classic_minhash", classic_kernel, classic_ref),
    "band_keys": KernelCase("band_keys", band_keys_kernel, band_keys_ref),
    "digest128": KernelCase("digest128", digest_kernel, digest_ref),
    "levenshtein_bounded": KernelCase("levenshtein_bounded", levenshtein_bounded_kernel, levenshtein_bounded_ref),
    "semi_global": KernelCase("semi_global", semi_global_kernel, semi_global_ref),
    "semi_global_distance": KernelCase("semi_global_distance", semi_global_distance_kernel, semi_global_ref),
    "edit_runs": KernelCase("edit_runs", edit_runs_kernel, edit_runs_ref),
    "block_mask": KernelCase("block_mask", block_mask_kernel, block_mask_ref),
    "blocks_held": KernelCase("blocks_held", blocks_held_kernel, blocks_held_ref),
    "uncarried_hot": KernelCase("uncarried_hot", uncarried_hot_kernel, uncarried_hot_ref),
    "left_out": KernelCase("left_out", left_out_kernel, left_out_ref),
    "evidence_sketch": KernelCase("evidence_sketch", evidence_sketch_kernel, evidence_sketch_ref),
}

# ---------------------------------------------------------------- verification of a pair


def _contained_embedding(c: float, ct: float, lo: float) -> float:
    """The embedding contained_in needs at estimate c: ct from ct up, rising linearly to 1.0 at lo, never below lo."""
    if c >= ct:
        return ct
    if c < lo or lo >= ct:
        return 2.0
    return 1.0 - (1.0 - ct) * (c - lo) / (ct - lo)


def compare_ref(a, b, verify, sig, informative=None, full=False, shared_boilerplate=False) -> dict:
    """The verification rules in plain Python (the kernel is ``_kernels.verify.compare_pair``).

    ``a``/``b`` are ``streamdedup.engine.verify.Fingerprint``; returns every estimate and the relation.
    """
    from streamdedup.sketch import signature
    from streamdedup.sketch.estimate import containment, jaccard, jaccard_bbit

    def est_jaccard(mask):
        if a.empty or b.empty:
            return 0.0
        bits = min(a.minhash_bits, b.minhash_bits)
        ma, mb = a.minhash, b.minhash
        if mask is not None:
            ma, mb = ma[mask], mb[mask]
        if bits >= 32:
            return jaccard(ma, mb)
        m = np.uint32((1 << bits) - 1)
        return jaccard_bbit(ma & m, mb & m, bits)

    boilerplate = informative is not None and not bool(informative.all())
    if boilerplate and int(informative.sum()) < verify.min_informative_slots:
        j = 0.0
    else:
        j = est_jaccard(informative if boilerplate else None)
    c_ba = containment(j, b.n_shingles, a.n_shingles)
    c_ab = containment(j, a.n_shingles, b.n_shingles)
    exact = a.digest == b.digest and not a.empty
    # the pair's bytes per character, both texts pooled (1 for ASCII): what a short run is worth
    bpc = max(1.0, (a.length + b.length) / (a.chars + b.chars)) if a.chars + b.chars else 1.0
    ld = (signature.estimate(a.signature, b.signature, a.length, b.length, sig, bpc)
          if (full or exact or j >= verify.ld_min_jaccard) else None)
    inner, outer = (b.signature, a.signature) if len(b.signature) <= len(a.signature) else (a.signature, b.signature)
    # a short text beside a long one: its containment estimate is noise, an exact embedding decides
    short = (verify.short_copy_ratio > 0 and b.length <= a.length and len(b.signature) >= 4
             and b.n_shingles * verify.short_copy_ratio <= a.n_shingles)
    need_emb = full or short or c_ba >= verify.contained_min_estimate or c_ab >= verify.containment_threshold
    emb = signature.embedding(inner, outer).similarity if (need_emb and inner) else 0.0
    ct = verify.containment_threshold
    if exact:
        relation = "exact"
    elif j >= verify.jaccard_threshold or (ld is not None and not shared_boilerplate
                                           and ld.similarity >= verify.ld_similarity_threshold and j >= verify.ld_min_jaccard):
        relation = "near_duplicate"
    elif b.length <= a.length and (emb >= _contained_embedding(c_ba, ct, verify.contained_min_estimate)
                                   or (short and emb >= 1.0)):
        relation = "contained_in"
    elif c_ab >= ct and a.length < b.length and emb >= ct:
        relation = "contains"
    elif ld is not None and ld.related:
        relation = "related"
    else:
        relation = "unrelated"
    # exact character evidence: texts known, nothing else made a duplicate
    if (verify.exact_evidence and "near_duplicate" in verify.duplicate_relations and a.text and b.text
            and relation not in verify.duplicate_relations and j < verify.ld_min_jaccard and not shared_boilerplate
            and ld is not None and ld.similarity >= verify.exact_min_ld
            and abs(a.length - b.length) <= (1.0 - verify.exact_min_ld) * max(a.length, b.length)
            and min(a.length, b.length) >= verify.exact_min_bytes):
        plain, folded, _, _ = gram_jaccards_ref(a.text, b.text)
        if plain >= verify.exact_gram_jaccard and folded - plain <= verify.exact_max_digit_gain \
                and near_word_share_ref(a.text, b.text) >= verify.exact_min_near_words:
            relation = "near_duplicate"
    # a short copy's exact containment: a text at least 80 bytes, at most half the earlier's
    elif (verify.exact_evidence and "contained_in" in verify.duplicate_relations and verify.short_exact_containment > 0
            and a.text and b.text
            and relation not in verify.duplicate_relations and 80 <= b.length <= 0.5 * a.length
            and c_ba >= verify.short_exact_min_estimate):
        _, _, held, held_folded = gram_jaccards_ref(a.text, b.text)
        if held >= verify.short_exact_containment and held_folded - held <= verify.exact_max_digit_gain:
            relation = "contained_in"
    return {"relation": relation, "jaccard": j, "containment_b_in_a": c_ba, "containment_a_in_b": c_ab, "ld": ld,
            "embedding_similarity": emb, "is_duplicate": relation in verify.duplicate_relations}
