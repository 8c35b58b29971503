"""The revision test's worst inputs, timed: the compiled test against the Python rules.

Run: ``.venv/bin/python benchmarks/revision_worst.py [--reference] [--max-bytes N]``. Prints, per
case, the two texts' words and bytes, the best of three timings of the compiled test (ms), the
work its damaged-twin search spent, whether the reading was partial, and with ``--reference``
the Python rules' time (capped: a case past ``--cap`` seconds is stopped and shown as over it).

Cases, each a pair a stream could carry (canonical texts: lower-case words and digits):

- ``digits-every-other``: a 100,000-word story and a copy whose middle 3,000 words differ in
  digits only, every other word a figure with letters ("k4821" -> "k4822");
- ``digits-block``: the same with one contiguous block of 3,000 changed figures;
- ``twins``: 3,000 changed numbers against 3,000 lettered words of their length whose counts
  move the other way ("1987" and "l98x"): the damaged-twin search's own worst case;
- ``repeated``: "the 1 the 2 the 3 ..." with every figure changed (repeated tokens in the
  alignment and the excerpt index);
- ``max-few``, ``max-many``, ``max-all``: texts at ``--max-bytes`` (``input.max_text_bytes``)
  with 10 changes, a change every 50 words, and nothing in common;
- ``middle-2999``, ``middle-3001``: a changed middle just under and just over the alignment's
  3,000-word limit;
- ``excerpt``: a 300-word excerpt of a 100,000-word story that repeats its word pairs;
- ``chinese``: 300,000 Han characters (one word each) with every 100th digit changed;
- ``chinese-dense``: the same with every tenth word a digit and every eighth a lettered figure,
  all changed (the most changed blocks a pair can have, each read);
- ``chinese-whole``: two Chinese texts (no spaces) just within the size the test reads whole,
  whose middle 2,900 characters have every fourth a changed digit.
"""

from __future__ import annotations

import argparse
import random
import signal
import time

from streamdedup._kernels.revwindow import MAX_READ
from streamdedup.engine import revision_kernel as RK
from streamdedup.engine import revisions as R

WORDS = ("the company said its first quarter net profit rose from a year earlier analysts expected shares "
         "market trade oil price bank rate growth export government central output").split()
HAN = "中国经济增长人民日报新华社北京电国家统计局农业部门生产粮食产量去年今年全国"


def _story(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(n)]


def _figures(words: list[str], lo: int, hi: int, step: int, rng: random.Random) -> tuple[list[str], list[str]]:
    a, b = list(words), list(words)
    for k in range(lo, hi, step):
        x = rng.randrange(10 ** 6)
        a[k], b[k] = f"k{x}", f"k{x + 1}"
    return a, b


def cases(max_bytes: int = 1_000_000, seed: int = 1) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    out = []
    story = _story(rng, 100_000)
    lo = 48_500
    a, b = _figures(story, lo, lo + 3_000, 2, rng)
    out.append(("digits-every-other", a, b))
    a, b = _figures(story, lo, lo + 3_000, 1, rng)
    out.append(("digits-block", a, b))
    a, b = list(story), list(story)
    for k in range(lo, lo + 6_000, 2):
        year = str(1000 + rng.randrange(9000))
        a[k], b[k] = year, "l" + year[1:3] + "x"
    out.append(("twins", a, b))
    rep = [w for k in range(50_000) for w in ("the", str(k % 97))]
    a, b = _figures(rep, 0, len(rep), 2, rng)
    out.append(("repeated", a, b))
    words = max_bytes // 7  # ~7 bytes a word with its space
    big = _story(rng, words)
    for name, step in (("max-few", words // 10), ("max-many", 50)):
        a, b = _figures(big, 0, words, step, rng)
        out.append((name, a, b))
    out.append(("max-all", big, _story(rng, words)))
    for name, n in (("middle-2999", 2_999), ("middle-3001", 3_001)):
        b = list(story)
        b[lo:lo + n] = _story(rng, n)
        out.append((name, story, b))
    pairs = [w for k in range(50_000) for w in (WORDS[k % 7], WORDS[k % 11])]
    out.append(("excerpt", pairs, pairs[40_000:40_300]))
    han = [rng.choice(HAN) if k % 10 else str(rng.randrange(10)) for k in range(300_000)]
    han_b = [str((int(t) + 1) % 10) if t.isdigit() and k % 1000 == 0 else t for k, t in enumerate(han)]
    out.append(("chinese", han, han_b))
    # every fourth character a changed digit or a changed lettered figure: the most blocks, each
    # with a figure whose twins the damaged-twin search compares
    han_c = [f"x{k}" if k % 8 == 3 else t for k, t in enumerate(han)]
    han_d = [str((int(t) + 1) % 10) if t.isdigit() else f"x{k + 1}" if t.startswith("x") else t for k, t in
             enumerate(han_c)]
    out.append(("chinese-dense", han_c, han_d))
    # texts just within the size read whole (no spaces: one character a word), a middle of
    # 2,900 characters with every fourth a changed digit
    n = MAX_READ // 3 - 10
    zh = [rng.choice(HAN) for _ in range(n)]
    lo = (n - 2_900) // 2
    zh_a, zh_b = list(zh), list(zh)
    for k in range(lo, lo + 2_900, 4):
        zh_a[k], zh_b[k] = str(k % 10), str((k + 1) % 10)
    out.append(("chinese-whole", zh_a, zh_b))
    return [(name, ("" if name == "chinese-whole" else " ").join(a), ("" if name == "chinese-whole" else " ").join(b))
            for name, a, b in out]


def _best(f, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def _work(a: str, b: str) -> int:
    """The units the damaged-twin search spent on the pair."""
    import numpy as np

    from streamdedup._kernels import readonly
    from streamdedup._kernels import revision as K
    from streamdedup._kernels import revitems as I

    buf = np.frombuffer(a.encode() + b.encode(), np.uint8)
    off = np.array([0, len(a.encode()), buf.shape[0]], np.int64)
    meta = np.empty((1, K.META), np.int64)
    K.revisions(readonly(buf), readonly(off), R.HEAD_CHARS, -1, *RK._tables(), RK.WORK_BUDGET,
                np.empty((1, K.STORE_ROWS, I.ROW), np.int32), np.empty((1, K.STORE_ROWS, 2), np.int64), meta)
    return int(meta[0, K.M_WORK])


class _Over(Exception):
    pass


def _capped(f, cap: float) -> float | None:
    def stop(*_):
        raise _Over

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, cap)
    try:
        t = time.perf_counter()
        f()
        return time.perf_counter() - t
    except _Over:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reference", action="store_true", help="time the Python rules too")
    p.add_argument("--cap", type=float, default=60.0, help="seconds the Python rules get a case")
    p.add_argument("--max-bytes", type=int, default=1_000_000)
    args = p.parse_args()
    RK.detect("a b", "a c")  # compiled (or loaded) before timing
    print(f"{'case':<20}{'words':>16}{'bytes':>20}{'compiled ms':>13}{'work':>10}{'partial':>9}  {'read as':<16}"
          + (f"{'python s':>10}" if args.reference else ""))
    for name, a, b in cases(args.max_bytes):
        ea, eb = a.encode(), b.encode()  # the engine holds canonical texts as UTF-8
        ms = _best(lambda: RK.detect_bytes(ea, eb)) * 1e3
        r = RK.detect_bytes(ea, eb)
        work = _work(a, b)
        line = (f"{name:<20}{len(a.split()):>8}/{len(b.split()):<7}{len(ea):>10}/{len(eb):<9}"
                f"{ms:>13.2f}{work:>10}{str(r.partial):>9}  {'+'.join(r.kinds) or 'copy':<16}")
        if args.reference:
            s = _capped(lambda: R.detect(a, b), args.cap)
            line += f"{'>' + str(args.cap) if s is None else f'{s:.2f}':>10}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
