"""The pure core imports no Kafka client, no faust and no rocksdict (STYLE.md).

Each module is imported in a fresh interpreter with an import hook that records every attempt to
import an I/O library, so a guarded ``try: import confluent_kafka`` counts too, and the failure
names the module that pulled it in.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pure_modules() -> list[str]:
    """Every module of the pure core: the source modules of pyproject's "pure core" contract
    (import-linter checks their static imports; this probe, the imports that run)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    roots = next(c["source_modules"] for c in contracts if c["type"] == "forbidden" and "pure core" in c["name"])
    out = ["streamdedup"]
    for name in roots:
        out.append(name)
        path = ROOT / Path(*name.split("."))
        if path.is_dir():
            out += sorted(m.name for m in pkgutil.walk_packages([str(path)], prefix=name + ".") if not m.ispkg)
    return out


PURE = _pure_modules()
IO = ["confluent_kafka", "faust", "aiokafka", "rocksdict"]

_PROBE = r"""
import importlib, json, sys
IO = {io!r}
attempts = []

class Recorder:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in IO:
            attempts.append(name)
        return None

sys.meta_path.insert(0, Recorder())
report = {{}}
for module in {pure!r}:
    importlib.import_module(module)
    report[module] = sorted(set(attempts) | {{m for m in sys.modules if m.split(".")[0] in IO}})
print(json.dumps(report))
"""


def _run(pure: list[str]) -> dict[str, list[str]]:
    code = _PROBE.format(io=IO, pure=pure)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_pure_core_imports_no_io_library() -> None:
    assert len(PURE) > 40 and "streamdedup.engine.deduplicator" in PURE and "streamdedup.text.decode" in PURE
    report = _run(PURE)
    assert list(report) == PURE
    first_offender = next(((m, io) for m, io in report.items() if io), None)
    assert first_offender is None, f"{first_offender[0]} imports {first_offender[1]}"


def test_the_probe_detects_an_io_import() -> None:
    """The check is not vacuous: the RocksDB store does import rocksdict."""
    pytest.importorskip("rocksdict")
    report = _run(["streamdedup", "streamdedup.state.rocks"])
    assert report["streamdedup"] == []
    assert "rocksdict" in report["streamdedup.state.rocks"]


def test_the_library_never_imports_its_wiring_back() -> None:
    """``topologies/`` wires the library onto Kafka; nothing in ``streamdedup`` imports it."""
    import ast

    root = ROOT / "streamdedup"
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            offenders += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[0] == "topologies"]
    assert offenders == []
