"""What the ``streamdedup`` process does once before a command, so that start-up costs less.

A file-mode run of a few thousand lines is mostly start-up: Python, NumPy, Numba and the
kernels' cache, the configuration's models. Three costs of it are not the program's own work,
and the command line, which owns its process, avoids them (a library user's process is left as
it is: these run only when ``streamdedup`` is the program, not under ``CliRunner``):

- the cyclic garbage collector walks the growing heap again and again while the modules load
  (~170,000 tracked objects once a file run's modules and Numba's registries are in), and all
  of it once more at exit: ~0.2 s of CPU together. It is off during the imports, and what they
  built is then frozen (:func:`gc.freeze`): kept out of every later collection, the one at exit
  included. It is on again for the command's work;
- OpenBLAS starts a thread per core when NumPy loads (~0.05 s of CPU and wall on two cores);
  no command multiplies matrices, so this process's NumPy gets one (``OPENBLAS_NUM_THREADS``
  for the import only: child processes get the environment they had);
- Numba's CPU target imports SciPy when it is installed (a dependency of the ``bench``
  extra's datasketch), ~0.3 s of CPU, only to learn whether ``np.dot`` and ``np.linalg`` may be
  compiled; no kernel of this package uses them, so that import is made to fail while Numba
  loads (``numba.np.arraymath``), and SciPy imports normally afterwards.
"""

from __future__ import annotations

import gc
import os
import sys

_state = {"entry": False, "collector_off": False}


def begin() -> None:
    """The process starts a command: the collector is off until :func:`done`."""
    _state["entry"] = True
    if gc.isenabled():
        gc.disable()
        _state["collector_off"] = True


def load_numeric() -> None:
    """Import NumPy and Numba (its CPU target included) with one OpenBLAS thread and without
    SciPy, if this process is the command line's and neither is loaded yet."""
    if not _state["entry"] or "numba.np.arraymath" in sys.modules:
        return
    set_threads = "numpy" not in sys.modules and "OPENBLAS_NUM_THREADS" not in os.environ
    block_scipy = "scipy" not in sys.modules
    if set_threads:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if block_scipy:
        sys.modules["scipy"] = None  # type: ignore[assignment]  # `import scipy` raises ImportError
    try:
        import numpy  # noqa: F401
        import numba.np.arraymath  # noqa: F401  (the CPU target's registries: Numba's SciPy probe)
    finally:
        if set_threads:
            del os.environ["OPENBLAS_NUM_THREADS"]
        if block_scipy and sys.modules.get("scipy", 0) is None:
            del sys.modules["scipy"]


def done() -> None:
    """The command's modules are loaded: freeze what they built and turn the collector on."""
    if _state["collector_off"]:
        _state["collector_off"] = False
        gc.freeze()
        gc.enable()
