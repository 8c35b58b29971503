"""Revisions among accepted near-duplicates: a correction or an update is not a copy (pure core).

The engine links a near-duplicate to the story it copies; some of those links are revisions: the
later text changed a figure, flipped a negation, swapped a name, carries a wire marker
(``CORRECTED``, ``UPDATE 2``, "corrects ...") or adds a paragraph with new facts. A desk must
not lose those. :func:`detect` tells the two apart on the two canonical texts the engine already
holds for exact evidence (lower-cased, punctuation folded to spaces, digits kept: "6-3/16"
becomes ``6 3 16``, "2.5 billion" ``2 5 billion``).

Method: both texts are split into tokens (words, single Han characters, digits apart from Han). The
headlines (the first ``earlier_head`` / ``later_head`` characters: the canonical headline's
length when the caller knows it, else :data:`HEAD_CHARS`) are compared as sets, the bodies are
aligned on their longest common subsequence (:func:`.revision_tokens.opcodes`), and every
changed block is read:

- wire markers count where they are new: "corrected", "corrects" anywhere, "refile", "update",
  "adds" in the headline, 更正 / 订正 / 更新 in Chinese; a headline marker alone makes no
  revision: a slug ("UPDATE 1-", "REFILE-") on a text that is otherwise the same, or changed
  only as copies change, is a copy re-sent under it (a correction's marker counts alone: what it
  corrected may read as noise);
- a block within a few character edits of what it replaced (a third of its characters, spaces
  ignored, OCR letters read as the digits they resemble, adjacent swaps as one edit) is a typo
  when it leaves no new number or polarity word ("proft" for "profit") or puts letters where
  digits were ("l987" for "1987"); so is a change of spacing alone ("6 316" for "6 3 16");
- otherwise a number, polarity word or word whose count differs between the two texts is
  material (counts, so that moved paragraphs change nothing); an inserted block with three new
  words is an addition; a new headline counts only for numbers and polarity words absent from the
  earlier text (a retitled copy words its headline from the body);
- a small block (at most :data:`SMALL_BLOCK` tokens a side, or fewer than three new words) is
  material only in a pair without a typo: in a noisy transmission the same edit is noise (a
  stated limit: a one-digit correction inside a noisy copy reads as noise unless a marker says
  otherwise; a corrected decimal point, "14" -> "1.4", is a change of spacing and invisible);
- a block of boilerplate (reporter and editor credits, copyright, subscription lines), a
  shortened tail (a teaser) and words that crossed a lost line break between headline and body
  change nothing.

A later text of at most :data:`EXCERPT_SHARE` of the earlier's tokens is an excerpt (a teaser
after a header block, a paragraph from the middle, key points): before all this, the earlier text
is cut to the runs the excerpt quotes (:func:`.revision_tokens.excerpted`), so what it leaves out changes nothing;
a short text that quotes no run of :data:`KEPT_RUN` tokens is compared with the whole story.

This module is the reference: the engine runs the same rules compiled and bounded
(:mod:`streamdedup._kernels.revision`, through :mod:`.revision_kernel`), held to these in the
tests. Here in CPython the test costs two tokenisations, one alignment of the token lists after
their common head and tail are cut off, and a count of the words it changed, ~0.1 ms a wire-feed
pair; the search for damaged twins is quadratic in a long changed block (a crafted pair of
100,000-word texts takes seconds), which the compiled test bounds with a work budget. Texts whose
differing middle is longer than :data:`.revision_tokens.MAX_ALIGN_TOKENS` are not aligned (of
such a pair only the markers are read).

>>> story = "acme profit rose acme corp said its first quarter profit was 600 mln dlrs"
>>> r = detect(story, story.replace("600", "500"), earlier_head=16, later_head=16)
>>> r.revised, r.kinds, r.changed
(True, ('figures',), ('600 -> 500',))
>>> detect(story, story.replace("said", "siad"), 16, 16).revised
False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice

from streamdedup.engine.revision_tokens import (KEPT_RUN, MAX_ALIGN_TOKENS, POLARITY_WORDS, SMALL_BLOCK,  # noqa: F401
                                                Forms, aligned, common_prefix, common_suffix, count_changes,
                                                excerpted, garbled, inserted_at, is_figure, is_number, noise_like,
                                                opcodes, same_units, tokens, typo_sized)

#: changed items a result lists at most, and characters an item keeps (tags stay small)
MAX_CHANGED = 8
MAX_ITEM_CHARS = 60
#: characters of a canonical text read as its headline region (Reuters headlines: <= ~60)
HEAD_CHARS = 64
#: character edits a headline takes as noise (a new slug or headline is more)
HEAD_TYPO_EDITS = 3
#: words both texts start with from which the headline counts as kept (not rewritten)
HEAD_KEPT = 4
#: a later text of at most this share of the earlier's tokens is read as an excerpt of it: a run
#: of more than :data:`SMALL_BLOCK` tokens it leaves out is no change (what it keeps or adds is)
EXCERPT_SHARE = 0.5


#: markers that make a revision wherever they are new
STRONG_MARKERS = frozenset({"corrected", "corrects", "correcting", "correction", "corrigendum"})
#: markers that count in the headline region only ("adds" and "update" are common words)
HEAD_MARKERS = frozenset({"refile", "refiled", "update", "updated", "updates", "adds", "writethru", "recasts",
                          "rewrites", "clarification", "clarifies"})
#: Chinese markers (substrings of the new text): 更正 correction, 订正 corrected, 勘误 erratum, 更新 update
CJK_MARKERS = ("更正", "订正", "勘误", "更新", "修正")

#: what follows a day, month or year in Chinese and Japanese dates (日电: "day, cable" of an agency line)
DATE_UNITS = frozenset("年 月 日 号".split())
#: what ends a dateline: the cable and report marks of Chinese agency lines, agencies' names
DATELINE_ENDS = frozenset("电 讯 reuters reuter ap afp xinhua dpa upi".split())
MONTHS = frozenset("jan january feb february mar march apr april may jun june jul july aug august sep sept september "
                   "oct october nov november dec december".split())
#: words of reporter credits, copyright and subscription lines: a block with two is boilerplate
BOILERPLATE_WORDS = frozenset(
    "reporting editing writing copyright rights reserved disclaimer subscribe subscription newsletter "
    "republication redistribution prohibited inbox alerts follow sign newsroom email www http https com "
    "example desk website visit 责任编辑 记者 摄".split())


@dataclass(slots=True)
class Revision:
    """What :func:`detect` found. ``kinds``: ``marker``, ``figures``, ``negation``, ``words``,
    ``added`` (in that order, those present); ``changed``: at most :data:`MAX_CHANGED` items,
    ``"old -> new"``, ``"+new"`` or ``"-old"`` (a marker as itself).

    Not frozen: the compiled test makes one for every linked pair, and a frozen dataclass's
    ``__init__`` costs three times a plain one's. Nothing changes one once made (answers that
    found nothing share one instance)."""

    revised: bool
    kinds: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    typos: int = 0  # typo-like blocks seen (the noise evidence that holds small changes back)
    partial: bool = False  # read only in part: the texts were too long to align, or the work bound was met


@dataclass
class _Found:
    kinds: dict[str, None] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # small changes: material if no typo
    typos: int = 0

    def add(self, kind: str, item: str) -> None:
        self.kinds.setdefault(kind, None)
        item = item if len(item) <= MAX_ITEM_CHARS else item[:MAX_ITEM_CHARS - 3] + "..."
        if len(self.changed) < MAX_CHANGED and item not in self.changed:
            self.changed.append(item)


def _show(old: list[str], new: list[str]) -> str:
    o, n = " ".join(old), " ".join(new)
    return f"{o} -> {n}" if o and n else (f"+{n}" if n else f"-{o}")


def _markers(old_head: list[str], new_head: list[str], added: list[str], new_head_text: str, old_text: str) -> list[str]:
    found = [t for t in added if t in STRONG_MARKERS]
    found += [t for t in new_head if t in HEAD_MARKERS and t not in old_head]
    found += [m for m in CJK_MARKERS if m in new_head_text and m not in old_text]
    return found


def _head_block(f: _Found, new: list[str], a_set: set[str]) -> None:
    """A changed block in the headline region: only numbers and polarity words new to the text
    count (a retitled copy drops headline words and words its headline from the body), not the
    day and month of a dateline (another outlet's agency line: "新华社西安4月22日电", "March 3"),
    and only in a pair without noise."""
    for k, t in enumerate(new):
        if t not in a_set and (is_number(t) or t in POLARITY_WORDS) and not _in_date(new, k):
            f.pending.append(("figures" if is_number(t) else "negation", f"+{t}"))


def _in_date(toks: list[str], k: int) -> bool:
    """Whether number ``toks[k]`` of a headline is no figure: a slug's version ("update 2"), or
    the day or month of a dateline: a date ("4月22日", "march 3") that an agency's name or its
    cable mark follows within a few words ("日电", "日讯", "reuters"). A date elsewhere is a
    figure like any other."""
    after = toks[k + 1] if k + 1 < len(toks) else ""
    before = toks[k - 1] if k else ""
    if before in HEAD_MARKERS:
        return True
    if not (after in DATE_UNITS or after in MONTHS or before in MONTHS):
        return False
    return any(t in DATELINE_ENDS for t in toks[k + 1:k + 5])


def _body_block(f: _Found, old: list[str], new: list[str], diff: dict[str, int], sa: set[str], fell: Forms,
                grew: Forms, *, tail: bool = False, head: bool = False, dated: frozenset[str] = frozenset()) -> None:
    """A changed block outside the headline region (see the module docstring); ``tail``: the
    later text stops here, a prefix of the earlier (a teaser, perhaps cut inside a word or a
    number: :func:`_cut_here`); ``head``: a block of a headline region changed in place, where a
    figure or polarity word counts only if it is new to the earlier text (a headline made from
    the lead repeats the lead's figures, and one rewritten drops its own), and not one of
    ``dated``: the numbers of dates there (a dateline's day and month)."""
    if tail:
        return  # a teaser: the later text stops earlier
    if not BOILERPLATE_WORDS.isdisjoint(new) and sum(t in BOILERPLATE_WORDS for t in new) >= 2:
        return  # credits, copyright, subscription lines (their names and numbers are no news)
    if "".join(old) == "".join(new):
        f.typos += 1  # spacing inside a word or number ("6 316" vs "6 3 16"): transmission noise
        return
    if same_units(old, new):
        return  # another spelling of the same units ("cents" -> "cts"): style
    # a word not in diff has the same count in both texts: moved, not changed
    figures = [t for t in (*old, *new) if t in diff and is_figure(t) and not (head and t in sa)]
    if head:
        figures = [t for t in figures if t not in dated]
    if figures:
        kept = [t for t in figures if not garbled(t, grew if diff[t] > 0 else fell)]
        if len(kept) < len(figures):
            figures = kept
            f.typos += 1
    polarity = [t for t in (*old, *new) if t in POLARITY_WORDS and t in diff and not (head and t in sa)]
    fresh = [t for t in new if t not in sa and not t.isdigit() and (len(t) > 1 or not t.isascii())]
    if len(fresh) >= 3 and (len(old) > SMALL_BLOCK or len(new) > SMALL_BLOCK):
        # damaged words are not new words; three new ones are all the rules below ask about
        fresh = list(islice((t for t in fresh if not garbled(t, fell)), 3))
    found = []
    if figures:
        found.append(("figures", _show([t for t in old if is_figure(t)], [t for t in new if is_figure(t)])))
    if polarity:
        found.append(("negation", _show([t for t in old if t in POLARITY_WORDS], [t for t in new if t in POLARITY_WORDS])))
    if old and fresh and not found:
        found.append(("words", _show(old[:4], new[:4])))
    elif not old and len(fresh) >= 3 and not figures:
        found.append(("added", f"+{' '.join(new[:6])}"))
    if typo_sized(old, new) and noise_like(old, new, lambda t: t not in diff):
        f.typos += 1
    elif len(old) <= SMALL_BLOCK and len(new) <= SMALL_BLOCK or len(fresh) < 3 and not figures and not polarity:
        f.pending += found  # material only in a pair without noise
    else:
        for kind, item in found:
            f.add(kind, item)


def detect(earlier: str, later: str, earlier_head: int = HEAD_CHARS, later_head: int | None = None) -> Revision:
    """Whether ``later`` revises ``earlier`` (both canonical texts of a pair the engine accepted),
    and what changed. ``earlier_head``, ``later_head``: the headline regions' lengths in
    characters (the canonical headline's length when the input has one); ``later_head`` None:
    as many tokens as the earlier's region (the engine does not know the headlines: a region cut
    by characters would end at another token in each text as soon as a word before the cut
    changed length)."""
    if earlier == later:
        return Revision(revised=False)
    ta, tb = tokens(earlier), tokens(later)
    sa = set(ta)  # the words of the earlier text: which words are new
    head_a = _head_len(earlier, ta, earlier_head)
    if EXCERPT_SHARE * len(ta) >= len(tb):
        # an excerpt (a teaser after a header block, a mid-story paragraph, key points): the
        # runs of the story it leaves out change nothing; it is compared with what it keeps
        keep = excerpted(ta, tb)
        head_a = next((n for n, k in enumerate(keep) if k >= head_a), len(keep))  # the headline it kept
        ta = [ta[k] for k in keep]
    same = common_prefix(ta, tb)
    end = common_suffix(ta, tb, min(len(ta), len(tb)) - same)
    head_b = min(head_a, len(tb)) if later_head is None else _head_len(later, tb, later_head)
    if later_head is None and HEAD_KEPT <= same < head_a and inserted_at(ta, tb, same):
        # the headline is kept and a block is inserted under it, which the region would cut in
        # two: align it with the body, whole
        head_a = head_b = same
    old_head, new_head = ta[:head_a], tb[:head_b]
    ops, diff, added = _changes(ta, tb, sa, head_a, head_b, same, end)
    f = _Found()
    fell, grew = Forms(diff, 1), Forms(diff, -1)
    rewritten = False
    if old_head != new_head:
        # a headline takes noise as a few edits; a new slug ("CORRECTED - ") is more
        if typo_sized(old_head, new_head, HEAD_TYPO_EDITS) and noise_like(old_head, new_head, lambda t: t not in diff):
            f.typos += 1
        else:
            head_ops = _changed_in_place(old_head, new_head)
            if head_ops is not None:
                # words changed in place (the region may reach into the lead: a name, a figure)
                dated = frozenset(t for h in (old_head, new_head) for k, t in enumerate(h) if is_number(t) and _in_date(h, k))
                for _, i1, i2, j1, j2 in head_ops:
                    _body_block(f, old_head[i1:i2], new_head[j1:j2], diff, sa, fell, grew, head=True, dated=dated)
            else:  # a headline rewritten
                rewritten = True
                _head_block(f, new_head, sa)
    markers = _markers(old_head, new_head, added, later[:later_head], earlier)
    for m in markers:
        f.add("marker", m)
    for _, i1, i2, j1, j2 in ops:
        old, new = ta[i1:i2], tb[j1:j2]
        if i1 == head_a and j1 == head_b and (set(old) <= set(new_head) and not new or set(new) <= set(old_head) and not old):
            continue  # the first body words of one text are headline words of the other (a lost line break)
        if rewritten and i1 == head_a and j1 == head_b:
            _head_block(f, new, sa)  # the rest of a rewritten headline longer than the region
            continue
        _body_block(f, old, new, diff, sa, fell, grew, tail=_cut_here(ta, tb, i1, i2, j1, j2))
        if len(f.changed) == MAX_CHANGED:
            break  # a revision whatever the rest says (no later block takes an item back)
    if f.typos == 0:
        for kind, item in f.pending:
            f.add(kind, item)
    kinds = tuple(k for k in ("marker", "figures", "negation", "words", "added") if k in f.kinds)
    if kinds == ("marker",) and all(m in HEAD_MARKERS for m in markers):
        return Revision(revised=False, typos=f.typos)  # a slug alone ("UPDATE 1-", "REFILE-") on a copy: a copy
    return Revision(bool(kinds), kinds, tuple(f.changed), f.typos)


def _changes(ta: list[str], tb: list[str], sa: set[str], head_a: int, head_b: int, same: int,
             end: int) -> tuple[list[tuple[str, int, int, int, int]], dict[str, int], list[str]]:
    """The changed blocks of the bodies (after the headline regions, ``head_a`` and ``head_b``
    tokens; ``same`` and ``end``: the texts' common head and tail), each word's count change
    (:func:`.revision_tokens.count_changes`) and the words the later text adds, where markers
    count. Texts too long to align have no blocks: only their markers are read (new words
    anywhere)."""
    old_head, new_head = ta[:head_a], tb[:head_b]
    # the bodies are aligned on their own: a retitled copy's headline, made of lead words, would
    # otherwise be matched with the lead
    if head_a == head_b <= same:  # the bodies' common head and tail are the texts' (no copies, no search)
        ops = aligned(ta, tb, same, same, end)
    else:
        ops = opcodes(ta, tb, head_a, head_b)
    head_added = [t for t in new_head if t not in old_head]
    if ops is None:
        middle = tb[same:len(tb) - end]
        return [], count_changes(ta[same:len(ta) - end], middle), head_added + [t for t in dict.fromkeys(middle) if t not in sa]
    ops = [op for op in ops if op[0] != "equal"]
    # which words moved (same count in both texts), fell or grew: read off what the alignment
    # changed (and the headline regions, aligned apart unless in the common head), as what it
    # keeps adds the same to both texts (a fraction of counting the texts)
    lost, gained = ([], []) if head_a == head_b <= same else (old_head, new_head)  # this function's own copies
    for _, i1, i2, j1, j2 in ops:
        if j1 == len(tb) and i2 == len(ta):
            continue  # the rest of the story, which a shortened copy leaves out, is no change
        lost += ta[i1:i2]
        gained += tb[j1:j2]
    return ops, count_changes(lost, gained), head_added + [t for _, _, _, j1, j2 in ops for t in tb[j1:j2]]


def _changed_in_place(old_head: list[str], new_head: list[str]) -> list[tuple[str, int, int, int, int]] | None:
    """The changed blocks of two headline regions whose alignment keeps at least two thirds of
    the longer one's words (changed in place), else None (a headline rewritten). The earlier
    region's words found anywhere in the later one bound what any alignment keeps: most
    rewritten headlines are told by that bound, without aligning (2.8 us a wire pair, 8.5
    aligned). Regions too long to align (:data:`.revision_tokens.MAX_ALIGN_TOKENS`) count as
    kept, as before."""
    longest = max(len(old_head), len(new_head))
    most = 2 * longest
    if longest <= MAX_ALIGN_TOKENS and 3 * sum(map(set(new_head).__contains__, old_head)) < most:
        return None
    head_ops = [op for op in opcodes(old_head, new_head) or () if op[0] != "equal"]
    kept = len(old_head) - sum(i2 - i1 for _, i1, i2, _, _ in head_ops)
    return head_ops if 3 * kept >= most else None


def _cut_here(ta: list[str], tb: list[str], i1: int, i2: int, j1: int, j2: int) -> bool:
    """Whether a changed block is where a teaser stops: the later text ends with it (or one
    short word fragment after it, which the matcher paired with a later word), the earlier goes
    on or lost more here, and the later text from the block on is the start of the earlier's
    from there, spaces aside (cut inside a word or a number). A block before the last word of
    both ("125 mln" -> "12 mln") is a changed figure, not a cut; so is a shortened copy that
    ends "... was 12 mln" where the story says "125 mln dlrs" ("12mln" does not start
    "125mlndlrs")."""
    if j2 == len(tb) - 1:
        # the fragment's partner in the earlier text is not its last word: the earlier goes on
        if len(tb[-1]) > 3 or i2 >= len(ta) - 1:
            return False
    elif j2 != len(tb):
        return False
    if not (i2 < len(ta) or i2 - i1 > j2 - j1):
        return False
    rest = "".join(tb[j1:])
    return "".join(islice(ta, i1, i1 + len(rest))).startswith(rest)


def _head_len(text: str, toks: list[str], head_chars: int) -> int:
    """How many of ``toks`` start within the first ``head_chars`` characters of ``text``."""
    head = tokens(text[:head_chars])
    n = len(head)
    if n and len(text) > head_chars and text[head_chars - 1:head_chars + 1].strip() == text[head_chars - 1:head_chars + 1]:
        n -= 1  # the last head token is cut: it belongs to the body
    return min(n, len(toks))
