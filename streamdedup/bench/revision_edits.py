"""Revisions and cosmetic copies for ``streamdedup bench accuracy --suite revisions``.

Every generator takes a story's title and body, a donor story's body and a seeded
``random.Random``, and returns the new text, or None when the story does not suit the edit (the
harness then picks another story). Revisions change what the story says; cosmetic copies change
how it looks. Both are placed after their source in the stream, so the engine links most of them
to it; :func:`streamdedup.engine.revisions.detect` must then tell them apart.
"""

from __future__ import annotations

import random
import re

from streamdedup.bench import hard_edits as H
from streamdedup.bench import synthetic as S

#: a figure in wire copy: "600", "2.5", "1,234" (not inside a word such as "4th" or "3b2")
_FIGURE = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?![\w])")
_AUX = re.compile(r"\b(is|was|will|would|has|had|did|does|could|can|should|are|were|may)\b(?! not\b)")
_NOT = re.compile(r" not\b")
ANTONYMS = (("rose", "fell"), ("higher", "lower"), ("increase", "decrease"), ("profit", "loss"), ("up", "down"),
            ("includes", "excludes"), ("above", "below"), ("gain", "loss"), ("raised", "cut"), ("approved", "rejected"))
SURNAMES = ("Okafor", "Lindqvist", "Haddad", "Moreau", "Takahashi", "Kowalski", "Ferreira", "Nakamura", "Brennan")
_CAPITAL = re.compile(r"(?<=[a-z,] )[A-Z][a-z]{3,}\b")


def _figure(match: re.Match, rng: random.Random) -> str:
    """Another value for a figure: one digit changed, or the value scaled."""
    old = match.group(0)
    digits = [i for i, c in enumerate(old) if c.isdigit()]
    if rng.random() < 0.5:
        i = rng.choice(digits)
        new = old[:i] + rng.choice([d for d in "0123456789" if d != old[i] and (i or d != "0")]) + old[i + 1:]
        return new
    value = float(old.replace(",", ""))
    scaled = value * rng.choice((0.5, 0.8, 1.25, 1.5, 2, 3))
    return f"{scaled:.1f}" if "." in old else str(max(1, round(scaled)) + (round(scaled) == value))


def _body_sub(body: str, pattern: re.Pattern, make, rng: random.Random) -> str | None:
    """``body`` with one random match of ``pattern`` replaced by ``make(match)`` (None if none)."""
    matches = list(pattern.finditer(body))
    if not matches:
        return None
    m = rng.choice(matches)
    new = make(m)
    return None if new == m.group(0) else body[:m.start()] + new + body[m.end():]


def number_changed(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    body = H.clean_body(body)
    new = _body_sub(body, _FIGURE, lambda m: _figure(m, rng), rng)
    return None if new is None else f"{title}\n{new}"


def negation_flipped(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """"not" added after an auxiliary, an existing "not" dropped, or a word swapped for its antonym."""
    body = H.clean_body(body)
    options = []
    if _AUX.search(body):
        options.append(lambda: _body_sub(body, _AUX, lambda m: m.group(0) + " not", rng))
    if _NOT.search(body):
        options.append(lambda: _body_sub(body, _NOT, lambda m: "", rng))
    pairs = [(a, b) for x, y in ANTONYMS for a, b in ((x, y), (y, x)) if re.search(rf"\b{a}\b", body)]
    if pairs:
        a, b = rng.choice(pairs)
        options.append(lambda: _body_sub(body, re.compile(rf"\b{a}\b"), lambda m: b, rng))
    if not options:
        return None
    new = rng.choice(options)()
    return None if new is None else f"{title}\n{new}"


def name_changed(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """One capitalised word inside a sentence (a name) becomes another name."""
    body = H.clean_body(body)
    fresh = [s for s in SURNAMES if s.lower() not in body.lower()]
    new = _body_sub(body, _CAPITAL, lambda m: rng.choice(fresh), rng)
    return None if new is None else f"{title}\n{new}"


def corrected_one_word(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A CORRECTED slug on the headline and one word of the body swapped for a donor's word."""
    words = [w for w in re.findall(r"\b[a-z]{4,}\b", donor) if w not in body]
    body = H.clean_body(body)
    if not words or "CORRECTED" in title:
        return None
    new = _body_sub(body, re.compile(r"\b[a-z]{4,}\b"), lambda m: rng.choice(words), rng)
    slug = rng.choice(["CORRECTED-", "(CORRECTED) - ", "CORRECTED - "])
    return None if new is None else f"{slug}{title}\n{new}"


def update_paragraph(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A new paragraph with new figures (a donor sentence of 8-40 words carrying a number the
    story lacks), after the lead or at the end: a live update."""
    fits = [s for s in H.sentences(donor) if 8 <= len(s.split()) <= 40
            and any(m.group(0) not in body for m in _FIGURE.finditer(s))]
    paras = S._paragraphs(H.clean_body(body))
    if not fits:
        return None
    at = rng.choice((1, len(paras)))
    paras.insert(at, rng.choice(fits))
    return f"{title}\n" + "\n    ".join(paras)


#: footers a story is resent under (credits and a contact line; their names and numbers are no news)
def _footer(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(S.BOILERPLATES)
    return (f"(Reporting by {rng.choice(H.NAMES)}; Editing by {rng.choice(H.NAMES)})\n"
            f"(({rng.choice(['newsroom', 'desk', 'markets'])}@wire.example; +44 20 7542 {rng.randint(1000, 9999)}))")


def footer(title: str, body: str, donor: str, rng: random.Random) -> str:
    return f"{title}\n{H.clean_body(body)}\n{_footer(rng)}"


def retitled(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A new headline made of the lead's first words (no new facts), without wire markers."""
    sents = H.sentences(body)
    if not sents:
        return None
    lead = sents[0].split()
    return " ".join(lead[:rng.randint(5, 9)]).upper().rstrip(".,") + "\n" + H.clean_body(body)


_MAGNITUDE = re.compile(r"\b(mln|bln|billion|million|thousand)\b")
_OTHER_MAGNITUDE = {"mln": "bln", "bln": "mln", "billion": "million", "million": "billion", "thousand": "mln"}
_UNIT = re.compile(r"\b(mln|pct|dlrs|cts)\b")
_RESPELT = {"mln": "million", "pct": "percent", "dlrs": "dollars", "cts": "cents"}
_FIGURE_UNIT = re.compile(r"(?<![\w.,])(\d{2,})(?:[.,]\d+)? (mln|bln|pct|dlrs|billion|million)\b")


def magnitude_changed(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A figure's magnitude corrected ("125 mln" -> "125 bln"): a factor of 1,000, one letter."""
    body = H.clean_body(body)
    new = _body_sub(body, _MAGNITUDE, lambda m: _OTHER_MAGNITUDE[m.group(1)], rng)
    return None if new is None else f"{title}\n{new}"


def figure_at_teaser_end(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A shortened copy that ends in a changed figure: the story up to a figure and its unit,
    the figure's last digit dropped ("... was 125 mln dlrs and ..." -> "... was 12 mln")."""
    body = H.clean_body(body)
    matches = [m for m in _FIGURE_UNIT.finditer(body) if m.end() < len(body) - 40]
    if not matches:
        return None
    m = rng.choice(matches)
    return f"{title}\n{body[:m.start(1)]}{m.group(1)[:-1]} {m.group(2)}"


def unit_respelt(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """Units written out by another desk's style ("mln" -> "million", "pct" -> "percent"), the
    story otherwise as sent (its sign-off kept)."""
    if not _UNIT.search(body):
        return None
    return f"{title}\n{_UNIT.sub(lambda m: _RESPELT[m.group(1)], body)}"


def terminal_junk(title: str, body: str, donor: str, rng: random.Random) -> str:
    """Copy that passed through a terminal: escape sequences around a few words."""
    words = H.clean_body(body).split(" ")
    for _ in range(3):
        k = rng.randrange(len(words))
        words[k] = rng.choice(("\x1b[1m", "\x1b[5m", "\x1b[31m")) + words[k] + "\x1b[0m"
    return f"{title}\n" + " ".join(words)


#: kind -> generator; revisions first, then cosmetic copies
REVISION_KINDS = {
    "number changed": number_changed,
    "negation flipped": negation_flipped,
    "name changed": name_changed,
    "corrected slug + one word": corrected_one_word,
    "update paragraph with figures": update_paragraph,
    "magnitude changed": magnitude_changed,
    "figure changed at a teaser's end": figure_at_teaser_end,
}
COSMETIC_KINDS = {
    "typos": S.typos,
    "noise 1%": lambda t, b, d, rng: H.char_noise(f"{t}\n{b}", 0.01, rng),
    "noise 3%": lambda t, b, d, rng: H.char_noise(f"{t}\n{b}", 0.03, rng),
    "reformatted": S.reformatted,
    "hyphenated wraps": lambda t, b, d, rng: H.hyphen_wrapped(t, b, rng),
    "footer": footer,
    "retitled": retitled,
    "teaser": S.teaser,
    "teaser 1 sentence": lambda t, b, d, rng: H.teaser(t, b, 1),
    "units respelt": unit_respelt,
    "terminal junk": terminal_junk,
}

_FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


#: what follows a figure of an agency line's date: 月 / 日, up to a few more characters, then 电 or 讯
_DATELINE = re.compile(r"[月日][^。，\n]{0,4}?[电讯]")


def zh_magnitude_changed(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A People's Daily figure's magnitude corrected: 万 (10^4) <-> 亿 (10^8) after a number."""
    matches = list(re.finditer(r"(?<=[\d０-９])[万亿]", body))
    if not matches:
        return None
    m = rng.choice(matches)
    return f"{title}\n{body[:m.start()]}{'亿' if m.group(0) == '万' else '万'}{body[m.end():]}"


def zh_figures_changed(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A People's Daily story with one figure changed (full-width digits stay full-width); not the
    day or month of its agency line ("新华社北京1月5日电": when the dispatch was filed, which a
    resend under another agency line changes too, and the engine reads as a dateline)."""
    plain = body.translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    runs = [m for m in re.finditer(r"\d+", plain) if not _DATELINE.match(plain, m.end())]
    if not runs:
        return None
    m = rng.choice(runs)
    new = _figure(m, rng)
    if new == m.group(0):
        return None
    if not body[m.start()].isascii():
        new = new.translate(_FULL_WIDTH)
    return f"{title}\n{body[:m.start()]}{new}{body[m.end():]}"
