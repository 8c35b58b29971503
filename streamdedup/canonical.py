"""Canonical form of a text (Broder, seed 002): formatting differences must not matter.

Steps, each switchable in :class:`~streamdedup.config.CanonicalConfig`:

1. HTML: comments and tags become spaces, entities are decoded (``&amp;`` -> ``&``).
2. Unicode NFKC (full-width letters, ligatures, non-breaking spaces fold to their plain forms).
3. Case folding (``str.casefold``: ``Straße`` -> ``strasse``).
4. Punctuation and symbols become spaces (anything that is not a letter, digit or combining mark).
5. Whitespace runs collapse to one space; leading and trailing space is dropped.

Speed: for pure-ASCII documents (nearly all wire copy) NFKC and casefold are identities, and
lower-casing plus steps 4-5 run inside the fingerprint kernel. Other documents go through
:func:`canonicalize` in Python first. Both paths produce identical output on ASCII input
(tested), so a document's canonical form never depends on the batch it arrived in.
"""

from __future__ import annotations

import html
import re
import unicodedata

import numpy as np

from ._script_ranges import MARK_RANGES
from .config import CanonicalConfig

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
# "Not a letter or digit", except combining marks: Python's \w leaves out general category M,
# and Thai vowel and tone marks (or Devanagari vowel signs) are part of their words ("ที่" would
# lose two of its three characters)
_MARKS = "".join(f"\\U{lo:08x}-\\U{hi - 1:08x}" for lo, hi in MARK_RANGES)
_NON_WORD = re.compile(rf"(?:[^\w{_MARKS}]|_)+")
_SPACES = re.compile(r"\s+")


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
    if cfg.strip_html:
        text = _strip_html(text)
    return _canonical_unicode(text, cfg)


def _canonical_unicode(text: str, cfg: CanonicalConfig) -> str:
    if cfg.nfkc and not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if cfg.casefold:
        text = text.casefold()
    if cfg.punctuation_to_space:
        text = _NON_WORD.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def prepare_batch(texts: list[str], cfg: CanonicalConfig) -> tuple[np.ndarray, np.ndarray]:
    """Raw UTF-8 bytes of a batch for the kernel, which finishes the canonical form.

    HTML is stripped here, and non-ASCII texts are fully canonicalised here (NFKC and
    casefold need Unicode tables); ASCII texts go as they are, and the kernel's byte rules
    equal :func:`canonicalize` on ASCII (tested). Returns one buffer and ``n + 1`` offsets.
    The common case, an all-ASCII batch without markup, costs one join and one encode.
    """
    joined = "".join(texts)
    ascii_ = joined.isascii()
    if not ascii_ or (cfg.strip_html and ("<" in joined or "&" in joined)):
        parts = []
        for text in texts:
            if cfg.strip_html and ("<" in text or "&" in text):
                text = _strip_html(text)
            if not text.isascii():  # entities can decode to non-ASCII ("&nbsp;")
                text = _canonical_unicode(text, cfg)
            parts.append(text)
        texts = parts
        joined = "".join(parts)
        ascii_ = joined.isascii()
    lengths = [len(t) for t in texts] if ascii_ else [len(t.encode("utf-8")) for t in texts]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    return np.frombuffer(joined.encode("utf-8"), dtype=np.uint8), offsets
