"""Optional dependencies (the ``tools``, ``bench`` and ``faust`` extras), imported where used.

:func:`require` imports one or raises :class:`~streamdedup.errors.MissingExtraError` with a
one-line message naming the extra to install; the CLI prints that line and exits with 1.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from streamdedup.errors import MissingExtraError


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature`` or say which extra provides it.

    An ImportError raised *inside* an installed package (one of its own dependencies is broken)
    is not about the extra and propagates unchanged.

    >>> require("json", "tools", "a doctest").__name__
    'json'
    >>> require("no_such_module_xyz", "tools", "streamdedup tune --plot")
    Traceback (most recent call last):
    ...
    streamdedup.errors.MissingExtraError: streamdedup tune --plot needs no_such_module_xyz, which is not installed: pip install 'streamdedup[tools]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        if exc.name is not None and exc.name != module and exc.name.partition(".")[0] != top:
            raise
        raise MissingExtraError(
            f"{feature} needs {top}, which is not installed: pip install 'streamdedup[{extra}]'"
        ) from exc
