"""No input stalls the revision test: the worst pairs found are read within a bound, and a
stream of them goes through a run like any other stream.

The attack: a long story and copies whose middle ~3,000 words differ in digits only, a change
every other word ("k4821" -> "k4822"): every changed figure has ~1,500 twins of its length to
be compared with, which in the reference implementation is quadratic (seconds a pair).
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import orjson

from streamdedup.engine import revision_kernel as RK

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("the company said its first quarter net profit rose from a year earlier analysts expected shares "
         "market trade oil price bank rate growth export government central output").split()


def attack(words: int = 100_000, changed: int = 3_000, copies: int = 1, seed: int = 1) -> tuple[str, list[str]]:
    """A story of ``words`` words and ``copies`` copies whose middle ``changed`` words differ in
    digits only, every other word a figure with letters ("k4821")."""
    rng = random.Random(seed)
    story = [rng.choice(WORDS) for _ in range(words)]
    lo = (words - changed) // 2
    for k in range(lo, lo + changed, 2):
        story[k] = f"k{rng.randrange(10 ** 6)}"
    out = []
    for c in range(copies):
        copy = list(story)
        for k in range(lo, lo + changed, 2):
            copy[k] = f"k{(int(story[k][1:]) + 1 + c) % 10 ** 6}"
        out.append(" ".join(copy))
    return " ".join(story), out


def test_the_worst_pair_is_read_within_its_bound_and_not_lost() -> None:
    story, (copy,) = attack()
    r = RK.detect(story, copy)
    # the figures changed: a revision, read in part (the damaged-twin search met its bound)
    assert r.revised and "figures" in r.kinds and r.partial, r
    small = RK.detect(story, copy, 64, None)
    assert small == r
    # a pair within the bound is read whole
    s2, (c2,) = attack(words=2_000, changed=40)
    assert not RK.detect(s2, c2).partial


def test_a_stream_of_worst_pairs_goes_through_file_mode(tmp_path: Path) -> None:
    """Six copies of the attack in file mode finish, every record decided once (the reference
    implementation took ~12 s a copy; a run that stalled would meet the timeout)."""
    story, copies = attack(copies=6)
    lines = [orjson.dumps({"id": "story", "text": story})] + [orjson.dumps({"id": f"copy{k}", "text": c})
                                                               for k, c in enumerate(copies)]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    # the kernels a run calls, compiled here first: the time limit is the run's, not a cold start's
    from streamdedup.config import load_config
    from streamdedup.warmup import fill

    fill.fill(load_config(environ={}), fill.NEEDS["all"])
    out = subprocess.run([sys.executable, "-m", "streamdedup.cli", "run", "--input", str(tmp_path / "in.jsonl"),
                          "--output-dir", str(tmp_path / "out")], capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    decided = {}
    for name in ("unique", "duplicates", "revisions", "dead_letter"):
        path = tmp_path / "out" / f"{name}.jsonl"
        if path.exists():
            for line in path.read_bytes().splitlines():
                obj = orjson.loads(line)
                decided[obj.get("id") or obj.get("line")] = name
    assert sorted(decided) == sorted(["story", *(f"copy{k}" for k in range(6))]), decided
    assert decided["story"] == "unique"
