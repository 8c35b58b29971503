"""One contract, two stores: the in-memory twin must behave like RocksDB."""

from __future__ import annotations

import numpy as np
import pytest

from streamdedup.state import MemoryStore, StateBatch
from streamdedup.state.pipelined import PipelinedStore
from streamdedup.state.rocks import RocksStore


@pytest.fixture(params=["memory", "rocksdb", "rocksdb-sync", "pipelined-memory", "pipelined-rocksdb"])
def make_store(request, tmp_path):
    def make():
        if request.param.endswith("memory"):
            inner = MemoryStore()
        else:  # sync: every commit's WAL synced with flush_wal, the path file mode and Kafka use
            inner = RocksStore(str(tmp_path / "db"), sync=request.param.endswith("sync"))
        return PipelinedStore(inner) if request.param.startswith("pipelined") else inner

    return make


def test_pipelined_reads_see_the_batch_in_flight_and_commits_keep_their_order(tmp_path) -> None:
    store = PipelinedStore(RocksStore(str(tmp_path / "db")))
    for k in range(20):
        store.commit(StateBatch(puts=[(k, bytes([k]))], meta=bytes([k])))
        assert store.get_many([k, max(0, k - 1)]) == [bytes([k]), bytes([max(0, k - 1)])]
    store.commit(StateBatch(delete_range=(0, 10)))
    assert [s for s, _ in store.iter_from(0)] == list(range(10, 20))
    assert store.get_meta() == bytes([19])
    store.close()


def test_pipelined_commit_failure_surfaces_at_the_next_call() -> None:
    class Failing(MemoryStore):
        def commit(self, batch: StateBatch) -> None:
            raise OSError("disk full")

    store = PipelinedStore(Failing())
    store.commit(StateBatch(meta=b"m"))
    with pytest.raises(OSError, match="disk full"):
        store.commit(StateBatch(meta=b"n"))


def test_empty_store_has_no_meta_and_no_records(make_store) -> None:
    store = make_store()
    assert store.get_meta() is None
    assert list(store.iter_from(0)) == []
    assert store.get_many([0, 5]) == [None, None]


def test_commit_puts_meta_and_iterates_in_seq_order(make_store) -> None:
    store = make_store()
    store.commit(StateBatch(puts=[(5, b"five"), (1, b"one"), (300, b"big"), (2, b"two")], meta=b"m1"))
    assert store.get_meta() == b"m1"
    assert list(store.iter_from(0)) == [(1, b"one"), (2, b"two"), (5, b"five"), (300, b"big")]
    assert list(store.iter_from(3)) == [(5, b"five"), (300, b"big")]
    assert store.get_many([2, 3, 300]) == [b"two", None, b"big"]


def test_delete_range_and_deletes(make_store) -> None:
    store = make_store()
    store.commit(StateBatch(puts=[(s, bytes([s])) for s in range(10)]))
    store.commit(StateBatch(delete_range=(0, 4), deletes=[7]))
    assert [s for s, _ in store.iter_from(0)] == [4, 5, 6, 8, 9]


def test_batch_is_applied_whole_put_after_delete(make_store) -> None:
    store = make_store()
    store.commit(StateBatch(puts=[(1, b"a")]))
    # deleting and re-putting in one batch: the put wins (deletes apply first)
    store.commit(StateBatch(puts=[(1, b"b")], delete_range=(0, 2), meta=b"m"))
    assert store.get_many([1]) == [b"b"]


def test_meta_survives_reopen_for_rocksdb(tmp_path) -> None:
    path = str(tmp_path / "db")
    store = RocksStore(path)
    store.commit(StateBatch(puts=[(3, b"x")], meta=b"meta"))
    store.close()
    again = RocksStore(path)
    assert again.get_meta() == b"meta"
    assert list(again.iter_from(0)) == [(3, b"x")]
    assert again.disk_bytes() > 0
    again.close()


def test_a_state_with_its_metadata_among_the_records_is_read_and_moved(tmp_path) -> None:
    """The layout before the metadata had a column family of its own."""
    from rocksdict import Options, Rdict

    from streamdedup.state.rocks import _key

    path = str(tmp_path / "db")
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    old = Rdict(path, options=opts)
    old[b"m"] = b"old meta"
    old[_key(4)] = b"four"
    old.close()
    store = RocksStore(path)
    assert store.get_meta() == b"old meta"
    assert list(store.iter_from(0)) == [(4, b"four")]
    store.commit(StateBatch(puts=[(5, b"five")]))  # no metadata: nothing moves yet
    assert store.get_meta() == b"old meta"
    store.commit(StateBatch(puts=[(6, b"six")], meta=b"new meta"))
    assert store.get_meta() == b"new meta"
    store.close()
    again = RocksStore(path)
    assert again.get_meta() == b"new meta"
    assert list(again.iter_from(0)) == [(4, b"four"), (5, b"five"), (6, b"six")]
    assert again._db.get(b"m") is None  # gone from among the records
    again.close()


def test_evicted_records_files_are_compacted_away(tmp_path) -> None:
    """Files of records that were all evicted do not stay on disk: the evicted prefix is
    compacted every PREFIX_COMPACTION_EVERY evictions (moved down whole, they would not be)."""
    from streamdedup.state.rocks import PREFIX_COMPACTION_EVERY, _key

    store = RocksStore(str(tmp_path / "db"))
    rng = np.random.default_rng(3)
    per, window, seq = 100, 2000, 0
    for b in range(3 * PREFIX_COMPACTION_EVERY):
        puts = [(seq + j, rng.bytes(1000)) for j in range(per)]
        seq += per
        lo = max(0, seq - window)
        store.commit(StateBatch(puts=puts, delete_range=(max(0, lo - per), lo) if lo else None, meta=b"%d" % b))
    live = [s for s, _ in store.iter_from(0)]
    assert live == list(range(seq - window, seq))
    store._compactor.join()  # the last compaction runs on a thread of its own
    boundary = _key(seq - window - per * (PREFIX_COMPACTION_EVERY + 1))
    records = [f for f in store._db.live_files() if f["start_key"].startswith(b"r")]
    assert records and all(f["end_key"] >= boundary for f in records)
    store.close()
