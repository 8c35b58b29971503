"""The edits of the short-copies suite (:mod:`.short_suite`): web pages with a header block,
short copies taken from anywhere in a story, boilerplate blocks, and their near misses.

No outlet's real headers or notices are used: the header block (headline, standfirst, byline,
dateline) is built from the story itself and a few invented names, the boilerplate blocks are
invented, in the length and tone of a wire disclaimer, a newsletter or cookie notice.
"""

from __future__ import annotations

import random

from streamdedup.bench import hard_edits as H
from streamdedup.bench.corpus import Story

DISCLAIMERS = (
    "This article was produced by an automated newswire service and has not been edited by our staff. "
    "The information is provided for general purposes only and does not constitute investment advice. "
    "Readers should consult a qualified adviser before making any financial decision, and the publisher "
    "accepts no liability for any loss arising from reliance on this content in any form whatsoever.",
    "Disclaimer: the views expressed in this report are those of the original source and do not necessarily "
    "reflect the position of this site. Content is syndicated under licence and may be updated without notice. "
    "We make no warranty as to its accuracy or completeness and republication without written permission "
    "of the copyright holder is strictly prohibited under the terms of our syndication agreement.",
)
FOOTERS = (
    "Sign up for our morning newsletter to get the top business stories delivered to your inbox every day, "
    "free of charge. Follow us on social media for live updates.",
    "We use cookies to improve your experience on this site. By continuing to browse you agree to our use "
    "of cookies as set out in our privacy policy and terms of service.",
    "Our Standards: The Trust Principles. Read more about how we report the news and correct our mistakes "
    "on our editorial standards page.",
)
#: standfirst-length lines a site puts under every headline of a section
SECTION_LINES = (
    "Markets, companies and the economy: the stories that matter to investors this week, explained.",
    "Our correspondents on the deals, the numbers and the people behind the world's biggest companies.",
    "The latest from trading floors and central banks, updated through the day by our markets team.",
)
#: words of body of the long stories teasers, excerpts and key points are taken from
LONG_WORDS = (400, 800)
#: words of body of a short story (under boilerplate, and the line-sharing near misses)
SHORT_WORDS = (40, 80)


def paragraphs(sents: list[str]) -> list[str]:
    """Web paragraphs of three sentences (the corpus' own paragraphs are hard-wrapped lines)."""
    return [" ".join(sents[i:i + 3]) for i in range(0, len(sents), 3)]


def web_page(st: Story, rng: random.Random) -> str | None:
    """The story as a web page: headline, a standfirst (a later sentence of the story), a byline
    and a dateline before the body, in paragraphs."""
    sents = H.sentences(st.body)
    if len(sents) < 6:
        return None
    stand = sents[rng.randrange(len(sents) // 2, len(sents))]
    by = f"By {rng.choice(H.NAMES)}, {rng.choice(['Staff Reporter', 'Markets Correspondent', 'Wire Staff'])}"
    date = f"{rng.choice(H.CITIES)}, {rng.choice(H.MONTHS)} {rng.randint(1, 28)} (Wire) -"
    return f"{st.title}\n{stand}\n{by}\n{date} " + "\n".join(paragraphs(sents))


def teaser_after_header(st: Story, rng: random.Random) -> str | None:
    """Headline and the first one or two body sentences (30-60 words): the page's own
    header block (standfirst, byline, dateline) is not in it."""
    sents = H.sentences(st.body)
    text = f"{st.title}\n" + " ".join(sents[:rng.choice((1, 2))])
    return text if 30 <= len(text.split()) <= 60 else None


def mid_excerpt(st: Story, rng: random.Random) -> str | None:
    """One or two paragraphs from the middle (30-150 words), not the first."""
    paras = paragraphs(H.sentences(st.body))
    if len(paras) < 5:
        return None
    i = rng.randrange(1, len(paras) - 2)
    text = "\n".join(paras[i:i + rng.choice((1, 2))])
    return text if 30 <= len(text.split()) <= 150 else None


def key_points(st: Story, rng: random.Random) -> str | None:
    """A "Key points" box: three to five sentences from across the story, in order."""
    sents = [s for s in H.sentences(st.body) if 8 <= len(s.split()) <= 40]
    if len(sents) < 8:
        return None
    pick = sorted(rng.sample(range(len(sents)), rng.randint(3, 5)))
    return "Key points:\n" + "\n".join("- " + sents[i] for i in pick)


def very_short_teaser(st: Story, rng: random.Random) -> str | None:
    """The first 20-40 words of headline and lead (a social-media card)."""
    words = (st.title + " " + " ".join(H.sentences(st.body)[:1])).split()
    if len(words) < 20:
        return None
    return " ".join(words[:rng.randint(20, min(40, len(words)))])


def under_block(st: Story, block: str) -> str:
    """A short story with a boilerplate block under it."""
    return f"{st.title}\n{' '.join(H.clean_body(st.body).split())}\n{block}"


def with_line(st: Story, line: str) -> str:
    """A story with a section line under its headline."""
    return f"{st.title}\n{line}\n{H.clean_body(st.body)}"


def round_up(stories: list[Story]) -> str:
    """A briefing that lists the headline and first sentence of each story."""
    heads = "\n".join(f"- {s.title}: " + (H.sentences(s.body) or [""])[0] for s in stories)
    return f"Morning briefing\nThe stories you need to know today.\n{heads}"


def zh_features(stories: list[Story], chars: tuple[int, int] = (5000, 7000)) -> list[tuple[list[int], Story]]:
    """Long Chinese features: consecutive People's Daily articles of >= 300 characters joined
    until 5,000-7,000 characters (the corpus has few long articles). Each with the positions of
    the articles it joins."""
    out: list[tuple[list[int], Story]] = []
    i = 0
    while i < len(stories):
        if len(stories[i].body) < 300:
            i += 1
            continue
        parts, body = [i], stories[i].body
        j = i + 1
        while len(body) < chars[0] and j < len(stories):
            body += "\n" + stories[j].body
            parts.append(j)
            j += 1
        if chars[0] <= len(body) <= chars[1]:
            out.append((parts, Story(f"{stories[i].id}-feature", None, stories[i].title, body)))
        i = j
    return out


def zh_short_teaser(st: Story, rng: random.Random) -> str:
    """The first 76-127 characters of a feature's body (a teaser without its headline)."""
    return st.body.replace("\n", "")[:rng.randint(76, 127)]
