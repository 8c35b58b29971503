"""Is Numba's on-disk cache of the pipeline's kernels there? (The CLI warns before compiling.)

Numba compiles a kernel on its first call (tens of seconds for the decide loop) and caches the
machine code per function: an index ``<module>.<function>-<line>.py311.nbi`` plus ``.nbc`` data,
in ``$NUMBA_CACHE_DIR/<dir>_<hash of the source directory>/`` when that variable is set, else
in ``__pycache__`` next to the source, else (read-only install) in the user's cache directory.
An index entry loads only if the source file is unchanged and the entry was compiled for this
CPU and this bytecode. Rather than repeat those rules, :func:`missing_kernels` asks each
kernel's own cache object the same questions Numba asks before it compiles. It does not know
the argument types of the coming call: a kernel cached for one ``minhash.storage_bits`` (the
arena's dtype) still compiles once for another.
"""

from __future__ import annotations

from importlib import import_module

#: the kernels Python calls in a pipeline run (file mode, Kafka, a staged topology's roles,
#: explain); the kernels they call are compiled into the same cached code
PIPELINE_KERNELS = (
    "jsonscan.split_lines",
    "jsonscan.scan_lines",
    "jsonscan.gather",
    "jsonscan.assemble",
    "fingerprint.fingerprint_batch",
    "decide.decide_batch",
    "records.encode_batch",
    "records.restore_batch",
    "arena.live_bytes",
    "verify.compare_pair",
    "fprecords.encode_batch",
    "fprecords.decode_sources",
    "fprecords.decode_prints",
)


def _cached(dispatcher) -> bool:
    # Numba's own load test (numba.core.caching.Cache.load_overload): the index must exist and
    # match the current source, and one entry's key must match this CPU and this bytecode.
    try:
        cache = dispatcher._cache
        index = cache._cache_file._load_index()
        codegen = dispatcher.targetctx.codegen()
        return any(cache._index_key(key[0], codegen) == key for key in index)
    except AttributeError:
        # NUMBA_DISABLE_JIT (nothing compiles) or a Numba whose cache internals moved:
        # say nothing rather than warn wrongly
        return True


def missing_kernels(names: tuple[str, ...] = PIPELINE_KERNELS) -> list[str]:
    """The kernels of ``names`` (``module.function`` under ``_kernels``) Numba would compile on
    their next call because no usable cache entry exists for them."""
    missing = []
    for name in names:
        module, _, function = name.partition(".")
        if not _cached(getattr(import_module(f"{__package__}.{module}"), function)):
            missing.append(name)
    return missing


def cache_dir() -> str:
    """The directory Numba keeps the kernels' cache in (the same for every kernel module)."""
    from . import decide

    try:
        return decide.decide_batch._cache._cache_path
    except AttributeError:
        return "none (NUMBA_DISABLE_JIT, or a Numba with other cache internals)"
