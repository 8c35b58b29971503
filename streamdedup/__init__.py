"""streamdedup: a streaming near-duplicate filter for Kafka news pipelines.

The public API is stable: :func:`load_config` and :class:`Fingerprinter` (with
:class:`FingerprintBatch`); later layers (engine, Kafka runtime) build on them.
"""

from streamdedup.errors import ConfigError, IncompatibleFingerprintError, InputError, StreamdedupError

__all__ = [
    "Config",
    "ConfigError",
    "FingerprintBatch",
    "FingerprintParams",
    "Fingerprinter",
    "IncompatibleFingerprintError",
    "InputError",
    "StreamdedupError",
    "load_config",
]
__version__ = "0.3.0.dev0"

#: names imported on first use: ``import streamdedup.<anything>`` runs this file first, and the
#: fingerprint module pulls in NumPy and Numba (~0.5 s): the command line sets the process up
#: (garbage collector, thread pools) before that, and a command that needs no kernel skips it
_LAZY = {
    "Config": "streamdedup.config",
    "load_config": "streamdedup.config",
    "FingerprintBatch": "streamdedup.sketch.fingerprint",
    "Fingerprinter": "streamdedup.sketch.fingerprint",
    "FingerprintParams": "streamdedup.sketch.fingerprint",
}


def __getattr__(name: str):
    if name not in _LAZY:
        # an AttributeError lets `from streamdedup import <submodule>` import the submodule
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
