"""The verification arena: signatures survive wrap-around and growth of the byte ring."""

from __future__ import annotations

import random

import numpy as np

from streamdedup.engine import arena as arena_mod
from streamdedup._kernels import arena as KA
from streamdedup.engine.arena import Arena
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.state import MemoryStore
from tests.unit.test_engine import _key, cfg, run, story, typo


def test_signatures_read_back_after_wraps_and_growth(monkeypatch) -> None:
    monkeypatch.setattr(arena_mod, "MIN_RING", 1000)  # not a power of two: wraps land anywhere
    rng = random.Random(3)
    cap = 8
    a = Arena(cap, 16, 8)
    slot_seq = np.full(cap, -1, dtype=np.int64)
    slot_time = np.zeros(cap, dtype=np.int64)
    scratch = np.zeros(4096, dtype=np.uint8)
    sigs: dict[int, bytes] = {}
    wrapped = False
    for seq in range(400):
        sig = bytes(rng.randrange(256) for _ in range(rng.choice([0, 5, 60, 300, 900])))
        seq_lo = max(0, seq + 1 - cap)
        a.reserve(len(sig), slot_seq, slot_time, seq_lo, -1, seq)
        slot = seq % cap
        buf = np.frombuffer(sig, dtype=np.uint8) if sig else np.zeros(1, np.uint8)
        start = int(a.state[KA.A_CURSOR])
        wrapped |= start % a.buf.shape[0] + len(sig) > a.buf.shape[0]
        KA.put(slot, np.arange(16, dtype=np.uint32), 8, 3, 4, 4, np.uint64(5), buf, 0, len(sig), *a.arrays())
        slot_seq[slot] = seq
        sigs[seq] = sig
        for live in range(seq_lo, seq + 1):
            got = KA.signature(live % cap, a.sig_start, a.sig_len, a.buf, scratch).tobytes()
            assert got == sigs[live], (seq, live)
    assert wrapped and a.grown > 0


def test_decisions_do_not_depend_on_the_ring_size(monkeypatch) -> None:
    # long stories (~200-symbol signatures) in a 16-document index: the small ring wraps and grows
    bases = [story(900 + k, 500) for k in range(12)]
    rng = random.Random(5)
    docs = []
    for k in range(90):
        text = bases[k % 12] if k < 12 else typo(bases[rng.randrange(12)], k, 4)
        docs.append(Document(f"d{k}", text, k))
    c = cfg(ENGINE__MAX_DOCUMENTS="16")
    monkeypatch.setattr(arena_mod, "MIN_RING", 700)
    small = Deduplicator(c, MemoryStore())
    got = run(small, docs, batch=5)
    assert small.arena.state[0] > small.arena.buf.shape[0]  # the cursor went round the ring
    monkeypatch.setattr(arena_mod, "MIN_RING", 1 << 20)
    big = Deduplicator(c, MemoryStore())
    want = run(big, docs, batch=5)
    assert big.arena.grown == 0 and big.arena.state[0] < big.arena.buf.shape[0]
    assert [_key(d) for d in got] == [_key(d) for d in want]
    assert sum(d.status == "duplicate" for d in got) > 40
