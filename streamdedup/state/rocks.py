"""RocksDB state store through rocksdict (raw bytes mode).

Key layout: ``b"r" + seq as 8 big-endian bytes`` for records (so seq order is key order and
eviction is one ``delete_range``), ``b"m"`` for the metadata, in a column family of its own
(``meta``). Each :class:`StateBatch` is one RocksDB ``WriteBatch`` (across both families) written
with the WAL on, so a crash leaves either the whole micro-batch (records, deletions and input
positions) or none of it.

Why the metadata has a family of its own: written beside every batch's records, its key made
every flushed file span ``m`` .. the newest record, so each file overlapped all the others and
every compaction rewrote them (write amplification ~5 for keys written in order). Alone, the
records' files follow one another and mostly move down whole. Two things follow: the metadata
family's memtable never fills, so ``max_total_wal_size`` makes RocksDB flush it rather than
keep every WAL file; and files moved down whole are not rewritten when their records are
evicted, so the evicted prefix is compacted every ``PREFIX_COMPACTION_EVERY`` evictions.
A state written before (metadata in the default family) is read as it is and moved on the
first commit.
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
import threading
import time
from typing import Callable, Iterator

from rocksdict import Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from streamdedup.errors import StateError, StateLockedError
from streamdedup.state.base import StateBatch

_META = b"m"
_META_CF = "meta"
#: evictions between two compactions of the evicted prefix (see the module docstring)
PREFIX_COMPACTION_EVERY = 64
_SEQ = struct.Struct(">q")


def _key(seq: int) -> bytes:
    return b"r" + _SEQ.pack(seq)


#: state directories this process has open (a POSIX lock probe cannot see its own locks)
_OPEN: set[str] = set()


def _write_failure(path: str, exc: Exception) -> str:
    """One line for a failed state write; the commit that failed is lost with its batch, which
    is decided again after a restart (its outputs and offsets were never committed)."""
    text = str(exc)
    if "No space left on device" in text:
        return (f"state directory {path}: the disk is full (No space left on device); free space or move "
                f"state.dir, then restart: nothing is lost, the unfinished batch is decided again")
    return f"state directory {path}: write failed ({text}); after fixing it, restart: the unfinished batch is decided again"


def _check_unlocked(path: str) -> None:
    """Raise StateLockedError if another process holds RocksDB's lock on ``path``.

    RocksDB locks ``LOCK`` with a POSIX record lock (fcntl F_SETLK); probing the same lock
    tells a held state apart from any other open failure without reading error texts. Never
    probed for a directory this process holds: closing any descriptor of the file would drop
    the process's lock.
    """
    if os.path.realpath(path) in _OPEN:
        raise StateLockedError(f"state store at {path} is already open in this process")
    lock = os.path.join(path, "LOCK")
    if not os.path.exists(lock):
        return
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
    except OSError as exc:
        raise StateLockedError(f"state store at {path} is in use by another process") from exc
    finally:
        os.close(fd)


def open_waiting(path: str, sync: bool, stop: Callable[[], bool], poll_s: float = 0.5) -> "RocksStore | None":
    """Open the state; while another process holds it, wait as a standby (None if ``stop()``)."""
    announced = False
    while not stop():
        try:
            return RocksStore(path, sync=sync)
        except StateLockedError:
            if not announced:
                logging.getLogger("streamdedup.state").info(
                    "standby: state %s is owned by another processor; waiting to take over", path)
                announced = True
            time.sleep(poll_s)
    return None


class RocksStore:
    def __init__(self, path: str, sync: bool = False):
        os.makedirs(path, exist_ok=True)
        self._write_failed = False
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        # The hot path hardly reads the store (the index and the verification arena are in
        # memory; exact evidence reads an old original's record now and then), so a large
        # memtable buys nothing: 8 MB instead of 64 keeps RSS down (two memtables of 64 MB
        # were ~25 bytes per document at 5 M documents) and the flush at close short (21 ->
        # ~9 ms after a 19k-document file).
        opts.set_write_buffer_size(8 << 20)
        opts.create_missing_column_families(True)
        # the metadata family holds one key: without a cap its unflushed memtable would keep
        # every WAL file alive
        opts.set_max_total_wal_size(16 << 20)
        _check_unlocked(path)
        try:
            self._db = Rdict(path, options=opts, column_families={_META_CF: Options(raw_mode=True)})
        except Exception as exc:  # rocksdict raises plain Exception with the RocksDB status
            if "lock" in str(exc).lower():  # lost the race with another opener after the probe
                raise StateLockedError(f"state store at {path} is in use by another process") from exc
            raise StateError(f"cannot open state store at {path}: {exc}") from exc
        self._path = path
        _OPEN.add(os.path.realpath(path))
        self._meta = self._db.get_column_family(_META_CF)
        self._meta_cf = self._db.get_column_family_handle(_META_CF)
        # a state written before the metadata had its family: moved there on the first commit
        self._old_meta = self._db.get(_META) is not None
        self._evictions = 0
        self._compactor: threading.Thread | None = None
        # WAL always on: a killed process loses nothing. sync=True also fsyncs each batch,
        # which a power loss needs; one fsync per micro-batch, not per document. The write
        # itself is never a sync write: rocksdict holds the GIL through ``write`` (a synced
        # write stopped every other Python thread for the fsync, ~1.5 ms a batch and tens of ms
        # when the disk is busy), while ``flush_wal(True)`` (RocksDB's FlushWAL + SyncWAL: the
        # same durability for one writer) releases it.
        self._write_opts = WriteOptions()
        self._sync = sync

    def get_meta(self) -> bytes | None:
        meta = self._meta.get(_META)
        return self._db.get(_META) if meta is None and self._old_meta else meta

    def get_many(self, seqs: list[int]) -> list[bytes | None]:
        if not seqs:
            return []
        return self._db.get([_key(s) for s in seqs])

    def iter_from(self, seq: int) -> Iterator[tuple[int, bytes]]:
        it = self._db.iter(ReadOptions())
        it.seek(_key(seq))
        while it.valid():
            key = it.key()
            if not key.startswith(b"r"):
                break
            yield _SEQ.unpack(key[1:])[0], it.value()
            it.next()

    def commit(self, batch: StateBatch) -> None:
        if batch.before is not None:
            batch.before()
        wb = WriteBatch(raw_mode=True)
        if batch.delete_range is not None:
            lo, hi = batch.delete_range
            wb.delete_range(_key(lo), _key(hi))
        for s in batch.deletes:
            wb.delete(_key(s))
        for s, value in batch.puts:
            wb.put(_key(s), value)
        if batch.meta is not None:
            wb.put(_META, batch.meta, self._meta_cf)
            if self._old_meta:
                wb.delete(_META)
        try:
            self._db.write(wb, self._write_opts)
            if self._sync:
                self._db.flush_wal(True)
            if batch.meta is not None:
                self._old_meta = False
            if batch.delete_range is not None:
                self._evictions += 1
                if self._evictions % PREFIX_COMPACTION_EVERY == 0:
                    self._compact_prefix(batch.delete_range[1])
        except Exception as exc:  # rocksdict raises plain Exception with the RocksDB status
            self._write_failed = True
            raise StateError(_write_failure(self._path, exc)) from None

    def _compact_prefix(self, below: int) -> None:
        """Compact the records below seq ``below`` (evicted) on a thread of its own, unless the
        last one still runs: it takes 0.2-0.3 s of waiting on RocksDB's threads (the GIL
        released), which the commit that asked for it must not wait out."""
        if self._compactor is not None and self._compactor.is_alive():
            return

        def compact() -> None:
            try:
                self._db.compact_range(None, _key(below))
            except Exception as exc:  # nothing is lost: the evicted files stay until the next one
                logging.getLogger("streamdedup.state").warning("state directory %s: compaction failed: %s", self._path, exc)

        self._compactor = threading.Thread(target=compact, name="streamdedup-state-compact", daemon=True)
        self._compactor.start()

    def disk_bytes(self) -> int:
        total = 0
        for root, _, files in os.walk(self._path):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total

    def close(self) -> None:
        if self._compactor is not None:
            self._compactor.join()
        # the family's objects hold the database open: released before it closes
        self._meta = self._meta_cf = None
        try:
            self._db.close()
        except Exception as exc:
            # after a failed write RocksDB's close fails too ("Writer has previous error", its
            # final flush): the write's error is the one to report, not this one
            if not self._write_failed:
                raise StateError(_write_failure(self._path, exc)) from None
        finally:
            _OPEN.discard(os.path.realpath(self._path))
