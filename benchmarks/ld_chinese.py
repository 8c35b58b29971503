"""Do Coates' LD signatures and the calibrated LD estimate hold on Chinese? (issue 17, step 2)

The signature's N-character neighbourhood is N *bytes* of canonical UTF-8 (N=4, C=16) and a Han
character is 3 bytes; the calibration (``streamdedup/sketch/calibration.py``) was fitted on Reuters
English. This prints, per edit kind, how the calibrated estimate compares with the true
Levenshtein distance of the canonical texts, on People's Daily stories (the first 9,000 lines
of the corpus, :mod:`streamdedup.bench.corpus_cjk`) next to Reuters English pairs made in the same run
(:mod:`streamdedup.bench.estimates`), and the unrelated-pair model behind "related".

Units: the engine's LD similarity is ``1 - calibrated / longer length in UTF-8 bytes``
(``verify.compare``), so the calibrated estimate is read as a distance in bytes. Two truths:
``bytes`` is the Levenshtein distance of the UTF-8 encodings; ``chars x b`` is the distance in
characters times the pair's bytes per character, the distance that keeps the similarity a
share of the *characters* changed (one changed Han character is 3 bytes of change, although
two Han characters often share their lead byte, so their byte distance is 2). On ASCII English
the two are equal.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/ld_chinese.py [--per-kind 120] [--fit]``
(about a minute; ``--fit`` refits the constants on the other half of each corpus and prints
the figures of the candidate calibrations next to today's).
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein

from streamdedup.sketch import calibration
from streamdedup.bench import estimates
from streamdedup.bench import zh_edits as Z
from streamdedup.text.canonical import canonicalize
from streamdedup.config import Config
from streamdedup.bench.corpus_cjk import load_peoples_daily
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.engine.verify import Fingerprint, compare

ZH_KINDS = ("noise 0.5%", "noise 1%", "noise 2%", "noise 3%", "sentence replaced", "paragraph dropped", "unrelated")
EN_KINDS = ("scattered 0.5%", "scattered 1%", "scattered 3%", "block 1x200", "block 1x500", "mixed 1% + 1x300", "unrelated")


@dataclass
class Row:
    """One pair as the engine sees it, with the truths."""

    kind: str
    true_bytes: int
    true_chars: int
    bytes_a: int
    bytes_b: int
    chars_a: int
    chars_b: int
    sig_a: int  # fine signature lengths (symbols)
    sig_b: int
    runs: np.ndarray  # lengths of the runs of consecutive signature edits
    raw: float
    calibrated: float
    related: bool

    @property
    def longest(self) -> int:
        return max(self.bytes_a, self.bytes_b)

    @property
    def bytes_per_char(self) -> float:
        return (self.bytes_a + self.bytes_b) / max(1, self.chars_a + self.chars_b)

    @property
    def true_scaled(self) -> float:
        """Character distance in bytes of this pair's text (``chars x b``)."""
        return self.true_chars * self.bytes_per_char


def zh_stories() -> list[tuple[str, str, str]]:
    """(title, body, canonical text) of People's Daily stories with 200-3,000 canonical characters."""
    out = []
    for st in load_peoples_daily():
        canon = canonicalize(st.text)
        if 200 <= len(canon) <= 3000:
            out.append((st.title, st.body, canon))
    return out


def zh_pairs(stories: list[tuple[str, str, str]], per_kind: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, a, b) canonical text pairs: character noise on the canonical text (the rate counts
    its characters), block edits on the story (they need its sentences and paragraphs)."""
    makers = {
        **{f"noise {r * 100:g}%": (lambda r: lambda st, donor: Z.char_noise(st[2], r, rng))(r) for r in (0.005, 0.01, 0.02, 0.03)},
        "sentence replaced": lambda st, donor: Z.replace_sentence(st[0], st[1], donor[1], "zh", rng, 5),
        "paragraph dropped": lambda st, donor: Z.drop_paragraph(st[0], st[1], rng),
        "unrelated": lambda st, donor: donor[2],
    }
    out = []
    for kind, make in makers.items():
        made = tries = 0
        while made < per_kind and tries < per_kind * 50:
            tries += 1
            st, donor = rng.sample(stories, 2)
            b = make(st, donor)
            if b is not None:
                out.append((kind, st[2], canonicalize(b)))
                made += 1
    return out


def en_pairs(docs: list[str], per_kind: int, rng: random.Random) -> list[tuple[str, str, str]]:
    out = []
    for kind in EN_KINDS:
        for _ in range(per_kind):
            a, donor = rng.sample(docs, 2)
            b = donor if kind == "unrelated" else estimates.EDIT_KINDS[kind](a, donor, rng)
            out.append((kind, a, canonicalize(b)))  # a block may start or end with a space
    return out


def measure(cfg: Config, pairs: list[tuple[str, str, str]]) -> list[Row]:
    """Fingerprint both sides and compare them with the engine's own ``verify.compare``."""
    fp = Fingerprinter(cfg.fingerprint)
    ba = fp.fingerprint_batch([p[1] for p in pairs])
    bb = fp.fingerprint_batch([p[2] for p in pairs])
    rows = []
    for i, (kind, a, b) in enumerate(pairs):
        fa, fb = Fingerprint.from_batch(ba, i), Fingerprint.from_batch(bb, i)
        ea, eb = a.encode(), b.encode()
        assert fa.length == len(ea) and fb.length == len(eb), "texts must be canonical already"
        cmp = compare(fa, fb, cfg.verify, cfg.fingerprint.signature, full=True)
        _, runs = calibration.run_lengths(fa.signature, fb.signature)
        rows.append(Row(kind, Levenshtein.distance(ea, eb), Levenshtein.distance(a, b), len(ea), len(eb), len(a), len(b),
                        len(fa.signature), len(fb.signature), runs, cmp.ld.raw, cmp.ld.calibrated, cmp.ld.related))
    return rows


def _pct(x: list[float]) -> str:
    p10, p50, p90 = np.percentile(x, [10, 50, 90])
    return f"{p50:5.2f} [{p10:4.2f}-{p90:4.2f}]"


def ratio_table(title: str, kinds: tuple[str, ...], rows: list[Row], calibrated: list[float] | None = None) -> None:
    """Per kind: calibrated / truth (median [p10-p90]) for both truths, |err|/len, related share.
    ``calibrated`` replaces the engine's estimate (one per row) to show a candidate calibration."""
    cal_of = dict(zip(map(id, rows), calibrated if calibrated is not None else [r.calibrated for r in rows]))
    print(f"\n{title}")
    print(f"  {'kind':<18} {'pairs':>5} {'b/char':>6} {'cal/bytes':>18} {'cal/(chars x b)':>18} "
          f"{'raw/bytes':>18} {'|err|/len':>9} {'related':>7}")
    for kind in kinds:
        rs = [r for r in rows if r.kind == kind]
        if not rs:
            continue
        cal = [cal_of[id(r)] for r in rs]
        err = np.median([abs(c - r.true_bytes) / r.longest for c, r in zip(cal, rs)])
        print(f"  {kind:<18} {len(rs):>5} {np.median([r.bytes_per_char for r in rs]):6.2f} "
              f"{_pct([c / max(1, r.true_bytes) for c, r in zip(cal, rs)]):>18} "
              f"{_pct([c / max(1.0, r.true_scaled) for c, r in zip(cal, rs)]):>18} "
              f"{_pct([r.raw / max(1, r.true_bytes) for r in rs]):>18} {err:9.3f} {np.mean([r.related for r in rs]):7.2f}")


def unrelated_model(rows: list[Row], cfg: Config) -> dict[str, float]:
    """The fit of ``estimates.fit`` on these unrelated pairs: chance-match rate per symbol and the
    first percentile of raw / expected (the related fraction), plus today's constants' share."""
    un = [r for r in rows if r.kind == "unrelated"]
    num = den = 0.0
    for r in un:
        short, long_ = sorted((r.sig_a, r.sig_b))
        d = r.raw / cfg.fingerprint.signature.compression
        num += (long_ - d) * short
        den += short * short
    rate = num / den

    def ratios(rate_: float) -> list[float]:
        return [r.raw / (max(r.bytes_a, r.bytes_b) - rate_ * min(r.bytes_a, r.bytes_b)) for r in un]

    today = ratios(calibration.UNRELATED_MATCH_RATE)
    return {
        "pairs": len(un),
        "UNRELATED_MATCH_RATE fitted": rate,
        "RELATED_FRACTION fitted (p1 of raw/expected)": float(np.percentile(ratios(rate), 1)),
        "p1 of raw/expected, today's rate": float(np.percentile(today, 1)),
        "unrelated called related, today": float(np.mean([x < calibration.RELATED_FRACTION for x in today])),
    }


def byte_aware(rows: list[Row], sig) -> list[float]:
    """The candidate: each pair's short runs worth ``calibration.short_run_worth(sig, b)``, b
    the pair's bytes per character (b = 1 is today's rule)."""
    return [calibration.calibrated_from_runs(r.runs, sig, r.bytes_per_char) for r in rows]


def fit_factor(rows: list[Row], sig, byte_aware_worth: bool) -> float:
    """``estimates.fit``'s one-parameter least squares for SHORT_RUN_FACTOR on these pairs
    (truth: byte distance), with today's short-run worth C / N or the byte-aware one."""
    x, y = [], []
    for r in rows:
        if r.kind == "unrelated":
            continue
        b = r.bytes_per_char if byte_aware_worth else 1.0
        long_part = r.runs[r.runs >= calibration.LONG_RUN].sum() * sig.compression
        n_short = int((r.runs < calibration.LONG_RUN).sum())
        x.append(n_short * calibration.short_run_worth(sig, b) / calibration.SHORT_RUN_FACTOR)
        y.append(r.true_bytes - long_part)
    xa, ya = np.array(x, float), np.array(y, float)
    return float(xa @ ya / (xa @ xa))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-kind", type=int, default=120)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--fit", action="store_true", help="refit SHORT_RUN_FACTOR on the other halves and show the byte-aware candidate")
    args = ap.parse_args()
    cfg = Config()
    sig = cfg.fingerprint.signature
    print(f"signature C={sig.compression} N={sig.neighbourhood} (bytes); calibration LONG_RUN={calibration.LONG_RUN} "
          f"SHORT_RUN_FACTOR={calibration.SHORT_RUN_FACTOR} UNRELATED_MATCH_RATE={calibration.UNRELATED_MATCH_RATE} "
          f"RELATED_FRACTION={calibration.RELATED_FRACTION}")
    stories = zh_stories()
    docs = estimates.documents()
    random.Random(args.seed).shuffle(stories)
    random.Random(args.seed).shuffle(docs)
    zh = measure(cfg, zh_pairs(stories[len(stories) // 2:], args.per_kind, random.Random(args.seed + 1)))
    en = measure(cfg, en_pairs(docs[len(docs) // 2:], args.per_kind, random.Random(args.seed + 2)))
    print(f"held-out halves: {len(stories) - len(stories) // 2} Chinese stories, {len(docs) - len(docs) // 2} Reuters documents; "
          "ratios are median [p10-p90] over pairs")
    ratio_table("Chinese (People's Daily, first 9,000 lines)", ZH_KINDS, zh)
    ratio_table("English (Reuters)", EN_KINDS, en)
    if args.fit:
        fz = measure(cfg, zh_pairs(stories[:len(stories) // 2], args.per_kind, random.Random(args.seed + 3)))
        fe = measure(cfg, en_pairs(docs[:len(docs) // 2], args.per_kind, random.Random(args.seed + 4)))
        print("\nSHORT_RUN_FACTOR refitted on the other halves (least squares on byte distance, as estimates.fit):")
        for worth, aware in (("C/N (today)", False), ("C*b/(N+b-1)", True)):
            print(f"  short run worth {worth:<12}: Chinese {fit_factor(fz, sig, aware):.3f}, English {fit_factor(fe, sig, aware):.3f}, "
                  f"both {fit_factor(fz + fe, sig, aware):.3f}")
        ratio_table("Chinese, candidate: a short run is worth SHORT_RUN_FACTOR * C * b / (N + b - 1) bytes", ZH_KINDS, zh, byte_aware(zh, sig))
        ratio_table("English, candidate (b = 1 on ASCII: today's figures)", EN_KINDS, en, byte_aware(en, sig))
    for name, rows in (("Chinese", zh), ("English", en)):
        print(f"\nunrelated pairs, {name}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                                      for k, v in unrelated_model(rows, cfg).items()))


if __name__ == "__main__":
    main()
