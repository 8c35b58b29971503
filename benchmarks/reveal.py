"""What a text-free fingerprint record reveals to someone who holds it: measured on Reuters-21578.

The attacker holds a partner's text-free records (``streamdedup fingerprint``), the
fingerprint settings (they travel with the records) and a corpus of news of its own. The hashes
are not keyed, so it can compute anything a record holds for any text it has or guesses:

1. **Anchor keys** (32 bits: a hash of the 40 canonical bytes, about 7 words, after each
   sentence or paragraph start). The dictionary attack hashes the 40 bytes after every word
   start of its own corpus and looks the record's keys up: a hit names those 7 words.
   Measured with a random half of the corpus as the attacker's and the other half as the
   partner's stories (stories shared by both halves, resends and corrections, are reported apart).
2. **The digest, band keys and MinHash slots** confirm a text the attacker already has or
   guesses whole (that is what matching is), but name no word of a text it does not have: a
   band key is a hash of 2-4 MinHash minima, each the minimum over a third of the story's
   shingles.
3. **The LD signature**: one symbol in ``alphabet`` per ~16 canonical bytes. Its information
   is bounded by its length times log2(alphabet) bits.

Run: python benchmarks/reveal.py [--seed 3]; with STREAMDEDUP_FINGERPRINT__SECRET set, the
partner's records are keyed (``fingerprint.secret``) and the attacker's dictionary is not.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from streamdedup import load_config  # noqa: E402
from streamdedup._kernels.anchors import ANCHOR_WINDOW, _span_key  # noqa: E402
from streamdedup.bench.corpus import load_reuters  # noqa: E402
from streamdedup.sketch.fingerprint import Fingerprinter  # noqa: E402


@njit(cache=True)
def _word_start_keys(buf, off, window, keys, story, pos):
    """The anchor key of the ``window`` bytes after every word start of every text; returns how many."""
    m = 0
    for d in range(off.shape[0] - 1):
        lo, hi = off[d], off[d + 1]
        for p in range(lo, hi):
            if p == lo or buf[p - 1] == 32:
                k = _span_key(buf, p, hi, window, np.uint64(0), np.uint64(0), False)  # the unkeyed hash
                if k == 0:
                    break
                keys[m], story[m], pos[m] = k, d, p
                m += 1
    return m


def _windows(canon: list[bytes]):
    buf = np.frombuffer(b"".join(canon), np.uint8).copy()
    off = np.zeros(len(canon) + 1, np.int64)
    np.cumsum([len(c) for c in canon], out=off[1:])
    n = int(buf.shape[0])
    keys, story, pos = np.empty(n, np.uint32), np.empty(n, np.int64), np.empty(n, np.int64)
    m = _word_start_keys(buf, off, ANCHOR_WINDOW, keys, story, pos)
    return buf, keys[:m], story[:m], pos[:m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    cfg = load_config()
    fp = Fingerprinter(cfg.fingerprint)
    stories = [s.text for s in load_reuters()]
    random.Random(args.seed).shuffle(stories)
    half = len(stories) // 2
    attacker, partner = stories[:half], stories[half:]
    pb = fp.fingerprint_batch(partner)
    ab = fp.fingerprint_batch(attacker)
    a_buf, a_keys, a_story, a_pos = _windows(list(ab.canonical))
    order = np.argsort(a_keys, kind="stable")
    a_keys, a_story, a_pos = a_keys[order], a_story[order], a_pos[order]
    p_buf, p_keys, p_story, p_pos = _windows(list(pb.canonical))
    shared_digests = {bytes(d) for d in ab.digests}
    anchors = hits = right = 0
    words_named = words_total = 0
    stories_hit = 0
    shared = 0
    named: dict[bytes, int] = {}
    for d in range(len(partner)):
        keys = pb.anchors[d, :pb.anchor_n[d]]
        if bytes(pb.digests[d]) in shared_digests:
            shared += 1
            continue  # the attacker has this very story: matching, not recovery
        words_total += len(pb.canonical[d].split())
        anchors += len(keys)
        got = 0
        for k in keys.tolist():
            i = np.searchsorted(a_keys, k)
            if i >= a_keys.shape[0] or a_keys[i] != k:
                continue
            hits += 1
            guess = bytes(a_buf[a_pos[i]:a_pos[i] + ANCHOR_WINDOW])
            mine = [int(p) for p in p_pos[(p_story == d) & (p_keys == k)]]
            if any(bytes(p_buf[p:p + ANCHOR_WINDOW]) == guess for p in mine):
                right += 1
                got += 1
                named[guess] = named.get(guess, 0) + 1
        words_named += got * 7
        stories_hit += got > 0
    n = len(partner) - shared
    print(f"Reuters-21578, seed {args.seed}: the attacker's corpus {half:,} stories "
          f"({a_keys.shape[0]:,} word-start windows); the partner's {len(partner):,} stories, "
          f"{shared:,} of them also in the attacker's corpus (left out below)")
    print(f"anchor keys: {anchors:,} in {n:,} stories; found in the dictionary {hits:,} ({hits / anchors:.1%}), "
          f"of them the right 7 words {right:,} ({right / anchors:.1%} of all keys)")
    print(f"stories with at least one window named: {stories_hit:,} ({stories_hit / n:.1%}); "
          f"words named ~{words_named:,} of {words_total:,} ({words_named / max(1, words_total):.1%})")
    common = sorted(named.items(), key=lambda kv: -kv[1])[:5]
    print("most named windows: " + "; ".join(f"{w.decode(errors='replace')!r} x{c}" for w, c in common))
    sig_bits = pb.fine_len.astype(np.float64) * math.log2(max(2, len(cfg.fingerprint.signature.alphabet)))
    text_bits = pb.lengths.astype(np.float64) * 8
    print(f"LD signature: {np.median(pb.fine_len):.0f} symbols a story (median), alphabet of "
          f"{len(cfg.fingerprint.signature.alphabet)}: at most {np.median(sig_bits / np.maximum(1, text_bits)):.3f} bits "
          f"per bit of canonical text")


if __name__ == "__main__":
    main()
