"""The package's layers, checked by import-linter (the contracts in pyproject.toml): each layer
imports only itself and the layers under it, no module of a package imports one that imports it
back, no runtime imports another's modules (and the plumbing they share imports none of them),
and the pure core imports no Kafka client, faust or rocksdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_layer_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout and "5 kept" in out.stdout, out.stdout[-2000:]


def test_at_most_eight_modules_lie_outside_the_layer_folders() -> None:
    top = sorted(p.name for p in (ROOT / "streamdedup").glob("*.py"))
    assert len(top) <= 8, top


def test_no_package_shadows_a_standard_library_module() -> None:
    packages = {p.parent.name for p in (ROOT / "streamdedup").rglob("__init__.py")}
    assert not packages & set(sys.stdlib_module_names), packages & set(sys.stdlib_module_names)
