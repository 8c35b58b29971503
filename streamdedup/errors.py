"""One exception root with a small subclass per subsystem.

Callers at the boundary (file mode, Kafka) catch :class:`StreamdedupError` and turn it into a
dead-letter record; everything else is a bug and should surface.
"""

from __future__ import annotations


class StreamdedupError(Exception):
    """Root of every error streamdedup raises on purpose."""


class ConfigError(StreamdedupError, ValueError):
    """A setting is missing, malformed or inconsistent. The message names the setting."""


class InputError(StreamdedupError, ValueError):
    """A document cannot be processed (empty, wrong type, not UTF-8, too large)."""


class IncompatibleFingerprintError(StreamdedupError, ValueError):
    """Two fingerprints were built with different parameters and cannot be compared."""


class FingerprintRecordError(StreamdedupError, ValueError):
    """A fingerprint record (``pipeline.fingerprints``) is truncated, garbled or of an unknown version.

    ``index`` is its position in the decoded list.
    """

    def __init__(self, message: str, index: int = -1):
        super().__init__(message)
        self.index = index


class EngineStoppedError(StreamdedupError):
    """An earlier batch of this engine failed: it decides nothing more (restart from the state)."""


class StateError(StreamdedupError):
    """The state store cannot be opened or written."""


class StateLockedError(StateError):
    """Another process holds the state directory (RocksDB's lock): this one can only wait."""


class MissingExtraError(StreamdedupError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


class InspectError(StreamdedupError, ValueError):
    """Decided records cannot be read back (no such output, topic or position)."""
