"""Harder copy kinds and near-miss negatives for ``streamdedup bench accuracy --suite hard``.

Every generator is deterministic given its ``random.Random`` and returns the new text, or None when
the story does not suit the edit (the harness then picks another story). Copies:

- :func:`char_noise`: OCR / garbled transmission, an exact number of single-character
  substitutions, drops and insertions (``round(rate * len(text))``), so the Levenshtein distance
  to the original is that count (rarely one or two less, when edits cancel);
- :func:`teaser`: the headline plus the first one or two sentences of a long story;
- :func:`compound`: new headline, wire header and footer, a few typos, one sentence replaced;
- :func:`hyphen_wrapped`, :func:`html_entities`, :func:`curly_quotes`: the same story as a
  print/OCR column, an HTML-escaped plain-text feed and a typographic feed.

Near-miss negatives (new stories that must stay unique), each built from a held-out story and,
for the first two, an earlier story of the stream: :func:`quoting_paragraph`,
:func:`background_lead`; the shared-footer negatives reuse :data:`.synthetic.LONG_FOOTERS`.
"""

from __future__ import annotations

import random
import re

from streamdedup.bench.synthetic import _paragraphs

#: OCR confusions (seen -> read as); other characters get a random letter of their class
OCR_CONFUSIONS = {
    "l": "1I", "1": "lI", "I": "l1", "O": "0Q", "0": "OD", "o": "0ea", "e": "co", "c": "eo", "a": "oe",
    "m": "n", "n": "mr", "r": "n", "h": "b", "b": "h6", "S": "5", "5": "S", "B": "8", "8": "B3",
    "t": "f", "f": "t", "i": "l!", "u": "v", "v": "u", ",": ".", ".": ",", "g": "q9", "q": "g",
}
LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"

_ABBREV = {"u.s", "u.k", "inc", "co", "corp", "ltd", "mr", "mrs", "dr", "st", "no", "jan", "feb", "mar", "apr",
           "aug", "sept", "sep", "oct", "nov", "dec", "vs", "e.g", "i.e", "gov", "sen", "rep", "gen", "col", "lt"}
_SENT_END = re.compile(r"[.!?][\"')]?\s+(?=[\"'(]?[A-Z0-9])")
#: Reuters-21578 bodies end with "Reuter" and a control character
_TRAILER = re.compile(r"\s*\bREUTER\b\s*\x03?\s*$|\s*\x03\s*$", re.IGNORECASE)


def clean_body(body: str) -> str:
    """The body without the corpus' trailing ``Reuter`` + ETX."""
    return _TRAILER.sub("", body).rstrip()


def sentences(body: str) -> list[str]:
    """Sentences of a wire body, whitespace collapsed; a period after a common abbreviation
    (``U.S.``, ``Inc.``, ``Jan.``) or a single initial does not end a sentence."""
    flat = " ".join(clean_body(body).split())
    out, start = [], 0
    for m in _SENT_END.finditer(flat):
        last = flat[start:m.start()].rsplit(" ", 1)[-1].lower()
        if last.rstrip(".") in _ABBREV or (len(last) == 1 and last.isalpha()):
            continue
        out.append(flat[start:m.end()].strip())
        start = m.end()
    if flat[start:].strip():
        out.append(flat[start:].strip())
    return out


def _substitute(ch: str, rng: random.Random) -> str:
    if ch in OCR_CONFUSIONS and rng.random() < 0.6:
        return rng.choice(OCR_CONFUSIONS[ch])
    pool = DIGITS if ch.isdigit() else UPPER if ch.isupper() else LOWER
    new = rng.choice(pool)
    while new == ch:
        new = rng.choice(pool)
    return new


def char_noise(text: str, rate: float, rng: random.Random) -> str:
    """Exactly ``round(rate * len(text))`` single-character edits (at least one), each a
    substitution, a drop or an insertion with equal chance, at distinct positions.

    Positions exclude the second and later characters of whitespace runs (the corpus indents
    paragraphs with runs of spaces): an edit there would change nothing after canonicalisation,
    and the rate is meant as the share of characters that a reader sees damaged.
    """
    eligible = [i for i, ch in enumerate(text) if not (ch.isspace() and i and text[i - 1].isspace()) and ch != "\x03"]
    n = min(len(eligible), max(1, round(rate * len(text))))
    chars = list(text)
    for pos in sorted(rng.sample(eligible, n), reverse=True):
        op = rng.randrange(3)
        ch = chars[pos]
        if op == 0:
            chars[pos] = _substitute(ch, rng)
        elif op == 1:
            del chars[pos]
        else:
            chars.insert(pos + 1, ch if rng.random() < 0.3 else rng.choice(LOWER))
    return "".join(chars)


def teaser(title: str, body: str, n_sentences: int, words: tuple[int, int] = (30, 60)) -> str | None:
    """Headline + the first ``n_sentences`` sentences, if that is ``words`` words long (None if not)."""
    sents = sentences(body)
    if len(sents) <= n_sentences:
        return None
    text = f"{title}\n" + " ".join(sents[:n_sentences])
    return text if words[0] <= len(text.split()) <= words[1] else None


CITIES = ["NEW YORK", "LONDON", "TOKYO", "WASHINGTON", "CHICAGO", "FRANKFURT", "PARIS", "SYDNEY", "TORONTO", "HONG KONG"]
MONTHS = ["Jan", "Feb", "March", "April", "May", "June", "July", "Aug", "Sept", "Oct", "Nov", "Dec"]
NAMES = ["Anna Keller", "James Okafor", "Li Wei", "Maria Santos", "Peter Lund", "Sara Haddad", "Tom Becker", "Yuki Mori"]


def compound(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A re-issued copy: new headline, slug and dateline, reporter footer, 2-6 typos, one sentence
    (not the lead) swapped for a donor sentence of similar length.

    Needs six sentences (None otherwise): in a shorter item the new header, footer and one
    replaced sentence are a third of the text or more, and the result is a different item.
    """
    sents = sentences(body)
    donor_sents = sentences(donor)
    if len(sents) < 6 or not donor_sents:
        return None
    idx = rng.randrange(1, len(sents))
    sents[idx] = min(rng.sample(donor_sents, min(5, len(donor_sents))), key=lambda d: abs(len(d) - len(sents[idx])))
    lead = sents[0].split()
    headline = rng.choice(["UPDATE 2-", "", "RPT-", "CORRECTED-"]) + " ".join(lead[:rng.randint(6, 10)]).upper()
    slug = f"BC-{title.split()[0].upper() if title.split() else 'WIRE'}-{rng.choice(['RESULTS', 'BUSINESS', 'MARKETS'])} " \
           f"{rng.randint(100, 2359):04d} {rng.randint(1, 28):02d}-{rng.randint(1, 12):02d}"
    dateline = f"{rng.choice(CITIES)}, {rng.choice(MONTHS)} {rng.randint(1, 28)} (Wire) - "
    footer = (f"(Reporting by {rng.choice(NAMES)}; Editing by {rng.choice(NAMES)})\n"
              f"(({rng.choice(['newsroom', 'desk', 'markets'])}@wire.example; +44 20 7542 {rng.randint(1000, 9999)}))")
    text = f"{slug}\n{headline}\n{dateline}" + " ".join(sents) + f"\n{footer}"
    n_typos = rng.randint(2, 6)
    return char_noise(text, n_typos / len(text), rng)


def _hyphen_split(word: str, room: int, rng: random.Random) -> int:
    """Where to break ``word`` so that its head plus "-" fits in ``room`` (0: not at all); only
    words of six or more letters (trailing punctuation aside), keeping at least two letters
    before the break and three after."""
    core = word.rstrip(".,;:!?\"')")
    if len(core) < 6 or not core.isalpha() or room < 3:
        return 0
    hi = min(len(core) - 3, room - 1)
    if hi < 2:
        return 0
    vowels = [k for k in range(2, hi + 1) if core[k - 1] in "aeiouyAEIOUY"]
    return rng.choice(vowels) if vowels else rng.randint(2, hi)


def hyphen_wrapped(title: str, body: str, rng: random.Random) -> str:
    """A narrow column (34-60 characters) in which a long word at a line end is hyphenated, as
    printed copy that has been scanned or a fixed-width feed that wraps words."""
    width = rng.randint(34, 60)
    out = [title]
    for para in _paragraphs(clean_body(body)):
        line = ""
        for word in para.split():
            if len(line) + 1 + len(word) <= width or not line:
                line = f"{line} {word}" if line else word
                continue
            cut = _hyphen_split(word, width - len(line) - 1, rng)
            if cut:
                out.append(f"{line} {word[:cut]}-")
                line = word[cut:]
            else:
                out.append(line)
                line = word
        out.append(line)
        out.append("")
    return "\n".join(out).rstrip()


#: one style per copy, as one feed would escape: (open, close) quotes and the apostrophe
_ENTITY_STYLES = (("&quot;", "&quot;", "&#39;"), ("&#8220;", "&#8221;", "&#8217;"), ("&ldquo;", "&rdquo;", "&rsquo;"))


def _alternating(text: str, char: str, open_: str, close: str) -> str:
    opened = [False]

    def swap(_m: re.Match) -> str:
        opened[0] = not opened[0]
        return open_ if opened[0] else close

    return re.sub(re.escape(char), swap, text)


def html_entities(title: str, body: str, rng: random.Random) -> str | None:
    """A plain-text feed that escaped its text for HTML (no tags): ``&``, ``<``, ``>``, quotes,
    apostrophes as entities, and ``&nbsp;`` between a number and its unit. None when fewer than
    three entities result (the copy would be nearly the original)."""
    open_, close, apos = rng.choice(_ENTITY_STYLES)
    text = f"{title}\n{clean_body(body)}"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _alternating(text, '"', open_, close).replace("'", apos)
    text = re.sub(r"(?<=\d) (?=(?:mln|billion|pct|dlrs|cts|stg|yen|tonnes)\b)", "&nbsp;", text)
    return text if text.count("&") >= 3 else None


def curly_quotes(title: str, body: str, rng: random.Random) -> str | None:
    """Typographic punctuation: curly double and single quotes, em dashes, ellipses and no-break
    spaces after numbers. None when the story has no quote or apostrophe to curl."""
    text = f"{title}\n{clean_body(body)}"
    if '"' not in text and "'" not in text:
        return None
    text = _alternating(text, '"', "\u201c", "\u201d")
    text = re.sub(r"(?<!\w)'", "\u2018", text).replace("'", "\u2019")
    text = text.replace(" -- ", " \u2014 ").replace("...", "\u2026")
    return re.sub(r"(?<=\d) (?=[a-z])", lambda m: "\u00a0" if rng.random() < 0.5 else " ", text)


def _background(body: str, rng: random.Random, words: tuple[int, int] = (25, 80)) -> str | None:
    """A paragraph other than the lead, ``words`` words long (None if the story has none)."""
    paras = _paragraphs(clean_body(body))[1:]
    fits = [" ".join(p.split()) for p in paras if words[0] <= len(p.split()) <= words[1]]
    return rng.choice(fits) if fits else None


def quoting_paragraph(title: str, body: str, earlier_body: str, rng: random.Random) -> str | None:
    """A new story that quotes one paragraph of an earlier story after its own lead paragraph."""
    quote = _background(earlier_body, rng)
    paras = _paragraphs(clean_body(body))
    if quote is None or len(paras) < 2:
        return None
    intro = rng.choice(["In an earlier statement the company said:", "As reported earlier:", "Earlier, officials said"])
    return f"{title}\n{paras[0]}\n    {intro} \"{quote}\"\n    " + "\n    ".join(paras[1:])


def background_lead(title: str, body: str, earlier_body: str, rng: random.Random) -> str | None:
    """A new story that opens with an earlier story's background paragraph, then its own text."""
    para = _background(earlier_body, rng)
    if para is None:
        return None
    return f"{title}\n{para}\n    {clean_body(body)}"
