"""Canonical form of a text (Broder 1997): formatting differences must not matter.

Steps, each switchable in :class:`~streamdedup.config.CanonicalConfig` but the first:

0. Terminal escape sequences go, whole (``ESC [ 5 m``, a window title ``ESC ] 0 ; ... BEL``):
   their parameters would otherwise read as words glued to the next one ("5mblink").
1. HTML: comments and tags become spaces, entities are decoded (``&amp;`` -> ``&``).
2. Unicode NFKC (full-width letters, ligatures, non-breaking spaces fold to their plain forms).
3. Traditional Chinese folds to Simplified (``fold_traditional``; OpenCC's t2s tables):
   ``國務院發表賀詞`` -> ``国务院发表贺词``.
4. Case folding (``str.casefold``: ``Straße`` -> ``strasse``).
5. Punctuation and symbols become spaces (anything that is not a letter, digit or combining mark).
6. Whitespace runs collapse to one space; leading and trailing space is dropped.

Speed: steps 2 and 4-6 run inside the fingerprint kernel: for ASCII by byte rules (NFKC and
casefold are identities there), for other characters one at a time from tables
(:mod:`streamdedup.text.unicode_map`); the fold (3) runs in Python on texts with Han characters,
before the kernel. Only texts where NFKC depends on neighbouring characters go through
:func:`canonicalize` in Python first. Every path produces :func:`canonicalize`'s output
(tested), so a document's canonical form never depends on the batch it arrived in.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from streamdedup._kernels import readonly
from streamdedup._kernels.fingerprint import SCAN_KANA, SCAN_TRADITIONAL, SCAN_UNSAFE, unicode_scan
from streamdedup.config import CanonicalConfig
from streamdedup.text.charclass import KANA, NON_WORD
from streamdedup.text.fold import t2s, traditional_chars
from streamdedup.text.unicode_map import tables

# Wire copy uses "<IBM>", "<DD>" and "<Sumitomo Bank Ltd>" for tickers and company names
# (3,759 of 19,043 Reuters bodies) and those words must stay. So tags are stripped only from a
# text that looks like HTML (a closing tag of a real element, <br> or a comment), and then
# only real element names; script/style elements go with their content, comments go whole.
_HTML_ELEMENTS = (
    "a|abbr|address|article|aside|b|blockquote|body|br|caption|center|cite|code|dd|del|div|dl|dt|"
    "em|figcaption|figure|font|footer|h[1-6]|head|header|hr|html|i|img|ins|li|link|main|mark|meta|"
    "nav|ol|p|pre|q|s|section|small|span|strike|strong|sub|sup|table|tbody|td|tfoot|th|thead|"
    "title|tr|tt|u|ul"
)
_TAG = re.compile(
    r"<!--.*?-->|<(script|style)\b[^>]*>.*?</\1\s*>|</?(?:" + _HTML_ELEMENTS + r")\b[^<>]*>",
    re.IGNORECASE | re.DOTALL,
)
_LOOKS_HTML = re.compile(r"</(?:" + _HTML_ELEMENTS + r")\s*>|<br\s*/?>|<!--", re.IGNORECASE)


_SPACES = re.compile(r"\s+")
#: ECMA-48 escape sequences introduced by ESC: a control sequence (ESC [, parameter and
#: intermediate bytes, a final byte), a string (OSC, DCS, SOS, PM, APC) up to BEL or ST and at
#: most 512 characters long (an unterminated one loses only its introducer), any other escape
_ESCAPES = re.compile(r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|\x1b[\]PX^_][^\x07\x1b]{0,512}(?:\x07|\x1b\\)"
                      r"|\x1b[\x20-\x2f]*[\x30-\x7e]?")


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences.

    >>> strip_escapes("red \x1b[1;31malert\x1b[0m over")
    'red alert over'
    """
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def _might_be_html(text: str) -> bool:
    """Cheap substring tests that every text :data:`_LOOKS_HTML` matches passes.

    Most texts with a "<" are wire copy with tickers ("<IBM>"), which the regex (alternation
    over element names, case-insensitive) scanned in ~3 us per story; these C-level substring
    searches rule them out in a fraction of that.
    """
    return "</" in text or "<!--" in text or "<br" in text or "<BR" in text or "<Br" in text or "<bR" in text


def _strip_html(text: str) -> str:
    if "<" in text and _might_be_html(text) and _LOOKS_HTML.search(text):
        text = _TAG.sub(" ", text)
    if "&" in text:
        text = html.unescape(text)
    return text


def canonicalize(text: str, cfg: CanonicalConfig = CanonicalConfig()) -> str:
    """Canonical form of one text, in pure Python (also the reference for the ASCII kernel).

    >>> canonicalize("<p>Hello,&nbsp;WORLD!</p>  Caf\\u00e9")
    'hello world café'
    """
    text = strip_escapes(text)
    if cfg.strip_html:
        text = _strip_html(text)
    return _canonical_unicode(text, cfg)


def _canonical_unicode(text: str, cfg: CanonicalConfig) -> str:
    if cfg.nfkc and not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    # After NFKC: the 1,002 CJK compatibility ideographs and full-width forms reach the table in
    # their unified form, one spelling per character. Before casefold and punctuation: OpenCC's
    # phrases are matched on the running text as written, punctuation included; the fold's
    # output is Han only (tested), so the steps after it treat folded and unfolded text alike.
    if cfg.fold_traditional != "off" and _should_fold(text, cfg.fold_traditional):
        text = t2s(cfg).convert(text)
    if cfg.casefold:
        text = text.casefold()
    if cfg.punctuation_to_space:
        text = NON_WORD.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def _should_fold(text: str, mode: str) -> bool:
    """Whether ``fold_traditional`` (``auto`` or ``on``) folds this text.

    ``auto`` leaves Japanese (a text with kana) alone: t2s turns about 6% of a Japanese text's
    kanji into Simplified Chinese forms (護 -> 护, 間 -> 间), does not unify kyujitai with
    shinjitai (經 -> 经 but 経 stays), and Japanese wire copy is not republished in another
    script. Measured on ``bench accuracy --suite ja`` (44 copies, 8 near misses): recall 0.909
    with ``auto`` (= ``off``), 0.932 with ``on``; before script-aware tokens 0.455 vs 0.432. One
    copy either way, in opposite directions (changed characters reshuffle the MinHash): no
    gain to buy with the cost, and no near miss flagged in any of them.

    Only a text with a character that t2s changes on its own is folded (:func:`_traditional`):
    Simplified text, all of mainland wire copy, skips the converter (People's Daily: 43 -> 60
    MB/s fingerprinted). A text whose only Traditional trait is a phrase of characters that are
    Simplified on their own ("瞭解", folded to "了解" as a phrase) stays as it is.
    """
    if text.isascii() or traditional_chars().isdisjoint(text):
        return False
    return _folds_traditional(mode, KANA.search(text) is not None)


def _folds_traditional(mode: str, kana: bool) -> bool:
    """Whether a text with a Traditional character is folded: the one place of the rule, for
    :func:`_should_fold` (from the text) and :func:`prepare_batch` (from the kernel's scan)."""
    return mode == "on" or not kana


def check_fold(cfg: CanonicalConfig) -> None:
    """Raise :class:`~streamdedup.errors.ConfigError` naming the setting unless the fold this
    config asks for can run (call it at start-up, before the first record is read)."""
    if cfg.fold_traditional != "off":
        t2s(cfg)


@dataclass(frozen=True)
class PreparedTexts:
    """Texts already in the kernel's input form (what ``canonical.prepare_batch`` returns):
    UTF-8 in one buffer, text i at ``raw[offsets[i]:offsets[i + 1]]``, HTML and non-ASCII
    already handled. File mode's JSON fast path produces them without a Python string."""

    raw: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1


def prepare_batch(texts: list[str], cfg: CanonicalConfig) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of a batch for the kernel, which finishes the canonical form.

    HTML is stripped here, Traditional Chinese folded (``fold_traditional``). The kernel
    canonicalises ASCII by its byte rules and other characters one by one from
    ``unicode_map``'s tables; the few texts where NFKC depends on neighbouring characters
    (decomposed accents, Hangul jamo, combining marks out of order), a character's canonical
    form is longer than it, or NFKC makes Han or kana of a character while the fold is on
    (``_kernels.unicode_scan``) are canonicalised here instead, and the kernel's tables map
    canonical text to itself. Every path equals :func:`canonicalize` (tested). Returns one
    buffer and ``n + 1`` offsets. The common case, an all-ASCII batch without markup, costs
    one join and one encode.
    """
    joined = "".join(texts)
    if "\x1b" in joined:
        texts = [strip_escapes(t) for t in texts]
        joined = "".join(texts)
    ascii_ = joined.isascii()
    if cfg.strip_html and ("<" in joined or "&" in joined):
        texts = [_strip_html(t) if ("<" in t or "&" in t) else t for t in texts]
        joined = "".join(texts)
        ascii_ = joined.isascii()  # entities can decode to non-ASCII ("&nbsp;")
    if ascii_:
        return _buffer(joined.encode("utf-8"), [len(t) for t in texts])
    parts = [t.encode("utf-8") for t in texts]
    raw, offsets = _buffer(b"".join(parts), [len(p) for p in parts])
    fold = cfg.fold_traditional
    u = tables(cfg.nfkc, cfg.casefold, cfg.punctuation_to_space, fold != "off")
    flags = np.zeros(len(texts), dtype=np.uint8)
    unicode_scan(readonly(raw), readonly(offsets), u.first_ccc, u.last_ccc, u.fold_bits, flags)
    redo = np.flatnonzero(flags & (SCAN_UNSAFE | SCAN_TRADITIONAL)).tolist()
    for i in redo:
        if flags[i] & SCAN_UNSAFE:
            parts[i] = _canonical_unicode(texts[i], cfg).encode("utf-8")
        elif _folds_traditional(fold, bool(flags[i] & SCAN_KANA)):
            parts[i] = t2s(cfg).convert(texts[i]).encode("utf-8")
    if redo:
        raw, offsets = _buffer(b"".join(parts), [len(p) for p in parts])
    return raw, offsets


def _buffer(data: bytes, lengths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    return np.frombuffer(data, dtype=np.uint8), offsets
