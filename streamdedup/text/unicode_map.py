"""The canonical form of non-ASCII characters as tables, so the fingerprint kernel applies it.

Canonical form (``canonical.canonicalize``) is NFKC, then case folding, then everything that is
not a letter, digit or mark becomes a space, runs of spaces collapse. Case folding and the
space rule work character by character. NFKC does too, except where a character composes with
the one before it (``e`` + U+0301 -> ``é``, Hangul jamo) or a run of combining marks is out of
canonical order: a text without those is NFKC'd exactly by mapping each character on its own.
So :func:`tables` holds each character's canonical form, and :func:`unsafe_flags` the two
properties that say a text needs the whole-text NFKC: the kernel
``_kernels.fingerprint.unicode_scan`` finds those (rare) texts and only they go through
Python. Done in Python, NFKC and the regular expressions made Chinese text ~7x slower per MB
than ASCII text; the kernel reads the tables at the lead byte of each multi-byte character.

Tables cover code points below :data:`~streamdedup.text.scripts.TABLE_SIZE`; a text with a code
point above is unsafe (Python's path). They are built on first use (~0.5 s) once per
installation and canonical configuration, and loaded from the disk after that
(:mod:`~streamdedup.text.table_cache`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from streamdedup.text.charclass import HAN, KANA, KANA_RANGES, NON_WORD
from streamdedup.text.fold import traditional_chars
from streamdedup.text.scripts import TABLE_SIZE
from streamdedup.text.table_cache import load_or_build

#: ``first_ccc`` value of a character whose text goes through Python: it may compose with the
#: one before it, or its canonical form is longer than it
PYTHON = 255
_SPACES = re.compile(r"\s+")


class UnicodeTables(NamedTuple):
    """``umap[cp]``: -1 keeps the character, else ``repl[repl_off[i]:repl_off[i + 1]]`` (UTF-8)
    replaces it. ``first_ccc`` / ``last_ccc``: the canonical combining class of the first / last
    character of its compatibility decomposition, ``PYTHON`` where its text must go through
    Python (see there). ``fold_bits``: what decides the Traditional fold, all 0 without it."""

    umap: np.ndarray
    repl_off: np.ndarray
    repl: np.ndarray
    first_ccc: np.ndarray
    last_ccc: np.ndarray
    fold_bits: np.ndarray  # 1: t2s changes the character on its own, 2: kana (the fold's ``auto``)


def _all_chars() -> list[str]:
    return [chr(c) for c in range(0x80, TABLE_SIZE) if not 0xD800 <= c < 0xE000]


def _per_char(chars: list[str], form: str) -> list[str]:
    """``unicodedata.normalize(form, ch)`` for each character, in one call: NUL (a starter
    nothing composes with) keeps them apart."""
    return unicodedata.normalize(form, "\0".join(chars)).split("\0")


#: the tables this process has built, by the arguments of :func:`tables` (at most 16 settings)
_BUILT: dict[tuple[bool, bool, bool, bool], UnicodeTables] = {}


def tables(nfkc: bool, casefold: bool, punctuation_to_space: bool, fold: bool = False) -> UnicodeTables:
    """Each character's canonical form under these settings (the same steps as
    ``canonical._canonical_unicode``, on one character, spaces not yet collapsed; ``fold``:
    Traditional Chinese is folded, in Python before the kernel). Made once per process: loaded
    from the disk cache, or built (~0.5 s) and saved there."""
    key = (nfkc, casefold, punctuation_to_space, fold)
    if key not in _BUILT:
        _BUILT[key] = UnicodeTables(*load_or_build(key, UnicodeTables._fields, lambda: _build(*key)))
    return _BUILT[key]


def built_tables(nfkc: bool, casefold: bool, punctuation_to_space: bool, fold: bool = False) -> UnicodeTables | None:
    """:func:`tables` if this process built them already (a non-ASCII text went through
    ``canonical.prepare_batch``), else None: never builds them."""
    return _BUILT.get((nfkc, casefold, punctuation_to_space, fold))


def _build(nfkc: bool, casefold: bool, punctuation_to_space: bool, fold: bool) -> UnicodeTables:
    chars = _all_chars()
    forms = _per_char(chars, "NFKC") if nfkc else list(chars)
    if casefold:
        forms = "\0".join(forms).casefold().split("\0")
    cps = np.fromiter(map(ord, chars), np.int64, len(chars))
    changed = np.fromiter(map(str.__ne__, chars, forms), bool, len(chars))
    # one regex pass over the characters that are unchanged so far finds those that become
    # spaces (entry 0); changed ones (~6k) go through the steps one by one
    same = "".join(f if f == c else "a" for c, f in zip(chars, forms))
    spaces = np.zeros(len(chars), dtype=bool)
    for m in (NON_WORD if punctuation_to_space else _SPACES).finditer(same):
        spaces[m.start():m.end()] = True
    umap = np.full(TABLE_SIZE, -1, dtype=np.int32)
    umap[cps[spaces]] = 0
    out: list[bytes] = [b" "]
    grows: list[int] = []
    for i in np.flatnonzero(changed).tolist():
        f = forms[i]
        umap[cps[i]] = len(out)
        out.append(_SPACES.sub(" ", NON_WORD.sub(" ", f) if punctuation_to_space else f).encode("utf-8"))
        if len(out[-1]) > len(chars[i].encode("utf-8")):
            grows.append(int(cps[i]))
    repl_off = np.zeros(len(out) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in out], out=repl_off[1:])
    repl = np.frombuffer(b"".join(out), dtype=np.uint8).copy()
    first, last = unsafe_flags() if nfkc else (np.zeros(TABLE_SIZE, np.uint8), np.zeros(TABLE_SIZE, np.uint8))
    # the kernel writes canonical text into a buffer the size of the raw text: a character
    # whose canonical form is longer ("½" -> "1 2", "İ" -> "i̇", "㍻" -> "平成") sends its text
    # through Python, which canonicalises before the buffer is sized
    first = first.copy()
    first[grows] = PYTHON
    if fold and nfkc:
        # the fold runs before the kernel's NFKC and the reference folds after it: a character
        # that NFKC turns into Han or kana (compatibility ideographs, Kangxi radicals, "㍻",
        # circled katakana) would be folded, or make "auto" skip, differently
        makes = [ord(c) for c, f in zip(chars, forms) if f != c and (HAN.search(f) or KANA.search(f))]
        first[makes] = PYTHON
    fold_bits = _fold_bits() if fold else np.zeros(TABLE_SIZE, dtype=np.uint8)
    for a in (umap, repl_off, repl, first, last, fold_bits):
        a.setflags(write=False)
    return UnicodeTables(umap, repl_off, repl, first, last, fold_bits)


def _fold_bits() -> np.ndarray:
    bits = np.zeros(TABLE_SIZE, dtype=np.uint8)
    bits[[ord(c) for c in traditional_chars()]] = 1
    for lo, hi in KANA_RANGES:
        bits[lo:hi + 1] |= 2
    return bits


@lru_cache(maxsize=1)
def unsafe_flags() -> tuple[np.ndarray, np.ndarray]:
    """``(first_ccc, last_ccc)`` of NFKC: a text is unsafe for per-character NFKC when one of
    its characters may compose with the one before it (``first_ccc == PYTHON``), or when
    ``last_ccc`` of one character is greater than ``first_ccc`` of the next and that is not 0
    (canonical reordering)."""
    chars = _all_chars()
    nfkd = _per_char(chars, "NFKD")
    nfd = _per_char(chars, "NFD")
    composes = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul vowel, trailing jamo
    for c, d in zip(chars, nfd):
        # a primary composite: its canonical decomposition's second character composes
        if len(d) == 2 and d != c and unicodedata.normalize("NFC", d) == c:
            composes.add(ord(d[1]))
    first = np.zeros(TABLE_SIZE, dtype=np.uint8)
    last = np.zeros(TABLE_SIZE, dtype=np.uint8)
    cps = np.fromiter(map(ord, chars), np.int64, len(chars))
    first[cps] = np.fromiter((unicodedata.combining(d[0]) for d in nfkd), np.uint8, len(chars))
    last[cps] = np.fromiter((unicodedata.combining(d[-1]) for d in nfkd), np.uint8, len(chars))
    starts = np.fromiter((ord(d[0]) for d in nfkd), np.int64, len(chars))
    first[cps[np.isin(starts, np.fromiter(composes, np.int64, len(composes)))]] = PYTHON
    first.setflags(write=False)
    last.setflags(write=False)
    return first, last
