"""The command line's start-up cost: what ``import streamdedup.cli`` loads, what a run loads, and the
process set-up of ``cli._startup`` (collector, OpenBLAS threads, Numba without SciPy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_command_line_loads_no_numeric_or_model_library() -> None:
    loaded = _python("import sys, json\nimport streamdedup, streamdedup.cli\n"
                     "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert not {"numpy", "numba", "pydantic", "rich", "scipy"} & set(loaded)


def test_the_public_names_still_import_from_the_package() -> None:
    import streamdedup

    assert {"Config", "load_config", "Fingerprinter", "FingerprintBatch", "FingerprintParams"} <= set(dir(streamdedup))
    from streamdedup import Config, Fingerprinter, load_config

    assert Config is type(load_config(environ={})) and Fingerprinter.__module__ == "streamdedup.sketch.fingerprint"


def test_a_file_run_loads_only_its_own_commands_modules(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": "a", "text": "one story about the markets"}\n')
    code = ("import sys, json\nfrom streamdedup.cli import main\n"
            f"sys.argv = ['streamdedup', 'run', '--input', {str(data)!r}, '--output-dir', {str(tmp_path / 'out')!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = set(_python(code))
    assert "streamdedup.runtime.filemode" in loaded
    others = {"streamdedup.cli.demo", "streamdedup.cli.explain", "streamdedup.cli.inspect", "streamdedup.cli.ui",
              "streamdedup.cli.tune", "streamdedup.cli.bench", "streamdedup.tools.inspection.reader", "scipy"}
    assert not others & loaded


def test_startup_loads_numba_without_scipy_with_one_blas_thread_and_restores_the_process() -> None:
    code = """
import gc, json, os, sys
frozen = gc.get_freeze_count()
from streamdedup.cli import _startup
os.environ.pop("OPENBLAS_NUM_THREADS", None)
_startup.begin()
collector_during_imports = gc.isenabled()
_startup.load_numeric()
import numba.np.arraymath as arraymath
report = {"collector_during_imports": collector_during_imports, "scipy_loaded": "scipy" in sys.modules,
          "blas_probe": arraymath._HAVE_BLAS, "env_after": os.environ.get("OPENBLAS_NUM_THREADS")}
_startup.done()
report["collector_after"] = gc.isenabled()
report["frozen"] = gc.get_freeze_count() > frozen
try:
    import scipy  # noqa: F401
    report["scipy_imports_after"] = True
except ImportError:
    report["scipy_imports_after"] = "scipy" not in sys.modules  # not installed: nothing left blocked
print(json.dumps(report))
"""
    report = _python(code)
    assert report == {"collector_during_imports": False, "scipy_loaded": False, "blas_probe": False, "env_after": None,
                      "collector_after": True, "frozen": True, "scipy_imports_after": True}


def test_startup_leaves_a_process_that_is_not_the_command_line_alone() -> None:
    code = """
import gc, json, sys
frozen = gc.get_freeze_count()  # some builds start with objects frozen already (3.12.1: 375)
from streamdedup.cli import _startup
_startup.load_numeric()
_startup.done()
print(json.dumps({"numba": "numba" in sys.modules, "collector": gc.isenabled(),
                  "frozen": gc.get_freeze_count() - frozen}))
"""
    assert _python(code) == {"numba": False, "collector": True, "frozen": 0}
