"""Is Numba's on-disk cache of the pipeline's kernels there, and is a kernel compiling now?

Numba compiles a kernel on its first call (seconds each, ~17 s of CPU for a file-mode run) and caches the
machine code per function: an index ``<module>.<function>-<line>.py313.nbi`` plus ``.nbc`` data,
in ``$NUMBA_CACHE_DIR/<dir>_<hash of the source directory>/`` when that variable is set, else
in ``__pycache__`` next to the source, else (read-only install) in the user's cache directory.
An index entry loads only if the source file is unchanged and the entry was compiled for this
CPU and this bytecode. Rather than repeat those rules, :func:`missing_kernels` asks each
kernel's own cache object the same questions Numba asks before it compiles. It does not know
the argument types of the coming call: a kernel cached for one ``minhash.storage_bits`` (the
arena's dtype) still compiles once for another: :func:`on_first_compile` tells when a compile
actually starts (the CLI's notice).
"""

from __future__ import annotations

from importlib import import_module
from typing import Callable

from numba.core import event

#: the kernels Python calls in a pipeline run (file mode, Kafka, a staged topology's roles,
#: explain); the kernels they call are compiled into the same cached code
PIPELINE_KERNELS = (
    "jsonscan.split_lines",
    "jsonscan.scan_lines",
    "jsonscan.gather",
    "jsonscan.assemble",
    "fingerprint.fingerprint_batch",
    "fingerprint.unicode_scan",
    "decide.decide_batch",
    "records.encode_batch",
    "evidence.gram_jaccards",
    "evidence.near_word_share",
    "blocks.block_mask",
    "records.restore_batch",
    "arena.live_bytes",
    "arena.regrow",
    "index.rehash",
    "verify.compare_pair",
    "fprecords.encode_batch",
    "fprecords.decode_sources",
    "fprecords.decode_prints",
    "revision.revisions",
    "blocks.left_out",
    "sketches.sketch_batch",
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
    from streamdedup._kernels import decide

    try:
        return decide.decide_batch._cache._cache_path
    except AttributeError:
        return "none (NUMBA_DISABLE_JIT, or a Numba with other cache internals)"


class _FirstCompile(event.Listener):
    def __init__(self, callback: Callable[[], None], package: str):
        self.callback = callback
        self.prefix = package + "."
        self.fired = False

    def on_start(self, ev: event.Event) -> None:
        # "numba:compile" starts only after a cache miss (Dispatcher.compile tries the cache
        # first): a kernel loaded from the cache says nothing
        if not self.fired and ev.data["dispatcher"].py_func.__module__.startswith(self.prefix):
            self.fired = True
            self.callback()

    def on_end(self, ev: event.Event) -> None:
        pass


def on_first_compile(callback: Callable[[], None], package: str = __package__) -> Callable[[], None]:
    """Call ``callback`` once, when Numba starts compiling a kernel of ``package`` in this process
    (not when it loads one from the cache). Returns the function that stops listening."""
    listener = _FirstCompile(callback, package)
    event.register("numba:compile", listener)
    return lambda: event.unregister("numba:compile", listener)
