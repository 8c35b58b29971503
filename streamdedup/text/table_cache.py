"""The Unicode tables on disk, beside Numba's kernel cache: built once per installation, not
once per process.

Building the tables (``unicode_map.tables``) runs NFKC, case folding and a regular expression
over every code point below ``TABLE_SIZE``: ~0.5 s, paid by every process that meets a
non-ASCII text, mid-run. Loading them from an ``.npz`` file takes milliseconds. A file is used
only if its name's digest matches: the settings, the Unicode version of this Python, OpenCC's
version (the Traditional fold) and the source of every module the build reads; anything else
builds anew. The directory is Numba's (``$NUMBA_CACHE_DIR``, else ``__pycache__`` beside the
text package, else the user's cache directory), so ``streamdedup warm-up`` and a container
image's cache carry the tables too. A directory that cannot be written costs only the build.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import unicodedata
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import numpy as np

#: the modules whose source decides the tables' contents
_SOURCES = ("unicode_map.py", "charclass.py", "scripts.py", "_script_ranges.py", "fold.py")
_HERE = Path(__file__).resolve().parent


def _opencc_version() -> str:
    try:
        return version("opencc")
    except PackageNotFoundError:
        return "-"


def digest(settings: tuple) -> str:
    """What the tables depend on, as a short hex digest (the cache file's name)."""
    h = hashlib.blake2b(digest_size=12)
    h.update(repr((settings, unicodedata.unidata_version, _opencc_version())).encode())
    for name in _SOURCES:
        h.update((_HERE / name).read_bytes())
    return h.hexdigest()


def _directories() -> list[Path]:
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return [Path(env) / "streamdedup-text"]
    out = [_HERE / "__pycache__"]
    try:
        out.append(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "streamdedup")
    except RuntimeError:  # no home directory (a uid without a passwd entry): the package's only
        pass
    return out


def load_or_build(settings: tuple, fields: tuple[str, ...], build: Callable[[], tuple]) -> tuple:
    """The arrays ``build()`` returns for ``settings`` (named ``fields``), from the cache when a
    file for them is there, else built and saved for the next process."""
    try:
        name = f"unicode-tables-{digest(settings)}.npz"
    except OSError:  # sources not readable (an install without .py files): no cache, build
        return build()
    for d in _directories():
        try:
            with open(d / name, "rb") as fh, np.load(fh) as f:
                arrays = tuple(f[k] for k in fields)
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
            continue  # absent, unreadable or cut short: the next directory, else build
        for a in arrays:
            a.setflags(write=False)
        return arrays
    arrays = build()
    for d in _directories():
        if _save(d, name, dict(zip(fields, arrays))):
            break
    return arrays


def _save(directory: Path, name: str, arrays: dict[str, np.ndarray]) -> bool:
    """Write atomically (a concurrent reader sees the old file or the whole new one)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep a service of another uid from reading it
            os.replace(tmp, directory / name)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return False
    return True
