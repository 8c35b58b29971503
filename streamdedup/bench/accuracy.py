"""``streamdedup bench accuracy``: precision and recall on a Reuters stream with known truth.

The stream: Reuters-21578 stories in date order, plus synthetic copies of some stories (every
edit kind of :mod:`streamdedup.bench.synthetic`, placed shortly after their source), plus hard
negatives (held-out stories that share a long footer with each other but are otherwise
unrelated to anything).

Ground truth:
- synthetic copies are duplicates; hard negatives are not;
- natural stories: brute force over all earlier stories within the window, with an inverted
  index of exact word 5-shingles of the canonical text. A story is a duplicate if some earlier
  story has Jaccard >= 0.6 with it or contains >= 0.8 of it (a resend, correction, retitled or
  truncated version); it is unique if every earlier story has Jaccard < 0.4 and containment
  < 0.5; anything between is ambiguous and left out of the scores (its count is reported).

The same stream goes through datasketch's ``MinHashLSH`` used as a streaming filter (query,
then insert if unique; the same canonical word shingles; thresholds 0.5-0.9) in the same run.

That is the ``standard`` suite, whose figures the README quotes. ``suite="hard"`` builds the same
natural stream with other synthetic items instead (:mod:`.hard_suite`: character noise, short
teasers, compound copies, hyphenated wraps, entities, curly quotes, near-miss negatives) and
reports recall per copy kind, the share flagged per negative kind and why each copy was missed
(:mod:`.hard_report`). ``suite="zh"`` (and ``"ja"``, ``"th"``) does the same on Chinese news
(Japanese, Thai text) with copy kinds of those scripts, overlap measured on character n-grams and
datasketch on character 3-grams (:mod:`.lang_suite`).
"""

from __future__ import annotations

import bisect
import random
import time
from collections import Counter, defaultdict
from typing import Callable

from streamdedup._optional import require
from streamdedup.text.canonical import canonicalize
from streamdedup.config import Config
from streamdedup.bench.corpus import load_reuters
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.state import MemoryStore
from streamdedup.bench.synthetic import EDIT_KINDS, LONG_FOOTERS, with_footer
from streamdedup.bench.truth import (DUP_C, DUP_J, HARD_NEGATIVE_MIN_BODY, MAX_POSTING, UNIQUE_C, UNIQUE_J, Item,  # noqa: F401
                                     isolated_texts, shingle_set)

def build_stream(per_kind: int, hard_negatives: int, seed: int) -> list[Item]:
    rng = random.Random(seed)
    stories = [s for s in load_reuters() if s.date is not None]
    stories.sort(key=lambda s: s.date)
    # Hard negatives need stories at least about as long as the footer: a two-line item plus a
    # 450-character footer is mostly footer, and no estimator can tell it from an edited copy.
    # They must also be unrelated to every other story, or a copy left in the stream would make
    # them true duplicates.
    isolated = isolated_texts([s.text for s in stories], 5)
    long_enough = [i for i, s in enumerate(stories) if len(s.body) >= HARD_NEGATIVE_MIN_BODY and isolated[i]]
    held_out_idx = set(rng.sample(long_enough, hard_negatives))
    base = [s for i, s in enumerate(stories) if i not in held_out_idx]
    held = [stories[i] for i in sorted(held_out_idx)]
    items = [Item(f"r{s.id}", s.text, int(s.date.timestamp() * 1000), "natural") for s in base]
    eligible = [it for it in items if len(it.text) >= 400]
    times = [it.time_ms for it in items]
    insert_after: dict[int, list[Item]] = defaultdict(list)
    by_id = {s.id: s for s in base}
    for kind, edit in EDIT_KINDS.items():
        n = 0
        while n < per_kind:
            src = rng.choice(eligible)
            story = by_id[src.id[1:]]
            donor = rng.choice(eligible).text
            text = edit(story.title, story.body, donor, rng)
            if text is None:
                continue
            # a copy arrives 1 minute to 6 hours after its source, placed by time in the stream
            t = src.time_ms + rng.randint(60, 6 * 3600) * 1000
            at = max(bisect.bisect_right(times, t) - 1, times.index(src.time_ms))
            insert_after[at].append(Item(f"syn-{kind.replace(' ', '_')}-{n}", text, t, kind, src.id, truth=True))
            n += 1
    # hard negatives: groups of held-out stories sharing one long footer each
    for n, s in enumerate(held):
        footer = LONG_FOOTERS[n % len(LONG_FOOTERS)]
        at = rng.randrange(len(items))
        insert_after[at].append(Item(f"neg-{n}", with_footer(s.title, s.body, footer), items[at].time_ms, "hard negative", None, truth=False))
    stream: list[Item] = []
    for i, it in enumerate(items):
        stream.append(it)
        stream.extend(insert_after.get(i, ()))
    return stream


def natural_truth(stream: list[Item], w: int, window_ms: int, shingles: Callable[[str], set[int]] | None = None) -> None:
    """Label natural items by brute force (see module docstring); mutates ``truth``. ``shingles``:
    the sets to compare instead of exact word ``w``-shingles (character n-grams for scripts
    without spaces, :mod:`.lang_suite`)."""
    postings: dict[int, list[int]] = defaultdict(list)
    sets: list[set[int]] = []
    for i, it in enumerate(stream):
        sh = shingles(it.text) if shingles else shingle_set(it.text, w)
        sets.append(sh)
        if it.kind == "natural":
            counts: Counter = Counter()
            for h in sh:
                plist = postings.get(h)
                if plist and len(plist) <= MAX_POSTING:
                    counts.update(plist)
            best_j = best_c = 0.0
            for j, inter in counts.items():
                if stream[j].time_ms < it.time_ms - window_ms:
                    continue
                jac = inter / (len(sh) + len(sets[j]) - inter)
                con = inter / len(sh) if sh else 0.0
                best_j, best_c = max(best_j, jac), max(best_c, con)
            if best_j >= DUP_J or best_c >= DUP_C:
                it.truth = True
            elif best_j < UNIQUE_J and best_c < UNIQUE_C:
                it.truth = False
        for h in sh:
            postings[h].append(i)


def _scores(stream: list[Item], flagged: list[bool]) -> dict:
    tp = fp = fn = 0
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    negatives: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    hard = [0, 0]
    for it, f in zip(stream, flagged):
        if it.truth is None:
            continue
        if it.truth and f:
            tp += 1
        elif it.truth and not f:
            fn += 1
        elif f:
            fp += 1
        if it.kind != "natural":
            # copies: recall per kind; negatives (standard hard negatives, hard-suite near misses): share flagged
            tally = per_kind[it.kind] if it.truth else negatives[it.kind]
            tally[0] += int(f)
            tally[1] += 1
        if it.kind == "hard negative":
            hard[0] += int(f)
            hard[1] += 1
    nat = [(it, f) for it, f in zip(stream, flagged) if it.kind == "natural" and it.truth]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp, "fp": fp, "fn": fn, "precision": precision, "recall": recall, "f1": f1,
        "recall_per_kind": {k: v[0] / v[1] for k, v in per_kind.items()},
        "recall_natural": sum(f for _, f in nat) / len(nat) if nat else float("nan"),
        "hard_negatives_flagged": hard[0] / hard[1] if hard[1] else 0.0,
        "flagged_per_negative_kind": {k: v[0] / v[1] for k, v in negatives.items()},
        "count_per_kind": {k: v[1] for k, v in (*per_kind.items(), *negatives.items())},
    }


def run_streamdedup(cfg: Config, stream: list[Item]) -> tuple[list[bool], dict, float]:
    engine = Deduplicator(cfg, MemoryStore())
    flagged: list[bool] = []
    decisions = {}
    t0 = time.perf_counter()
    bs = cfg.engine.batch_size
    for i in range(0, len(stream), bs):
        chunk = stream[i:i + bs]
        out = engine.process([Document(it.id, it.text, it.time_ms) for it in chunk])
        for it, d in zip(chunk, out):
            flagged.append(d.status in LINKED)  # a revision is linked to its original as a duplicate is
            decisions[it.id] = d
    return flagged, decisions, time.perf_counter() - t0


def run_datasketch(stream: list[Item], w: int, num_perm: int, thresholds: list[float]) -> dict[float, list[bool]]:
    ds = require("datasketch", "bench", "the datasketch baseline of streamdedup bench accuracy")
    MinHash, MinHashLSH = ds.MinHash, ds.MinHashLSH

    hashes = []
    for it in stream:
        words = canonicalize(it.text).split()
        k = min(w, len(words))
        m = MinHash(num_perm=num_perm)
        if words:
            m.update_batch([" ".join(words[i:i + k]).encode() for i in range(len(words) - k + 1)])
        hashes.append(m)
    out = {}
    for t in thresholds:
        lsh = MinHashLSH(threshold=t, num_perm=num_perm)
        flags = []
        for n, m in enumerate(hashes):
            dup = bool(lsh.query(m))
            flags.append(dup)
            if not dup:
                lsh.insert(str(n), m)
        out[t] = flags
    return out


def duplicate_of_accuracy(stream: list[Item], decisions: dict) -> float:
    """Share of flagged synthetic copies whose duplicate_of is their source's cluster root."""
    ok = total = 0
    for it in stream:
        if it.source is None or not it.truth:  # a hard-suite negative names the story it borrows from
            continue
        d = decisions[it.id]
        if d.status not in LINKED:
            continue
        src = decisions[it.source]
        root = src.duplicate_of if src.status in LINKED else src.id
        total += 1
        ok += int(d.duplicate_of == root)
    return ok / total if total else float("nan")


LANG_SUITES = ("zh", "ja", "th")
#: the statuses of a document linked to an earlier one
LINKED = ("duplicate", "revision")


def revisions_per_kind(stream: list[Item], decisions: dict) -> dict[str, float]:
    """Per copy kind, the share of its copies the engine calls revisions (linked, status
    revision): recall counts them; the duplicates-only recall is recall minus this share."""
    per: dict[str, list[int]] = {}
    for it in stream:
        if it.truth and it.kind != "natural":
            k = per.setdefault(it.kind, [0, 0])
            k[0] += decisions[it.id].status == "revision"
            k[1] += 1
    return {kind: r / n for kind, (r, n) in per.items()}


def run(cfg: Config, per_kind: int = 150, hard_negatives: int = 300, seed: int = 11,
        thresholds: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9), with_datasketch: bool = True,
        suite: str = "standard", stories: int | None = None) -> dict:
    """Scores of the engine (and datasketch) on one stream.

    ``suite`` "standard": the stream of the module docstring. "hard": the harder copy kinds and
    near-miss negatives of :mod:`.hard_suite` (``per_kind`` of every copy and negative kind;
    ``hard_negatives`` is not used), with a stage-by-stage diagnosis of every missed copy;
    ``stories`` limits it to the first that many stories of the corpus (quick checks, tests).
    "zh", "ja", "th": the Chinese, Japanese and Thai suites of :mod:`.lang_suite` (as "hard", on
    character n-grams; datasketch on character 3-grams). "revisions": revisions and cosmetic
    copies, and whether the revision test tells them apart (:mod:`.revision_suite`, its own result
    layout). "short": teasers, excerpts and cards taken from anywhere in a story, short stories
    under boilerplate, and their near misses (:mod:`.short_suite`, its own result layout).
    """
    if suite == "revisions":
        from streamdedup.bench import revision_suite

        return revision_suite.run(cfg, per_kind, seed, stories)
    if suite == "short":
        from streamdedup.bench import short_suite

        return short_suite.run(cfg, per_kind, seed, stories)
    lang = suite in LANG_SUITES
    truth_sets = None
    if suite == "hard":
        from streamdedup.bench import hard_suite

        stream = hard_suite.build_stream(per_kind, seed, stories)
    elif lang:
        from streamdedup.bench import lang_suite

        stream = lang_suite.build_stream(suite, per_kind, seed, stories)
        truth_sets = lang_suite.truth_shingles
    elif suite == "standard" and stories is None:
        stream = build_stream(per_kind, hard_negatives, seed)
    else:
        raise ValueError(f"suite must be 'standard', 'hard', 'revisions' or one of {LANG_SUITES} (stories not with 'standard'), "
                         f"got {suite!r}")
    w = cfg.fingerprint.shingle.size
    window_ms = int(cfg.engine.window_hours * 3_600_000)
    natural_truth(stream, w, window_ms, truth_sets)
    flagged, decisions, seconds = run_streamdedup(cfg, stream)
    res = {
        "suite": suite,
        "stream": len(stream),
        "labelled": sum(it.truth is not None for it in stream),
        "ambiguous": sum(it.truth is None for it in stream),
        "natural_duplicates": sum(1 for it in stream if it.kind == "natural" and it.truth),
        "synthetic": sum(1 for it in stream if it.kind != "natural" and it.truth),
        "hard_negatives": sum(1 for it in stream if it.kind != "natural" and it.truth is False),
        "streamdedup": _scores(stream, flagged),
        "streamdedup_seconds": seconds,
        "duplicate_of_correct": duplicate_of_accuracy(stream, decisions),
        "revisions_per_kind": revisions_per_kind(stream, decisions),
    }
    if with_datasketch:
        num_perm = cfg.fingerprint.minhash.num_perm
        if lang:
            res["datasketch_shingles"] = f"character {lang_suite.BASELINE_NGRAM}-grams"
            flags = lang_suite.run_datasketch_chars(stream, lang_suite.BASELINE_NGRAM, num_perm, list(thresholds))
        else:
            res["datasketch_shingles"] = f"word {w}-shingles"
            flags = run_datasketch(stream, w, num_perm, list(thresholds))
        res["datasketch"] = {t: _scores(stream, f) for t, f in flags.items()}
    res["missed_examples"] = [
        (it.kind, it.id, it.source) for it, f in zip(stream, flagged) if it.truth and not f
    ][:20]
    res["false_positive_examples"] = [
        (it.kind, it.id, decisions[it.id].duplicate_of, decisions[it.id].relation, decisions[it.id].reason)
        for it, f in zip(stream, flagged) if it.truth is False and f
    ][:20]
    if suite != "standard":
        from streamdedup.bench import hard_report

        res["overlap_per_kind"] = lang_suite.overlap_summary(stream) if lang else hard_suite.overlap_summary(stream)
        res["missed_per_kind"] = hard_report.misses(cfg, stream, flagged)
        res["false_positives_per_kind"] = hard_report.false_positives(stream, flagged, decisions)
    return res
