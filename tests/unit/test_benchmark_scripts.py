"""Benchmark scripts that edit the package's own source keep up with it."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import streamdedup._kernels.fingerprint as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fingerprint_parts  # noqa: E402


def test_fingerprint_parts_finds_every_part_it_switches_in_the_kernel() -> None:
    """benchmarks/fingerprint_parts.py puts a switch before each part of the fingerprint kernel
    by replacing the part's line; a kernel edited so that a line is gone would stop the script,
    so the lines are checked here, where the kernel's change is made."""
    src = inspect.getsource(F.fingerprint_batch.py_func)
    missing = [line.strip() for line, _ in fingerprint_parts.SWITCHES if src.count(line) != 1]
    assert missing == []
    # every part a row leaves out has its switch
    bits = 0
    for _, skip in fingerprint_parts.ROWS:
        bits |= skip
    assert bits == (1 << len(fingerprint_parts.SWITCHES)) - 1
