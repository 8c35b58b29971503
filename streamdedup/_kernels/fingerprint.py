"""Fingerprint kernels: canonical bytes, shingles, MinHash, band keys, LD signatures."""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

# Numba's on-disk cache of fingerprint_batch holds the anchor rules (anchors.py) and the hash
# helpers (hashing.py) compiled in and checks only this file's contents: a change there is seen
# once this file changes too. Changed with: anchors.anchor_starts with selects.
from streamdedup._kernels.anchors import TRIGGER, anchor_keys
from streamdedup._kernels.hashing import EMPTY_SLOT, FNV_OFFSET, FNV_PRIME, GOLDEN, ROLL_BASE, digest128, fmix64, key_all, rotl, siphash64

#: seeds the lead MinHash and its band keys apart from the main ones
LEAD_SALT = np.uint64(0x5DEECE66D)
#: seeds the byte-gram MinHash and its band keys apart from the main and lead ones
CHAR_SALT = np.uint64(0xC6A4A7935BD1E995)

# --------------------------------------------------------------------------- shingles


@njit(cache=True)
def combine_words(words, nw, size, out):
    """Hashes of the w-word shingles from the word hashes; returns the shingle count.

    A text with fewer than w words is one shingle of all its words, so short documents still
    have a fingerprint. Rolling combination: H = XOR_j rotl(word_j, w-1-j); sliding by one word
    is two rotations and two XORs instead of w multiply-adds, and fmix64 breaks the linearity.
    """
    if nw == 0:
        return 0
    w = size if size < nw else nw
    h = uint64(0)
    for j in range(w):
        h = rotl(h, 1) ^ words[j]
    out[0] = fmix64(h ^ uint64(w))
    n_sh = nw - w + 1
    for s in range(1, n_sh):
        h = rotl(h, 1) ^ rotl(words[s - 1], w) ^ words[s + w - 1]
        out[s] = fmix64(h ^ uint64(w))
    return n_sh


@njit(cache=True)
def char_shingles(buf, lo, hi, size, out):
    """Hashes of the k-byte shingles of ``buf[lo:hi]`` (polynomial rolling hash, fmix64)."""
    length = hi - lo
    if length <= 0:
        return 0
    k = size if size < length else length
    top = uint64(1)
    for _ in range(k - 1):
        top *= ROLL_BASE
    h = uint64(0)
    for i in range(k):
        h = h * ROLL_BASE + uint64(buf[lo + i])
    out[0] = fmix64(h)
    n_sh = length - k + 1
    for s in range(1, n_sh):
        h = (h - uint64(buf[lo + s - 1]) * top) * ROLL_BASE + uint64(buf[lo + s + k - 1])
        out[s] = fmix64(h)
    return n_sh


@njit(cache=True)
def byte_grams(buf, lo, hi, size, sample_bits, out):
    """The ``size``-byte grams of ``buf[lo:hi]`` (size <= 8), each its bytes as one big-endian
    integer: exact, so two grams are equal only when their bytes are (MinHash mixes them).

    Only grams whose multiplicative hash has ``sample_bits`` zero top bits are kept (Broder's
    MOD_m: the same grams in every text, so the kept sets' Jaccard estimates the full sets';
    the MinHash then hashes 1 gram in 2**sample_bits, measured: 1/8 keeps the recall on noisy
    copies). Written branch-free (every gram is stored, the count advances when it is kept).
    A text with no kept gram keeps all of them; a text shorter than ``size`` is one gram of
    all its bytes. Returns the gram count.
    """
    length = hi - lo
    if length <= 0:
        return 0
    k = size if size < length else length
    mask = (uint64(1) << uint64(8 * k)) - uint64(1) if k < 8 else ~uint64(0)
    win = uint64(0)
    for p in range(lo, lo + k - 1):
        win = (win << uint64(8)) | uint64(buf[p])
    first = win
    shift = uint64(64 - sample_bits)
    n = 0
    for p in range(lo + k - 1, hi):
        win = ((win << uint64(8)) | uint64(buf[p])) & mask
        out[n] = win
        keep = sample_bits == 0 or ((win * GOLDEN) >> shift) == uint64(0)
        n += 1 if keep else 0
    if n == 0:  # nothing sampled (a short text): every gram
        win = first
        for p in range(lo + k - 1, hi):
            win = ((win << uint64(8)) | uint64(buf[p])) & mask
            out[n] = win
            n += 1
    return n


# --------------------------------------------------------------------------- MinHash


@njit(cache=True)
def oph_minhash(hashes, n, num_perm, log2k, seed, out):
    """One-permutation hashing (Li, Owen, Zhang 2012) with optimal densification.

    A single hash per shingle picks its bin (top ``log2k`` bits) and its value (low 32 bits).
    Empty bins borrow the value of the first non-empty bin on a fixed pseudo-random probe
    sequence that depends only on the bin index (Shrivastava 2017), so two documents fill a
    given empty bin the same way and slot-wise equality still estimates Jaccard.
    """
    _oph(hashes, n, num_perm, log2k, seed, out, np.empty(num_perm, dtype=np.uint32))


@njit(cache=True)  # called, not inlined: see _kernels/__init__, Compile time
def _oph(hashes, n, num_perm, log2k, seed, out, filled):
    """:func:`oph_minhash` with the caller's scratch ``filled`` (no allocation per document)."""
    for j in range(num_perm):
        out[j] = EMPTY_SLOT
    if n == 0:
        return
    shift = uint64(64 - log2k)
    for i in range(n):
        h = fmix64(hashes[i] ^ seed)
        b = h >> shift
        # EMPTY_SLOT is reserved as the "no value" marker: the largest value is one less.
        v = min(np.uint32(h & uint64(0xFFFFFFFF)), np.uint32(0xFFFFFFFE))
        # a select and an unconditional store: whether a shingle lowers its bin is a coin toss
        # the branch predictor loses (107 random grams into 64 bins: 625 ns with a branch, 345)
        cur = out[b]
        out[b] = v if v < cur else cur
    mask = uint64(num_perm - 1)
    for j in range(num_perm):
        filled[j] = out[j]
    for j in range(num_perm):
        if filled[j] != EMPTY_SLOT:
            continue
        attempt = uint64(1)
        while True:
            probe = fmix64((uint64(j) << uint64(32)) ^ attempt ^ seed) & mask
            if filled[probe] != EMPTY_SLOT:
                out[j] = filled[probe]
                break
            attempt += uint64(1)


@njit(cache=True)
def classic_minhash(hashes, n, num_perm, seed, out):
    """K independent hash functions, the textbook MinHash; kept as a reference mode."""
    for j in range(num_perm):
        out[j] = EMPTY_SLOT
    for j in range(num_perm):
        salt = fmix64(seed + uint64(j + 1) * GOLDEN)
        best = EMPTY_SLOT
        for i in range(n):
            v = np.uint32(fmix64(hashes[i] ^ salt) & uint64(0xFFFFFFFF))
            if v == EMPTY_SLOT:
                v = np.uint32(0xFFFFFFFE)
            if v < best:
                best = v
        out[j] = best


@njit(cache=True)
def band_keys(slots, bands, rows, seed, out):
    """One 64-bit key per band; the band index is mixed in so bands never share keys."""
    _band_keys(slots, bands, rows, band_seeds(bands, seed), out)


@njit(cache=True)
def band_seeds(bands, seed):
    """The per-band starting value of :func:`band_keys` (the same for every document)."""
    out = np.empty(bands, dtype=np.uint64)
    for b in range(bands):
        out[b] = fmix64(seed ^ (uint64(b + 1) * GOLDEN))
    return out


@njit(cache=True)  # called, not inlined: see _kernels/__init__, Compile time
def _band_keys(slots, bands, rows, seeds, out):
    for b in range(bands):
        h = seeds[b]
        for r in range(rows):
            h = fmix64(h ^ uint64(slots[b * rows + r]))
        out[b] = h


# --------------------------------------------------------------------------- the batch kernel


def canonical_byte_map(lower: bool, punct: bool) -> np.ndarray:
    """What each byte becomes in canonical text: itself, lower-cased, or a space.

    Spaces are the ASCII characters ``str.isspace()`` accepts; with ``punct`` every other
    ASCII non-alphanumeric is one too. Bytes >= 0x80 pass through. A table lookup replaces a
    chain of data-dependent comparisons per byte.
    """
    table = np.arange(256, dtype=np.uint8)
    for c in range(128):
        ch = chr(c)
        if ch.isspace() or (punct and not ch.isalnum()):
            table[c] = 32
        elif lower and "A" <= ch <= "Z":
            table[c] = c + 32
    return table


@njit(cache=True)
def _canonicalise(raw, lo, hi, cmap, canon, pos, marks, blocks):
    """Map ``raw[lo:hi]`` through ``cmap`` into ``canon[pos:]``, collapsing and trimming spaces.

    Branch-free: every byte is written and the write position advances unless the byte is a
    space following a space (or the start). Word boundaries are unpredictable: a branchy
    version of this loop cost 2.3 us per Reuters story, this one 0.5 us. Indices are unsigned
    so that Numba emits no negative-index wraparound per access. Each byte that can make an
    anchor (``anchors.TRIGGER``) is noted in ``marks`` for :func:`anchors.anchor_keys`, as
    ``(raw position - lo) << 32 | (canonical position after it - start)``: the pass keeps a
    bit per raw byte for "is a trigger" and one for "was kept" in two registers, 64 bytes a
    block, and stores them with the block's canonical start into ``blocks``; the marks are
    read off those bits after the pass (:func:`_marks_of_blocks`). This pass reads the raw
    bytes anyway (a pass of their own cost the anchors 1.3 us per Reuters story), and storing
    a mark at every byte, the count advancing on a trigger, cost 0.7 us per story over the
    loop without marks, the bits 0.45 (a second store per byte is dearer than four ALU ops).
    Returns the new end position, whether the text has a byte >= 0x80 (one OR per byte) and
    the number of marks. Called, not inlined into ``fingerprint_batch``: inlined, the marks
    cost that kernel ~0.5 us more per Reuters story than the same loop costs alone.
    """
    start = uint64(pos)
    p = start
    prev_space = True
    seen = np.uint8(0)
    uhi = uint64(hi)
    b0 = uint64(lo)
    nb = 0
    while b0 < uhi:
        b1 = b0 + uint64(64) if b0 + uint64(64) <= uhi else uhi
        blocks[3 * nb] = p - start
        p, prev_space, seen, blocks[3 * nb + 1], blocks[3 * nb + 2] = _canonical_block(raw, b0, b1, cmap, canon, p,
                                                                                        prev_space, seen)
        nb += 1
        b0 = b1
    if p > start and canon[p - uint64(1)] == 32:
        p -= uint64(1)
    return np.int64(p), seen >= 0x80, _marks_of_blocks(blocks, nb, marks)


@njit(cache=True, inline="always")
def _canonical_block(raw, b0, b1, cmap, canon, p, prev_space, seen):
    """:func:`_canonicalise` of the raw bytes ``b0:b1`` (at most 64) from canonical position
    ``p``: returns the new position, ``prev_space``, ``seen``, the trigger bits and the kept
    bits (bit j for raw byte ``b0 + j``). A dropped byte is a space after a space, so the byte
    after it follows a space whether it was kept or not: ``prev_space`` is the byte's own."""
    tb = uint64(0)
    kb = uint64(0)
    k = uint64(0)
    for i in range(b0, b1):
        b = raw[i]
        seen |= b
        c = cmap[b]
        is_space = c == 32
        canon[p] = c
        keep = uint64(not (is_space and prev_space))
        p += keep
        prev_space = is_space
        kb |= keep << k
        tb |= uint64(TRIGGER[b]) << k
        k += uint64(1)
    return p, prev_space, seen, tb, kb


@njit(cache=True, inline="always")
def _popcount(x):
    """The number of set bits of ``x`` (SWAR; LLVM emits one popcnt instruction)."""
    x = x - ((x >> uint64(1)) & uint64(0x5555555555555555))
    x = (x & uint64(0x3333333333333333)) + ((x >> uint64(2)) & uint64(0x3333333333333333))
    x = (x + (x >> uint64(4))) & uint64(0x0F0F0F0F0F0F0F0F)
    return (x * uint64(0x0101010101010101)) >> uint64(56)


@njit(cache=True, inline="always")
def _marks_of_blocks(blocks, nb, marks):
    """The marks of :func:`_canonicalise` from its ``nb`` blocks of (canonical start, trigger
    bits, kept bits), in raw order; returns how many. A trigger's canonical position after it
    is the block's start plus the kept bits up to and including its own."""
    nm = 0
    for j in range(nb):
        cpos, tb, kb = blocks[3 * j], blocks[3 * j + 1], blocks[3 * j + 2]
        while tb != uint64(0):
            low = tb & (~tb + uint64(1))  # the lowest trigger's bit
            raw_off = uint64(64 * j) + _popcount(low - uint64(1))
            marks[nm] = (raw_off << uint64(32)) | (cpos + _popcount(kb & ((low << uint64(1)) - uint64(1))))
            nm += 1
            tb &= tb - uint64(1)
    return np.int64(nm)


@njit(cache=True, inline="always")
def _utf8_at(buf, p, hi, c):
    """Code point and length of the UTF-8 character whose lead byte ``c`` (>= 0xC0) is at
    ``p``; length 0 when the text ends inside it."""
    n = 2 if c < uint64(0xE0) else (3 if c < uint64(0xF0) else 4)
    if p + n > hi:
        return uint64(0), 0
    cp = c & (uint64(0x1F) if n == 2 else (uint64(0x0F) if n == 3 else uint64(0x07)))
    for i in range(1, n):
        cp = (cp << uint64(6)) | (uint64(buf[p + i]) & uint64(0x3F))
    return cp, n


@njit(cache=True)
def _canonicalise_unicode(raw, lo, hi, cmap, umap, repl_off, repl, canon, pos, marks):
    """:func:`_canonicalise` of a text with non-ASCII characters: each one is replaced by its
    canonical form from ``umap`` (``streamdedup.text.unicode_map``: NFKC, case folding, spaces for
    what is not a letter, digit or mark), the rest as there. Exact for texts that
    ``unicode_scan`` passes (the others were canonicalised in Python and map to themselves).
    Marks the anchor triggers as :func:`_canonicalise` does (a character's at its lead byte,
    with the canonical position after the character); returns the end position and their count."""
    start = pos
    nm = 0
    prev_space = True
    skip = 0
    size = uint64(umap.shape[0])
    for i in range(uint64(lo), uint64(hi)):
        if skip > 0:  # a continuation byte of a replaced character
            skip -= 1
            continue
        c = uint64(raw[i])
        r = -1
        if c >= uint64(0xC0):
            cp, n = _utf8_at(raw, i, hi, c)
            if n > 0 and cp < size:
                r = umap[cp]
                # never longer than the character: the output buffers are sized by the raw
                # text (prepare_batch sends texts with such characters through Python)
                r = r if r < 0 or repl_off[r + 1] - repl_off[r] <= n else -1
                skip = n - 1 if r >= 0 else 0
        if r < 0:
            b = cmap[raw[i]]
            pos, prev_space = _put(canon, pos, b, prev_space)
        else:
            for j in range(repl_off[r], repl_off[r + 1]):
                pos, prev_space = _put(canon, pos, repl[j], prev_space)
        if TRIGGER[raw[i]]:
            marks[nm] = ((i - uint64(lo)) << uint64(32)) | uint64(pos - start)
            nm += 1
    if pos > start and canon[pos - 1] == 32:
        pos -= 1
    return pos, nm


@njit(cache=True, inline="always")
def _put(canon, pos, b, prev_space):
    """Write canonical byte ``b`` unless it is a space after a space (or at the start)."""
    is_space = b == 32
    canon[pos] = b
    keep = not (is_space and prev_space)
    return pos + (1 if keep else 0), is_space or (prev_space and not keep)


#: :func:`unicode_scan`'s flags per text
SCAN_UNSAFE, SCAN_TRADITIONAL, SCAN_KANA = 1, 2, 4


@njit(cache=True, nogil=True)
def unicode_scan(raw, offsets, first_ccc, last_ccc, fold_bits, out):
    """Flags of each text for ``canonical.prepare_batch``: ``SCAN_UNSAFE`` where it needs NFKC
    of the whole text (a character that may compose with the one before it, ``first_ccc`` 255;
    combining classes that canonical reordering would swap; a code point past the tables;
    ``streamdedup.text.unicode_map``), ``SCAN_TRADITIONAL`` / ``SCAN_KANA`` where it has a character
    that t2s changes / a kana (``fold_bits`` 1 / 2). The scan stops at the first unsafe one."""
    size = uint64(first_ccc.shape[0])
    for d in range(offsets.shape[0] - 1):
        flags = 0
        prev_last = 0
        for p in range(uint64(offsets[d]), uint64(offsets[d + 1])):
            c = uint64(raw[p])
            if c < uint64(0x80):
                prev_last = 0
            elif c >= uint64(0xC0):
                cp, n = _utf8_at(raw, p, uint64(offsets[d + 1]), c)
                if n == 0 or cp >= size:
                    flags |= SCAN_UNSAFE
                    break
                f = int(first_ccc[cp])
                if f == 255 or (f > 0 and prev_last > f):
                    flags |= SCAN_UNSAFE
                    break
                prev_last = int(last_ccc[cp])
                flags |= int(fold_bits[cp]) << 1
        out[d] = flags


@njit(cache=True, inline="always")
def _char_class(canon, p, hi, c, classes):
    """The token class (``streamdedup.text.scripts``) of the character whose lead byte ``c`` is at
    ``p``: 0 spaced, 1 a token of its own, 2 a combining mark. A sequence cut short by the end
    of the text, or a code point past the table, is spaced."""
    cp, n = _utf8_at(canon, p, hi, c)
    if n == 0:
        return 0
    return classes[cp] if cp < uint64(classes.shape[0]) else 0


@njit(cache=True, inline="always")
def _words_and_signature(canon, lo, hi, n_hood, fine_lo, fine_w, coarse_w, sig_seed, alphabet,
                         words, fine, nf, coarse, nc, counts, g_size, g_top, grams):
    """Word hashes, LD-signature symbols and sampled byte grams of canonical text in one pass.

    Word hash: bytes are packed eight at a time (shift-or) and only whole 8-byte chunks go
    through an FNV multiply; a word's hash is ``fmix64((h ^ tail) * FNV_PRIME + tail length)``.
    The word boundary is data the branch predictor cannot guess, so it is handled with
    selects: every byte writes the hash the current word would get into ``words[nw]`` and a
    space advances ``nw``; the finaliser runs once per word afterwards.
    Window: the last N <= 8 bytes as one big-endian integer (exact: no window-hash
    collisions). Coates emits where ``h mod C == k``; we emit where the top 32 bits of
    ``(window ^ seed) * GOLDEN`` fall in the k-th of C equal sub-ranges: the same rule (a fixed
    1/C of windows, chosen by k) without a division per byte. The coarse range (width
    1/(C*F)) starts where the fine one does, so coarse positions are a subset of fine ones.
    Symbols come from ``fmix64(window ^ seed)``: low half fine, high half coarse, each mapped
    onto the alphabet by ``(x * len(alphabet)) >> 32`` (computed only where a symbol is
    emitted: a branch taken 1 time in C is cheaper than a finaliser per byte).
    Byte grams (``fingerprint.chars``): the last ``g_size`` bytes as one integer, stored into
    ``grams`` at every byte and kept (the count advances) when ``(gram * GOLDEN) & g_top`` is 0,
    :func:`byte_grams`' sampling rule, branch-free. Here and not in a loop of their own: a
    second pass over the text cost ~30% of fingerprint throughput, in this one the gram is a
    shift, a multiply and a store beside the word and window work. Texts shorter than
    ``g_size`` and texts with no kept gram are left to :func:`byte_grams` by the caller.
    Writes the word count, fine end, coarse end and gram count to ``counts`` (a text with
    non-ASCII bytes then gets its tokens from :func:`_unicode_tokens`).
    """
    n_alpha = uint64(alphabet.shape[0])
    win_mask = (uint64(1) << uint64(8 * n_hood)) - uint64(1) if n_hood < 8 else ~uint64(0)
    nw = 0
    acc = uint64(0)
    wh = FNV_OFFSET
    fill = uint64(0)
    win = uint64(0)
    first = lo + n_hood - 1
    g_mask = (uint64(1) << uint64(8 * g_size)) - uint64(1) if g_size < 8 else ~uint64(0)
    g_first = uint64(lo + g_size - 1)
    gw = uint64(0)
    ng = 0
    for p in range(uint64(lo), uint64(hi)):
        c = uint64(canon[p])
        space = c == uint64(32)
        words[nw] = (wh ^ acc) * FNV_PRIME + fill
        nw += 1 if space else 0
        acc = uint64(0) if space else (acc << uint64(8)) | c
        fill = uint64(0) if space else fill + uint64(1)
        wh = FNV_OFFSET if space else wh
        if fill == uint64(8):
            wh = (wh ^ acc) * FNV_PRIME
            acc = uint64(0)
            fill = uint64(0)
        win = ((win << uint64(8)) | c) & win_mask
        gw = ((gw << uint64(8)) | c) & g_mask
        grams[ng] = gw
        ng += 1 if ((gw * GOLDEN) & g_top) == uint64(0) and p >= g_first else 0
        u = (((win ^ sig_seed) * GOLDEN) >> uint64(32)) - fine_lo
        if u < fine_w and p >= first:
            m = fmix64(win ^ sig_seed)
            # multiply-shift maps 32 bits onto the alphabet without a division
            fine[nf] = alphabet[((m & uint64(0xFFFFFFFF)) * n_alpha) >> uint64(32)]
            nf += 1
            if u < coarse_w:
                coarse[nc] = alphabet[((m >> uint64(32)) * n_alpha) >> uint64(32)]
                nc += 1
    if hi > lo:
        words[nw] = (wh ^ acc) * FNV_PRIME + fill
        nw += 1
    for w in range(nw):
        words[w] = fmix64(words[w])
    counts[0] = nw
    counts[1] = nf
    counts[2] = nc
    counts[3] = ng
    counts[4] = 0


@njit(cache=True)
def _unicode_tokens(canon, lo, hi, classes, words, counts):
    """Token hashes of a text with non-ASCII bytes, over the word hashes of
    :func:`_words_and_signature`: words end at spaces, and a character of a script
    written without spaces (``classes``, :mod:`streamdedup.text.scripts`) is a token of its own; a
    combining mark stays in the token before it, and the first character after such a token
    starts a new one ("2月3日" is four tokens). A hash is the word hash of the token's bytes.
    Its own pass and function, run only for such texts: inside the fused loop the token logic
    cost ~10% of English throughput and ~2.5 s of compile time. Writes the token count and the
    number of single-character tokens to ``counts[0]`` and ``counts[4]``; returns the number of
    characters (bytes that are not UTF-8 continuation bytes: the LD calibration's bytes per
    character, ``calibration.short_run_worth``; an ASCII text has one per byte).
    """
    nw = 0
    n_single = 0
    acc = uint64(0)
    wh = FNV_OFFSET
    fill = uint64(0)
    filled = False  # the current token has a byte
    single = False  # the current token is a character of an unspaced script
    n_chars = 0
    for p in range(uint64(lo), uint64(hi)):
        c = uint64(canon[p])
        space = c == uint64(32)
        n_chars += 0 if (c & uint64(0xC0)) == uint64(0x80) else 1
        if c >= uint64(0xC0):  # the lead byte of a character: its class decides
            k = _char_class(canon, p, hi, c, classes)
            cut = k == 1 or (k == 0 and single)
            next_single = single if k == 2 else k == 1
        else:  # ASCII ends a single-character token, a continuation byte keeps it
            cut = space or (single and c < uint64(0x80))
            next_single = single and c >= uint64(0x80)
        if cut and filled:
            words[nw] = fmix64((wh ^ acc) * FNV_PRIME + fill)
            nw += 1
            n_single += 1 if single else 0
        if cut:
            acc, fill, wh = uint64(0), uint64(0), FNV_OFFSET
        if not space:
            acc = (acc << uint64(8)) | c
            fill += uint64(1)
            if fill == uint64(8):
                wh = (wh ^ acc) * FNV_PRIME
                acc, fill = uint64(0), uint64(0)
        filled = (filled and not cut) or not space
        single = next_single
    if filled:
        words[nw] = fmix64((wh ^ acc) * FNV_PRIME + fill)
        nw += 1
        n_single += 1 if single else 0
    counts[0] = nw
    counts[4] = n_single
    return n_chars


@njit(cache=True, inline="always")
def _emit_ranges(residue, compression, coarse_c):
    """Where the fine signature's emitting range starts and how wide it and the coarse one are,
    out of the 2**32 values of a window's top hash bits (see :func:`_words_and_signature`)."""
    span = uint64(1) << uint64(32)
    return uint64(residue) * span // uint64(compression), span // uint64(compression), span // uint64(coarse_c)


@njit(cache=True, inline="always")
def _byte_grams_keyed(canon, start, pos, sampled, char_size, char_sample_bits, grams, key0, key1, keyed):
    """The byte grams of a text for its character bands: a character edit breaks ``char_size`` of
    them, not five word shingles, so a copy with character noise stays a candidate (see
    config.CharsConfig). ``sampled`` grams are in ``grams`` already (the signature pass took
    them); a short text, or one with none sampled, takes them all here. Keyed, through SipHash."""
    n = sampled
    if n == 0 or pos - start < char_size:
        n = byte_grams(canon, start, pos, char_size, char_sample_bits, grams)
    if keyed:
        key_all(grams, n, key0, key1)
    return n


@njit(cache=True, inline="always")
def _digest_keyed(canon, start, pos, out, key0, key1, keyed):
    """The text's 128-bit digest into ``out``; keyed, each half through SipHash under its own key."""
    digest128(canon, start, pos, out)
    if keyed:
        out[0] = siphash64(key0, key1, out[0])
        out[1] = siphash64(key0 ^ GOLDEN, key1, out[1])


@njit(cache=True, nogil=True)
def fingerprint_batch(
    raw, offsets, cmap, umap, repl_off, repl, classes,
    kind_word, shingle_size, single_size,
    num_perm, log2k, classic, mh_seed, bands, rows,
    n_hood, compression, coarse_c, residue, sig_seed, alphabet,
    canon, canon_offsets, minhash_out, band_out, n_shingles_out,
    fine_buf, fine_offsets, coarse_buf, coarse_offsets, digest_out,
    lead_shingles, lead_perm, lead_log2k, lead_bands, lead_rows, lead_out,
    char_size, char_sample_bits, char_perm, char_log2k, char_bands, char_rows, char_mh_out, char_out,
    status, chars_out, anchor_window, anchor_first, anchor_out, anchor_n, key0, key1, keyed,
):
    """Canonical form, anchor keys, digest, shingles, MinHash, band keys and LD signatures of a batch:
    per document, canonicalise the raw bytes through ``cmap`` (non-ASCII text again, by characters
    through ``umap``), noting anchor triggers; the anchor keys (``_kernels.anchors``; none with an
    ``anchor_window`` of 0); one pass over the canonical bytes for tokens (``classes``) and signature
    symbols while they are in L1 cache, then digest, shingles, MinHash and band keys. Buffers are
    sized ``len(raw)`` (+1): canonical text is never longer than the raw text, nor its symbols.
    ``keyed``: every shingle and byte-gram hash, the digest and the anchor keys go through
    SipHash under ``(key0, key1)`` (``fingerprint.secret``; the caller keys the signature's seed)."""
    n_docs = offsets.shape[0] - 1
    max_len = 1
    for d in range(n_docs):  # a loop, not np.max: that compiles numpy's reductions (~0.6 s)
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    words = np.empty(max_len + 1, dtype=np.uint64)
    hashes = np.empty(max_len + 1, dtype=np.uint64)
    counts = np.zeros(5, dtype=np.int64)
    grams = np.empty(max_len + 1, dtype=np.uint64)
    starts, marks, blocks = np.empty(max_len + 1, np.int64), np.empty(max_len + 1, np.uint64), np.empty(3 * (max_len // 64 + 1), np.uint64)  # anchors
    g_top = ~uint64(0) << uint64(64 - char_sample_bits) if char_sample_bits > 0 else uint64(0)  # gram sample mask
    g_size = char_size if char_bands > 0 else 8
    lead_slots = np.empty(max(lead_perm, 1), dtype=np.uint32)
    filled = np.empty(max(num_perm, lead_perm, char_perm), dtype=np.uint32)
    main_seeds = band_seeds(bands, mh_seed)
    lead_seeds = band_seeds(lead_bands, mh_seed ^ LEAD_SALT)
    char_seeds = band_seeds(char_bands, mh_seed ^ CHAR_SALT)
    fine_lo, fine_w, coarse_w = _emit_ranges(residue, compression, coarse_c)
    pos = np.int64(0)  # not a literal 0: see _kernels/__init__, Compile time
    canon_offsets[0] = fine_offsets[0] = coarse_offsets[0] = 0
    for d in range(n_docs):
        start = pos
        pos, unicode, n_marks = _canonicalise(raw, offsets[d], offsets[d + 1], cmap, canon, np.int64(pos), marks, blocks)
        if unicode:  # ASCII texts took the branch-free loop alone; this one again, by characters
            status[0] |= umap.shape[0] == 0  # no tables: the caller builds them and runs again
            pos, n_marks = _canonicalise_unicode(raw, offsets[d], offsets[d + 1], cmap, umap, repl_off, repl, canon, start, marks)
        canon_offsets[d + 1] = pos  # the anchor keys here, while the text, raw bytes and marks are in L1 cache
        anchor_n[d] = anchor_keys(raw, offsets[d], offsets[d + 1], marks, n_marks, canon, start, pos, anchor_window,
                                  anchor_first, starts, anchor_out[d], key0, key1, keyed) if anchor_window > 0 else 0
        _words_and_signature(canon, start, pos, n_hood, fine_lo, fine_w, coarse_w, sig_seed, alphabet,
                             words, fine_buf, fine_offsets[d], coarse_buf, coarse_offsets[d], counts,
                             g_size, g_top, grams)
        chars_out[d] = _unicode_tokens(canon, start, pos, classes, words, counts) if unicode else pos - start
        fine_offsets[d + 1] = counts[1]
        coarse_offsets[d + 1] = counts[2]
        _digest_keyed(canon, start, pos, digest_out[d], key0, key1, keyed)
        if kind_word:
            # mostly single-character tokens (Chinese, Japanese, Thai): shingles of `single_size`,
            # else `shingle_size`; per document, so Latin names and digits in Chinese take the same
            w = single_size if 2 * counts[4] > counts[0] else shingle_size
            n = combine_words(words, counts[0], w, hashes)
        else:
            n = char_shingles(canon, start, pos, shingle_size, hashes)
        n_shingles_out[d] = n
        if keyed:
            key_all(hashes, n, key0, key1)
        if classic:
            classic_minhash(hashes, n, num_perm, mh_seed, minhash_out[d])
        else:
            _oph(hashes, n, num_perm, log2k, mh_seed, minhash_out[d], filled)
        _band_keys(minhash_out[d], bands, rows, main_seeds, band_out[d])
        if lead_bands > 0:
            # The lead: a small MinHash of the first shingles only, so that a short version
            # (teaser, brief) of a long story becomes a candidate even when its Jaccard with
            # the whole story is far below the LSH threshold.
            lead_n = n if n < lead_shingles else lead_shingles
            _oph(hashes, lead_n, lead_perm, lead_log2k, mh_seed ^ LEAD_SALT, lead_slots, filled)
            _band_keys(lead_slots, lead_bands, lead_rows, lead_seeds, lead_out[d])
        if char_bands > 0:
            n = _byte_grams_keyed(canon, start, pos, counts[3], char_size, char_sample_bits, grams, key0, key1, keyed)
            _oph(grams, n, char_perm, char_log2k, mh_seed ^ CHAR_SALT, char_mh_out[d], filled)
            _band_keys(char_mh_out[d], char_bands, char_rows, char_seeds, char_out[d])


