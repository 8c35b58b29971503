"""Running a stream of documents through engines the ways the engine tests compare: in batches
of any size, and split across a restart on the same RocksDB state."""

from __future__ import annotations

from typing import Callable

from streamdedup import load_config
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.state.rocks import RocksStore


def cfg(**env: str):
    """The default config with ``STREAMDEDUP_<KEY>`` overrides (``VERIFY__EXACT_EVIDENCE="false"``)."""
    return load_config(environ={f"STREAMDEDUP_{k}": v for k, v in env.items()})


def in_batches(engine: Deduplicator, docs: list[Document], batch: int) -> list:
    """The decisions of ``docs`` given to ``engine`` ``batch`` at a time."""
    out = []
    for i in range(0, len(docs), batch):
        out.extend(engine.process(docs[i:i + batch]))
    return out


def across_restart(config, docs: list[Document], path: str, split: int, batches: tuple[int, int],
                   key: Callable) -> tuple[list, Deduplicator]:
    """``key`` of every decision when the first ``split`` documents go to one engine, which is
    closed, and the rest to a second one opened on the same state (``batches``: the batch sizes
    before and after); returns them and the second engine (closed)."""
    first = Deduplicator(config, RocksStore(path))
    part = in_batches(first, docs[:split], batches[0])
    first.close()
    second = Deduplicator(config, RocksStore(path))
    part += in_batches(second, docs[split:], batches[1])
    second.close()
    return [key(d) for d in part], second
