"""The revision test: revisions of a story are told from cosmetic copies of it."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from streamdedup.bench import revision_edits as E
from streamdedup.bench.revision_suite import headline_chars
from streamdedup.engine import revision_tokens as T
from streamdedup.engine import revisions as R
from streamdedup.text.canonical import canonicalize
from tests.unit.test_hard_suite import BODY as HARD_BODY
from tests.unit.test_hard_suite import TITLE

# the hard suite's story without its Reuters sign-off
BODY = HARD_BODY.removesuffix(" Reuter\n\x03")
DONOR = ("Shares of Beta Industries fell 2.75 dlrs to 61 dlrs after the company said second quarter sales "
         "would be about 310 mln dlrs, below analysts' forecasts. The company employs 5,600 people.")
SOURCE = f"{TITLE}\n{BODY}"


def judge(earlier: str, later: str) -> R.Revision:
    return R.detect(canonicalize(earlier), canonicalize(later), headline_chars(earlier), headline_chars(later))


def body(text: str) -> str:
    return f"{TITLE}\n{text}"


@pytest.mark.parametrize(("later", "kind", "item"), [
    (body(BODY.replace("400 people", "600 people")), "figures", "400 -> 600"),
    (body(BODY.replace("45.2 mln", "42.5 mln")), "figures", "45 2 -> 42 5"),
    (body(BODY.replace("will build", "will not build")), "negation", "+not"),
    (body(BODY.replace("were above", "were below")), "negation", "above -> below"),
    (SOURCE + "\nIt said it would not sell.", "added", None),
    (body(BODY.replace("John Smith", "John Okafor")), "words", "smith -> okafor"),
    ("CORRECTED-" + SOURCE.replace("Ohio", "Iowa"), "marker", "corrected"),
    ("UPDATE 2-" + SOURCE + "\nIt said it would not sell.", "marker", "update"),
    ("REFILE-" + SOURCE.replace("400 people", "600 people"), "figures", "400 -> 600"),
    (SOURCE + "\nThe company later said it expects 1988 sales of 2.1 billion dlrs.", "figures", None),
])
def test_revisions_are_recognised(later: str, kind: str, item: str | None) -> None:
    r = judge(SOURCE, later)
    assert r.revised and kind in r.kinds
    assert item is None or item in r.changed


@pytest.mark.parametrize("later", [
    SOURCE.replace("industrial", "industrail").replace("expectations", "expectatons"),  # typos
    SOURCE.replace("first quarter net", "first quarter nte").replace("400", "4OO"),  # OCR letters in a number
    SOURCE.replace("Acme Corp said", "Acme Corp sa id"),  # a word split
    SOURCE + "\n(Reporting by Anna Keller; Editing by Tom Becker)\n((newsroom@wire.example; +44 20 7542 1234))",
    SOURCE + "\nFor more news visit our website",  # a web footer
    "UPDATE 1-" + SOURCE,  # a slug alone: the text is the story's
    "UPDATE 3-" + SOURCE,  # its version number is no figure, though the story has no 3
    "REFILE-" + SOURCE.replace("industrial", "industrail"),  # a slug on a copy with a typo
    "ACME PROFIT ROSE 12 PCT IN FIRST QUARTER\n" + BODY,  # retitled from the lead
    SOURCE[:SOURCE.index("The company's shares")],  # a teaser
    SOURCE[:SOURCE.index("The company's shares") + 9],  # a teaser cut inside a word
    "<h1>" + TITLE + "</h1>\n<p>" + BODY.upper() + "</p>",  # reformatted
])
def test_cosmetic_copies_are_not_revisions(later: str) -> None:
    assert not judge(SOURCE, later).revised


def test_a_negation_dropped_before_the_last_words_is_no_teaser() -> None:
    earlier = SOURCE + "\nColombia will not attend.\n Reuter"
    assert judge(earlier, SOURCE + "\nColombia will attend.").kinds == ("negation",)


def test_moved_paragraphs_change_nothing() -> None:
    paras = BODY.split("\n    ")
    assert not judge(SOURCE, body("\n    ".join([paras[0], paras[2], paras[1], *paras[3:]]))).revised


def test_one_digit_in_a_noisy_copy_reads_as_noise() -> None:
    """The stated limit: a typo-sized figure change in a pair with letter typos is noise, unless
    a marker says otherwise."""
    noisy = SOURCE.replace("industrial", "indusrial").replace("400 people", "406 people")
    assert not judge(SOURCE, noisy).revised
    assert judge(SOURCE, "CORRECTED-" + noisy).revised


def test_chinese_figures_and_markers() -> None:
    earlier = "安徽合肥\n元旦来临，安徽省合肥市长江路悬挂起３３００盏大红灯笼，为节日营造出欢乐祥和气氛。"
    assert judge(earlier, earlier.replace("３３００", "３５００")).changed == ("3300 -> 3500",)
    assert judge(earlier, earlier.replace("安徽合肥", "安徽合肥（更正）")).kinds == ("marker",)
    assert not judge(earlier, earlier.replace("红灯笼", "红灯龙")).revised


def test_changed_is_bounded() -> None:
    later = SOURCE
    for n in ("12", "45", "1", "5", "38", "120", "400", "1989"):
        later = later.replace(f" {n} ", f" {n}0 ").replace(f" {n}.", f" {n}0.")
    later += "\n" + DONOR
    r = judge(SOURCE, later)
    assert r.revised and len(r.changed) <= R.MAX_CHANGED
    assert all(len(item) <= R.MAX_ITEM_CHARS for item in r.changed)


def _osa(s: str, t: str) -> int:
    """Optimal string alignment distance, the full table (the reference of the banded one)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(t) + 1)] for i in range(len(s) + 1)]
    for i in range(1, len(s) + 1):
        for j in range(1, len(t) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (s[i - 1] != t[j - 1]))
            if i > 1 and j > 1 and s[i - 1] == t[j - 2] and s[i - 2] == t[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(s)][len(t)]


@settings(max_examples=300, deadline=None)
@given(st.text("abc1 ", max_size=12), st.text("abc1 ", max_size=12), st.integers(0, 4))
def test_banded_distance_matches_the_full_one(s: str, t: str, k: int) -> None:
    assert T.within(s, t, k) == (_osa(s, t) <= k)


@pytest.mark.parametrize("kind", [*E.REVISION_KINDS, *E.COSMETIC_KINDS])
def test_suite_edits_are_judged_as_labelled(kind: str) -> None:
    """Every generator of the suite changes the story, and the test reads its result as its label
    (on this one story, over a few seeds; the suite measures the shares on the corpus)."""
    edit = {**E.REVISION_KINDS, **E.COSMETIC_KINDS}[kind]
    wanted = kind in E.REVISION_KINDS
    for seed in range(5):
        text = edit(TITLE, BODY, DONOR, random.Random(seed))
        assert text is not None and text != SOURCE
        if kind != "noise 3%":  # a 3% noise copy of this short story is mostly noise: the suite measures it
            assert judge(SOURCE, text).revised == wanted, (kind, seed, judge(SOURCE, text))



def test_a_figure_changed_before_the_last_word_is_no_teaser() -> None:
    earlier = SOURCE + "\nIts 1987 profit was 125 mln"
    r = judge(earlier, SOURCE + "\nIts 1987 profit was 12 mln")
    assert r.kinds == ("figures",) and "125 -> 12" in r.changed


def test_texts_too_long_to_align_are_read_for_markers_only() -> None:
    rng = random.Random(3)
    words = [f"w{rng.randrange(5000)}" for _ in range(2 * T.MAX_ALIGN_TOKENS)]
    long = " ".join(words)
    changed = " ".join(w if k % 50 else "x" + w for k, w in enumerate(words))  # changed throughout
    assert not R.detect(long, changed).revised
    assert R.detect(long, "corrected " + changed).kinds == ("marker",)


def test_boilerplate_inserted_under_the_headline_is_no_revision() -> None:
    block = ("Editing by the markets desk. For corrections or comments on this story contact the newsroom editors; "
             "all quotes are delayed by at least fifteen minutes unless otherwise indicated.")
    assert not judge(SOURCE, f"{TITLE}\n{block}\n{BODY}").revised
    assert not R.detect(canonicalize(SOURCE), canonicalize(f"{TITLE}\n{block}\n{BODY}")).revised  # headline unknown


def test_scripts_without_spaces_are_read_a_character_a_token() -> None:
    thai = "รัฐบาลประกาศแผนเศรษฐกิจใหม่ในวันจันทร์ เพื่อกระตุ้นการลงทุนและการจ้างงานทั่วประเทศ"
    assert T.tokens(thai)[:3] == ["ร", "ั", "ฐ"]
    assert not R.detect(thai, thai.replace("ลงทุน", "ลงทน")).revised  # one character dropped: a typo
    assert R.detect(thai, thai + " 500 ล้านบาท").revised


def test_a_new_agency_line_date_is_no_revision() -> None:
    """Its day and month change nothing (another outlet's city there reads as a changed name: a
    stated limit)."""
    body = ("记者刘子富 中共中央政治局委员温家宝日前在贵州农村考察扶贫工作时指出 到本世纪末基本解决农村贫困人口的温饱问题 "
            "全省今年有32个县完成了扶贫任务 新年期间 各地干部深入边防 海岛 高原和农村")
    earlier, later = f"温家宝考察扶贫工作 新华社贵阳12月31日电 {body}", f"温家宝考察扶贫工作 新华社贵阳4月22日电 {body}"
    assert not R.detect(canonicalize(earlier), canonicalize(later)).revised
    assert R.detect(canonicalize(earlier), canonicalize(later.replace("32个县", "35个县"))).changed == ("32 -> 35",)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=12), st.lists(st.sampled_from("abc"), max_size=12), st.integers(0, 3),
       st.integers(0, 3))
def test_common_ends_match_a_plain_loop(a: list[str], b: list[str], at_a: int, at_b: int) -> None:
    at_a, at_b = min(at_a, len(a)), min(at_b, len(b))
    n = min(len(a) - at_a, len(b) - at_b)
    k = 0
    while k < n and a[at_a + k] == b[at_b + k]:
        k += 1
    h = 0
    while h < n - k and a[len(a) - 1 - h] == b[len(b) - 1 - h]:
        h += 1
    assert (T.common_prefix(a, b, at_a, at_b), T.common_suffix(a, b, n - k)) == (k, h)


# texts that share most words, with headline regions of any length, so that the alignment keeps
# runs, moves words and changes counts
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("a b c 1986 rose fell acme".split()), max_size=16),
       st.lists(st.sampled_from("a b c 1986 rose fell acme".split()), max_size=16), st.integers(0, 5), st.integers(0, 5))
def test_count_changes_off_the_alignment_are_the_texts_counts(ta: list[str], tb: list[str], head_a: int, head_b: int) -> None:
    """What the revision test reads a word's count change from (the changed blocks and the
    headline regions) gives the whole texts' count differences, but for the rest of the earlier
    text that a later one ending early leaves out (a teaser's cut, no change): what the
    alignment keeps cancels. A count taken from the blocks alone (no headlines) fails this."""
    head_a, head_b = min(head_a, len(ta)), min(head_b, len(tb))
    same = T.common_prefix(ta, tb)
    end = T.common_suffix(ta, tb, min(len(ta), len(tb)) - same)
    ops, diff, _ = R._changes(ta, tb, set(ta), head_a, head_b, same, end)
    cut = ops[-1][1] if ops and ops[-1][3] == len(tb) and ops[-1][2] == len(ta) else len(ta)
    whole = Counter(ta[:cut])
    whole.subtract(tb)
    assert diff == {t: n for t, n in whole.items() if n}
    assert all(op[0] != "equal" for op in ops)


# a web page of the story: a standfirst (a figure-laden line of its own), a byline and a
# dateline under the headline, and more paragraphs after it
PAGE = (f"{TITLE}\nThe pump maker expects 1987 sales of 2.1 billion dlrs, up from 1.8 billion.\n"
        f"By Anna Keller, Markets Correspondent\nCLEVELAND, April 14 (Wire) -\n{BODY}\n{DONOR}\n"
        "Acme said it did not plan further acquisitions this year and would cut its debt by 200 mln dlrs "
        "before the end of 1988, when its bonds mature. The company has 17 plants in nine countries.")
LEAD = BODY[:BODY.index("    \"We expect")]


@pytest.mark.parametrize("later", [
    f"{TITLE}\n{LEAD}",  # a teaser: headline and lead, the page's header block left out
    LEAD + BODY[BODY.index("    Acme Inc."):BODY.index("    Analysts")],  # two paragraphs, from the middle
    "Key points:\n- " + LEAD + "\n- " + DONOR.split(". ")[1],  # sentences from across the story
])
def test_excerpts_of_a_long_story_are_not_revisions(later: str) -> None:
    """A text of at most half the story's words leaves runs of it out (figures, names): an
    excerpt, not a change."""
    assert not judge(PAGE, later).revised
    assert not R.detect(canonicalize(PAGE), canonicalize(later)).revised  # headline unknown (the engine)


def test_an_excerpt_still_changes_what_it_keeps() -> None:
    teaser = f"{TITLE}\n{LEAD}"
    assert judge(PAGE, teaser.replace("12 pct", "15 pct")).changed == ("12 -> 15",)
    assert judge(PAGE, teaser + "\nThe company will not pay a dividend.").revised
    dropped = "Acme said it plans further acquisitions this year and would cut its debt by 200 mln dlrs."
    assert judge(PAGE, f"{TITLE}\n{dropped}").kinds == ("negation",)  # "did not plan" -> "plans" inside a kept run


@pytest.mark.parametrize("later", [
    "Acme pump maker sales rose in April, Keller said from Cleveland.",
    "Acme Pumps shares jumped sharply today on heavy trading volume",
])
def test_a_short_text_that_quotes_no_run_is_compared_with_the_whole_story(later: str, monkeypatch) -> None:
    """A text of at most half the story's words that shares no run of KEPT_RUN words with it
    quotes nothing: it is read against the whole story, as before excerpts were read (cut to
    the runs it quotes, the story would be empty and every word of it inserted)."""
    a, b = canonicalize(PAGE), canonicalize(later)
    ta, tb = T.tokens(a), T.tokens(b)
    assert R.EXCERPT_SHARE * len(ta) >= len(tb)
    assert not any(tb[j:j + R.KEPT_RUN] == ta[p:p + R.KEPT_RUN]
                   for j in range(len(tb) - R.KEPT_RUN + 1) for p in range(len(ta) - R.KEPT_RUN + 1))
    got = [R.detect(a, b), judge(PAGE, later)]
    monkeypatch.setattr(R, "EXCERPT_SHARE", 0.0)  # no text is an excerpt: the rule before them
    assert got == [R.detect(a, b), judge(PAGE, later)]


def _in_place_by_alignment(old: list[str], new: list[str]):
    """:func:`R._changed_in_place` without its bound: the regions aligned, always."""
    ops = [op for op in T.opcodes(old, new) or () if op[0] != "equal"]
    kept = len(old) - sum(i2 - i1 for _, i1, i2, _, _ in ops)
    return ops if 3 * kept >= 2 * max(len(old), len(new)) else None


# a small vocabulary, so that regions share words, repeat them and keep most of them in place
@given(st.lists(st.sampled_from("a b c d 1986 rose fell acme corp".split()), max_size=14),
       st.lists(st.sampled_from("a b c d 1986 rose fell acme corp".split()), max_size=14))
def test_headline_bound_decides_as_the_alignment_does(old: list[str], new: list[str]) -> None:
    """Words of the earlier region found in the later one bound what the alignment keeps: the
    shortcut never calls a region rewritten that the alignment keeps in place."""
    assume(old and new)
    assert R._changed_in_place(old, new) == _in_place_by_alignment(old, new)


def test_headline_bound_skips_the_alignment_of_a_rewritten_headline(monkeypatch) -> None:
    """Another story's headline shares too few words to be kept in place: told without aligning."""
    def no_alignment(*_):
        raise AssertionError("aligned")

    monkeypatch.setattr(R, "opcodes", no_alignment)
    assert R._changed_in_place("acme profit rose in march".split(), "gatt staff strike over pay".split()) is None


def _both(earlier: str, later: str) -> R.Revision:
    """The reference's judgement, which the compiled test must give too."""
    from streamdedup.engine import revision_kernel as RK

    r = judge(earlier, later)
    k = RK.detect(canonicalize(earlier), canonicalize(later), headline_chars(earlier), headline_chars(later))
    assert (k.revised, k.kinds, k.changed, k.typos) == (r.revised, r.kinds, r.changed, r.typos)
    return r


MAGNITUDE_STORY = ("ACME TO BUY BETA\nAcme Corp said it agreed to buy Beta Inc for 125 mln dlrs in cash. The deal, "
                   "which values Beta at 125 mln dlrs, is expected to close in June, the company said.")


@pytest.mark.parametrize(("old", "new"), [
    ("125 mln", "125 bln"), ("125 mln", "1.25 bln"), ("125 mln", "125 billion"), ("125 mln", "125 thousand"),
    ("125 mln", "125 k"), ("125 mln", "125 bn"),
])
def test_a_changed_magnitude_is_a_figure_change_never_a_typo(old: str, new: str) -> None:
    r = _both(MAGNITUDE_STORY, MAGNITUDE_STORY.replace(old, new, 1))
    assert r.revised and "figures" in r.kinds, r


@pytest.mark.parametrize(("old", "new"), [("万", "亿"), ("万", "千")])
def test_a_changed_chinese_magnitude_is_a_figure_change(old: str, new: str) -> None:
    story = "新华社北京1月5日电\n今年全国粮食产量达到5万吨，比去年增长百分之三，国家统计局说。各地农业部门表示将继续加强生产。"
    r = _both(story, story.replace(old, new, 1))
    assert r.revised and "figures" in r.kinds, r


@pytest.mark.parametrize(("old", "new"), [("mln", "million"), ("dlrs", "dollars"), ("mln dlrs", "million dollars")])
def test_another_spelling_of_the_same_unit_is_style(old: str, new: str) -> None:
    assert not _both(MAGNITUDE_STORY, MAGNITUDE_STORY.replace(old, new)).revised


@pytest.mark.parametrize("pair", [("12 pct", "12 percent"), ("15 cents", "15 cts")])
def test_unit_abbreviations_are_style(pair: tuple[str, str]) -> None:
    story = f"ACME RAISES PRICE\nAcme Corp said it raised its price by {pair[0]} a share from Monday, the company said."
    assert not _both(story, story.replace(pair[0], pair[1])).revised


def test_a_figure_changed_at_the_end_of_a_shortened_copy_is_a_revision() -> None:
    cut = MAGNITUDE_STORY[:MAGNITUDE_STORY.index("125 mln") + len("125 mln")].replace("125 mln", "12 mln")
    r = _both(MAGNITUDE_STORY, cut)
    assert r.revised and "figures" in r.kinds, r


@pytest.mark.parametrize("end", ["125", "12", "125 ml", "125 mln"])
def test_a_shortened_copy_cut_inside_a_figure_is_a_teaser(end: str) -> None:
    at = MAGNITUDE_STORY.index("125 mln")
    cut = MAGNITUDE_STORY[:at] + end
    assert not _both(MAGNITUDE_STORY, cut).revised


@pytest.mark.parametrize("junk", ["\x1b[5mblink\x1b[0m ", "\x1b[1;31m", "\x1b]0;wire\x07", "\x07\x1b(B"])
def test_terminal_junk_makes_no_revision(junk: str) -> None:
    at = SOURCE.index("Acme")
    assert not _both(SOURCE, SOURCE[:at] + junk + SOURCE[at:].replace("profit", junk + "profit", 1)).revised
