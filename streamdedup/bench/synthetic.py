"""Synthetic wire-story variants with known sources, and hard negatives, for the accuracy harness.

Each edit kind imitates something a news pipeline really receives. Every function takes the
source story (title, body) and a seeded ``random.Random`` and returns the variant's text, or
None when the story does not suit the edit (the harness then picks another source).
"""

from __future__ import annotations

import random
import re

from streamdedup.bench.edits import scattered

BOILERPLATES = [
    "(c) Copyright Wire Services Ltd. All rights reserved. Republication or redistribution of this "
    "content, including by framing or similar means, is expressly prohibited without prior written consent.",
    "Sign up for our morning briefing to get the day's top business stories delivered to your inbox. "
    "Follow us for breaking news alerts and market updates throughout the trading day.",
    "Editing by the markets desk. For corrections or comments on this story contact the newsroom "
    "editors; all quotes are delayed by at least fifteen minutes unless otherwise indicated.",
]

#: long footers (300-600 characters) shared by *different* stories: the hard negatives
LONG_FOOTERS = [
    "DISCLAIMER: The information contained in this report is provided for general information purposes "
    "only and does not constitute investment advice, an offer or a solicitation to buy or sell any security. "
    "Prices and figures are indicative and may have changed since publication. Neither the publisher nor its "
    "data providers accept any liability for losses arising from the use of this information. Past performance "
    "is not a guide to future results. Readers should consult an independent financial adviser before making "
    "any investment decision. Distribution of this report in certain jurisdictions may be restricted by law.",
    "ABOUT THIS SERVICE: This bulletin is compiled from exchange filings, company statements and agency "
    "reports by the commodities and energy desk and is distributed to subscribers of the professional "
    "terminal service. Subscribers may forward individual items internally but may not publish them "
    "externally. For subscription enquiries, technical support, historical archives or to report an error "
    "please contact the client services team, available around the clock on all working days of the year.",
    "NOTE TO EDITORS: All figures in this item are provisional and are subject to revision when the final "
    "official statistics are released later in the month. Currency conversions use the prevailing interbank "
    "rate at the time of writing. This item may be updated as further details become available; check the "
    "latest version before publication and attribute all quotes to the original source as indicated above.",
]

_SENT = re.compile(r"(?<=[.!?])\s+")


def _paragraphs(body: str) -> list[str]:
    paras = [p.strip() for p in re.split(r"\n\s{2,}|\n\n", body) if p.strip()]
    return paras if len(paras) > 1 else [s for s in _SENT.split(body) if s.strip()]


def typos(title: str, body: str, donor: str, rng: random.Random) -> str:
    return f"{title}\n{scattered(body, rng.uniform(0.003, 0.01), rng)}"


def retitled(title: str, body: str, donor: str, rng: random.Random) -> str:
    prefix = rng.choice(["UPDATE 1-", "CORRECTED-", "REFILE-", "WRAPUP-", "RPT-"])
    new_title = prefix + (title.title() if rng.random() < 0.5 else title)
    return f"{new_title}\n{body}"


def boilerplate_added(title: str, body: str, donor: str, rng: random.Random) -> str:
    bp = rng.choice(BOILERPLATES)
    return f"{title}\n{bp}\n{body}" if rng.random() < 0.5 else f"{title}\n{body}\n{bp}"


def sentences_replaced(title: str, body: str, donor: str, rng: random.Random) -> str | None:
    """A correction: sentences swapped for donor sentences of similar length, <= ~20% of text.

    Needs at least five sentences (None otherwise): swapping one of two sentences for an
    unrelated one makes a new story, not a corrected copy.
    """
    sents = [s for s in _SENT.split(body) if s.strip()]
    if len(sents) < 5:
        return None
    donor_sents = [s for s in _SENT.split(donor) if s.strip()] or ["No further details were given."]
    budget = 0.2 * len(body)
    order = rng.sample(range(len(sents)), len(sents))
    replaced = 0.0
    for idx in order[: max(1, len(sents) // 5)]:
        if replaced + len(sents[idx]) > budget and replaced > 0:
            break
        target = len(sents[idx])
        sents[idx] = min(rng.sample(donor_sents, min(5, len(donor_sents))), key=lambda d: abs(len(d) - target))
        replaced += target
    return f"{title}\n" + " ".join(sents)


def update_appended(title: str, body: str, donor: str, rng: random.Random) -> str:
    extra = " ".join(donor.split()[: max(15, int(len(body.split()) * rng.uniform(0.1, 0.25)))])
    return f"{title}\n{body}\n    UPDATE: {extra}"


def teaser(title: str, body: str, donor: str, rng: random.Random) -> str:
    cut = int(len(body) * rng.uniform(0.5, 0.7))
    return f"{title}\n{body[:cut]}"


def reformatted(title: str, body: str, donor: str, rng: random.Random) -> str:
    paras = _paragraphs(body)
    style = rng.randrange(3)
    if style == 0:
        html = "".join(f"<p>{p.replace('&', '&amp;')}</p>\n" for p in paras)
        return f"<h1>{title}</h1>\n{html}"
    text = f"{title}\n" + "\n\n".join(paras)
    if style == 1:
        text = text.replace('"', "\u201c").replace("'", "\u2019").upper()
    return re.sub(r" ", lambda m: " " * rng.choice((1, 1, 2, 3)), text)


def reordered(title: str, body: str, donor: str, rng: random.Random) -> str:
    paras = _paragraphs(body)
    if len(paras) < 2:
        return f"{title}\n{body}"
    original = list(paras)
    while paras == original:
        rng.shuffle(paras)
    return f"{title}\n" + "\n    ".join(paras)


EDIT_KINDS = {
    "typos": typos,
    "retitled": retitled,
    "boilerplate added": boilerplate_added,
    "sentences replaced": sentences_replaced,
    "update appended": update_appended,
    "truncated teaser": teaser,
    "reformatted": reformatted,
    "paragraphs reordered": reordered,
}


def with_footer(title: str, body: str, footer: str) -> str:
    return f"{title}\n{body}\n{footer}"
