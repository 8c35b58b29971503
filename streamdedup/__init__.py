"""streamdedup: a streaming near-duplicate filter for Kafka news pipelines.

The public API is stable: :func:`load_config` and :class:`Fingerprinter` (with
:class:`FingerprintBatch`); later layers (engine, Kafka runtime) build on them.
"""

from streamdedup.config import Config, load_config
from streamdedup.errors import ConfigError, IncompatibleFingerprintError, InputError, StreamdedupError
from streamdedup.sketch.fingerprint import FingerprintBatch, Fingerprinter, FingerprintParams

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
__version__ = "0.1.0"
