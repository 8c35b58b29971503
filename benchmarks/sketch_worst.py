"""What an evidence sketch costs a text, typical and worst (texts up to ``fingerprint.max_text_bytes``).

A deployment without texts makes two 128-slot MinHashes of every byte 8-gram of each canonical
text (``_kernels.sketches``). The work is two passes over the text's bytes, whatever the bytes
are; this script checks that claim on the inputs most likely to break it, each timed as the
engine calls it (``evidence_sketch.of_texts``, keyed as a deployment with a secret is, or
unkeyed with ``--no-secret``), best of ``--rounds``:

- a typical wire story (Reuters, ~1 KB), for scale;
- texts of ``--max-bytes`` (default: the built-in ``fingerprint.max_text_bytes``): random letters
  and spaces, one byte repeated (every 8-gram the same), all digits (every gram folded to the
  same), random bytes, Chinese characters (three UTF-8 bytes each), and a short text repeated
  (a few distinct grams, many repeats).

Prints microseconds a text and nanoseconds a byte.

    .venv/bin/python benchmarks/sketch_worst.py [--max-bytes N] [--rounds R] [--no-secret]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from streamdedup.bench.corpus import load_reuters
from streamdedup.config import Config
from streamdedup.sketch import evidence_sketch
from streamdedup.sketch.params import hash_key


def _texts(size: int, seed: int) -> dict[str, bytes]:
    rng = random.Random(seed)
    story = next(s.body for s in load_reuters() if 900 <= len(s.body.encode()) <= 1200).encode()
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz     ") for _ in range(size)).encode()
    han = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size // 3)).encode()
    return {
        "wire story": story,
        "letters and spaces": letters[:size],
        "one byte repeated": b"a" * size,
        "all digits": bytes(rng.choice(b"0123456789") for _ in range(size)),
        "random bytes": rng.randbytes(size),
        "Chinese characters": han[:size - size % 3],
        "a sentence repeated": (b"the quick brown fox jumps over the lazy dog. " * (size // 45 + 1))[:size],
    }


def _time(text: bytes, key: tuple, rounds: int) -> float:
    buf = np.frombuffer(text, np.uint8)
    start, length = np.zeros(1, np.int64), np.array([len(text)], np.int64)
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        evidence_sketch.of_texts(buf, start, length, key)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    cfg = Config()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-bytes", type=int, default=cfg.fingerprint.max_text_bytes)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-secret", action="store_true", help="unkeyed, as without fingerprint.secret")
    args = ap.parse_args()
    secret = "" if args.no_secret else "a benchmark's secret, 16+ chars"
    key = hash_key(Config.model_validate({"fingerprint": {"secret": secret}}).fingerprint)
    texts = _texts(args.max_bytes, args.seed)
    _time(b"warm up the kernel", key, 1)
    print(f"{'text':<22} {'bytes':>10} {'us a text':>11} {'ns a byte':>10}")
    for name, text in texts.items():
        s = _time(text, key, args.rounds)
        print(f"{name:<22} {len(text):>10,} {s * 1e6:>11,.1f} {s * 1e9 / len(text):>10.2f}")


if __name__ == "__main__":
    main()
