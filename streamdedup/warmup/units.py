"""The kernel cache's units: tiny workloads through the faces a run uses, so that each kernel
compiles for exactly the argument types the run passes it (see :mod:`streamdedup.warmup.fill`,
which shares them among processes, and :mod:`streamdedup.warmup.workers`, which runs a share).
"""

from __future__ import annotations

import gc
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import orjson

from streamdedup.config import Config, InputConfig

_STORY = "warm up the kernels with a short story about nothing in particular at all, told twice"


def sample_lines(inp: InputConfig) -> tuple[bytes, ...]:
    """Every kind of line file mode meets, in the shape ``inp`` decodes (its id, text and time
    fields: lines of another shape would all be dead letters, and nothing would reach the
    kernels that decide): fast ASCII, a copy, a near copy, a time field, an entity, escapes and
    HTML (the Python decoder's texts), a line that is not JSON, a blank line. No non-ASCII
    text: it takes the same kernels as an entity, and it would build the Unicode tables (~0.5 s)
    in a process that throws them away (the fingerprint unit compiles their pre-scan)."""
    first, rest = inp.text_fields[0], inp.text_fields[1:]
    time_key = inp.time_field or "time"

    def line(doc_id: str, text: str, time_ms: int | None = None) -> dict:
        # a multi-field feed (headline, body) gets the story in each of its text fields
        obj: dict = {inp.id_field: doc_id, first: text, **{f: text for f in rest}}
        if time_ms is not None:
            obj[time_key] = time_ms
        return obj

    return (
        orjson.dumps(line("a", _STORY)),
        orjson.dumps(line("b", _STORY)),
        orjson.dumps(line("c", _STORY + " and one more sentence", 1_700_000_000_000)),
        orjson.dumps(line("d", "Zurich &amp; Geneva: a story about nothing, " + _STORY)),
        orjson.dumps(line("e", 'a "quoted" <b>story</b> about nothing\nin particular')),  # escapes: Python's decoder
        b"not json",
        b"",
    )


#: the sample lines of the default input shape (``{"id": ..., "text": ...}``)
LINES = sample_lines(InputConfig())


def _small(cfg: Config) -> Config:
    """``cfg`` with a small, growing index: kernels compile per argument type, not size."""
    return cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"max_documents": 64, "index_sizing": "grow"})})


def _scan(cfg: Config) -> None:
    from streamdedup.engine.decisions import BatchDecisions
    from streamdedup.runtime.filemode import Summary, _Writer
    from streamdedup.pipeline import Preparer

    prep = Preparer(cfg)
    data = b"\n".join(sample_lines(cfg.input)) + b"\n"
    # file mode: a chunk as filemode._chunks scans it; its documents adjacent (their texts are
    # a view of the scan) and not (gathered by a kernel)
    scan, _ = prep.scanner.scan(np.frombuffer(data, dtype=np.uint8), final=True)
    prepared = prep.prepare(data, scan, 0, scan.n, lambda k: f"line:{k + 1}", 0)
    docs = prepared.docs
    for batch in (docs, docs[::2]):
        prepared.gather(batch)
    # file mode's output lines through its own writer (all unique: assemble takes the same
    # arrays for every kind of line)
    n = len(docs)
    decisions = BatchDecisions([str(k) for k in range(n)], np.arange(n, dtype=np.int64), np.zeros(n, np.int8),
                               np.zeros((n, 5), np.float32), np.zeros(n, np.uint8), {}, {}, cfg.verify)
    with tempfile.TemporaryDirectory(prefix="streamdedup-kernels-") as tmp:
        writer = _Writer(Path(tmp), Summary(), sync=False)
        try:
            writer.batch(data, scan, docs, prepared.slow, 0, decisions, None)()
        finally:
            writer.close()
    _scan_values(cfg)  # and Kafka's


def _scan_values(cfg: Config) -> None:
    """Kafka's record values: scanned one by one, then gathered; not file mode's lines and output
    (``split_lines``, ``assemble``: ~0.4 s of a cold Kafka start)."""
    from streamdedup.pipeline import Preparer

    for fmt in ("json", "text"):  # raw-text input (input.format: text) takes another scan kernel
        prep = Preparer(cfg.model_copy(update={"input": cfg.input.model_copy(update={"format": fmt})}))
        data, scan = prep.scan_values(list(sample_lines(cfg.input)[:4]) + [b""])
        prep.prepare(data, scan, 0, scan.n, lambda k: f"record:{k}", 0).gather()


def _fingerprint(cfg: Config) -> None:
    from streamdedup import _kernels as K
    from streamdedup.sketch.fingerprint import _NO_TABLES, Fingerprinter
    from streamdedup.text.unicode_map import tables

    Fingerprinter(cfg.fingerprint).fingerprint_batch([_STORY, _STORY + " again"])
    # the pre-scan of non-ASCII batches, compiled for the tables' types
    raw = K.readonly(np.frombuffer("Zürich".encode("utf-8"), dtype=np.uint8))
    t = _NO_TABLES
    K.fingerprint.unicode_scan(raw, K.readonly(np.array([0, raw.shape[0]])), t.first_ccc, t.last_ccc, t.fold_bits,
                               np.zeros(1, np.uint8))
    # the Unicode tables of this configuration, into their disk cache beside the kernels' (~0.5 s
    # once: a run's first non-ASCII story then loads them in milliseconds)
    c = cfg.fingerprint.canonical
    tables(c.nfkc, c.casefold, c.punctuation_to_space, c.fold_traditional != "off")


def _engine(cfg: Config, restore: bool = False) -> None:
    from streamdedup.engine.deduplicator import Deduplicator
    from streamdedup.sketch.fingerprint import Fingerprinter
    from streamdedup.state import MemoryStore

    cfg = _small(cfg)
    engine = Deduplicator(cfg, MemoryStore())
    # placeholder fingerprints: the decide path without the fingerprint kernels (their own unit)
    batch = Fingerprinter(cfg.fingerprint).placeholder_batch(3)
    engine.run_fingerprinted(list("abc"), batch, np.zeros(3, np.int64), np.full(3, -1, np.int64), np.arange(3, dtype=np.int64))
    if restore:
        Deduplicator(cfg, engine.store)


def _evidence(cfg: Config) -> None:
    """The exact-evidence kernels, through the engine's face (its answer to the decide loop's
    question) and explain's (``exact_grams``): one compiled specialization serves both."""
    from streamdedup._kernels.anchors import ANCHOR_WINDOW, _span_key
    from streamdedup.engine.deduplicator import Deduplicator
    from streamdedup.engine.evidence import NO_KEY, BatchTexts
    from streamdedup.state import MemoryStore
    from streamdedup.engine.verify import exact_grams

    a = np.frombuffer(_STORY.encode(), np.uint8)
    b = np.frombuffer(("another outlet's notice. " + _STORY).encode(), np.uint8)
    engine = Deduplicator(_small(cfg), MemoryStore())
    # each text's first anchor key with a count that makes it a block, a key the other text
    # lacks (a block the other carries is none): the block kernels run too
    keys = np.array([[_span_key(t, 0, t.shape[0], ANCHOR_WINDOW, *NO_KEY)] for t in (a, b)], np.uint32)
    texts = BatchTexts(np.concatenate([a, b]), np.array([0, a.shape[0]]), np.array([a.shape[0], b.shape[0]]), keys,
                       np.ones(2, np.int64), np.full((2, 1), 255, np.uint8))
    for blocks in (False, True):  # a noisy copy's or a short copy's question, and one about blocks
        engine.evidence.answer(texts, 1, np.arange(2), 0, blocks=blocks)
    exact_grams(_STORY.encode(), _STORY.encode())


def _revisions(cfg: Config) -> None:
    """The revision test of a linked pair, on canonical bytes as the engine holds them, and the
    reading of a revised pair without the boilerplate block only one text carries."""
    from streamdedup._kernels.anchors import ANCHOR_WINDOW, _span_key
    from streamdedup.engine.evidence import NO_KEY, Evidence
    from streamdedup.engine.revision_kernel import detect_bytes
    from streamdedup.state import MemoryStore

    a = np.frombuffer(_STORY.encode(), np.uint8)
    b = np.frombuffer(_STORY.replace("twice", "once corrected").encode(), np.uint8)
    detect_bytes(a, b)
    notice = np.frombuffer(("another outlet's notice. " + _STORY).encode(), np.uint8)
    key = np.array([_span_key(notice, 0, notice.shape[0], ANCHOR_WINDOW, *NO_KEY)], np.uint32)
    Evidence(MemoryStore(), 1, 1, 3).blocks_left_out(a, (np.zeros(0, np.uint32), np.zeros(0, np.uint8)), notice,
                                                     (key, np.full(1, 255, np.uint8)))


def _growth(cfg: Config) -> None:
    """A long stream rehashes the index and grows the signature ring."""
    from streamdedup.engine.arena import Arena
    from streamdedup.engine.index import CandidateIndex

    index = CandidateIndex(4, 8, 3, 8)
    index.grow(1, 0)
    fp_cfg = cfg.fingerprint
    arena = Arena(8, fp_cfg.minhash.num_perm, fp_cfg.minhash.storage_bits)
    arena.reserve(arena.buf.shape[0] + 1, index.slot_seq, index.slot_time, 0, 0, 0)


def _fprecords(cfg: Config) -> None:
    """A staged topology's fingerprint records of placeholder fingerprints: encoded as a worker
    does, decoded as the decider does. The decoded batch has the arrays of a fingerprinted one
    (``run_fingerprinted`` decides either with one compiled kernel: the engine's unit)."""
    from streamdedup.engine.checkpoint import Source
    from streamdedup.sketch.fingerprint import Fingerprinter
    from streamdedup.pipeline.fingerprints import FingerprintCodec

    fp = Fingerprinter(cfg.fingerprint)
    codec = FingerprintCodec(fp)
    values = codec.encode(fp.placeholder_batch(2), ["a", "b"], np.zeros(2, np.int64), [Source("in")], np.zeros(2, np.int64),
                          np.arange(2, dtype=np.int64))
    codec.decode([codec.encode_params(), *values, codec.encode_dead(Source("in"), 2, "decode", "not JSON")])


def _sketches(cfg: Config) -> None:
    """The evidence sketches of a text (what a state or fingerprint without texts keeps)."""
    from streamdedup.sketch import evidence_sketch
    from streamdedup.sketch.params import hash_key

    text = np.frombuffer(_STORY.encode(), np.uint8)
    evidence_sketch.of_texts(text, np.zeros(1, np.int64), np.array([text.shape[0]]), hash_key(cfg.fingerprint))


def _explain(cfg: Config) -> None:
    from streamdedup.sketch.fingerprint import Fingerprinter
    from streamdedup._kernels.evidence import contained, short_question
    from streamdedup._kernels.verify import is_duplicate
    from streamdedup.engine.verify import Fingerprint, compare, kernel_params

    batch = Fingerprinter(cfg.fingerprint).placeholder_batch(2)
    compare(Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1), cfg.verify, cfg.fingerprint.signature,
            full=True)
    # the rules compare() applies from Python when a pair reaches them (a short copy's question)
    params = kernel_params(cfg.verify, cfg.fingerprint.signature)
    short_question(1, 1, 0.0, params)
    contained(0.0, 0.0, params)
    is_duplicate(0, params)


@dataclass(frozen=True)
class Unit:
    run: Callable[[Config], None]
    #: the kernels it leaves in the cache (``module.function`` under ``_kernels``)
    kernels: tuple[str, ...]
    #: its compile time alone in a process, in CPU seconds (Numba's start-up included; measured
    #: on a 2-core VM, the collector off), to share units among processes
    seconds: float


_ENGINE = ("decide.decide_batch", "records.encode_batch", "arena.live_bytes")
UNITS: dict[str, Unit] = {
    "scan": Unit(_scan, ("jsonscan.split_lines", "jsonscan.scan_lines", "jsonscan.gather", "jsonscan.assemble"), 4.2),
    "scan-values": Unit(_scan_values, ("jsonscan.scan_lines", "jsonscan.gather"), 3.7),
    "fingerprint": Unit(_fingerprint, ("fingerprint.fingerprint_batch", "fingerprint.unicode_scan"), 4.5),
    "engine": Unit(_engine, _ENGINE, 9.0),
    "engine+restore": Unit(lambda cfg: _engine(cfg, restore=True), _ENGINE + ("records.restore_batch",), 10.5),
    "growth": Unit(_growth, ("index.rehash", "arena.regrow"), 0.5),
    "revisions": Unit(_revisions, ("revision.revisions", "blocks.left_out"), 30.0),
    "fprecords": Unit(_fprecords, ("fprecords.encode_batch", "fprecords.decode_sources", "fprecords.decode_prints"), 4.0),
    "explain": Unit(_explain, ("verify.compare_pair",), 2.5),
    "evidence": Unit(_evidence, ("evidence.gram_jaccards", "evidence.near_word_share", "blocks.block_mask"), 2.5),
    "sketches": Unit(_sketches, ("sketches.sketch_batch",), 1.0),
}
#: what each kind of run needs before its first batch: file mode and Kafka on a new state, each
#: also restoring its state first, a staged topology's roles (the decider likewise),
#: everything (warm-up). Not ``growth``, ``evidence`` nor ``sketches``: a run may never call them (a
#: Kafka index is full-size from the start; only a noisy copy asks for exact evidence; only a
#: state without texts keeps sketches), and on their first call they compile in ~0.5, ~1.6 and
#: ~1 s, once, instead of lengthening every cold start
NEEDS: dict[str, tuple[str, ...]] = {
    "run": ("scan", "fingerprint", "engine", "revisions"),
    "run+restore": ("scan", "fingerprint", "engine+restore", "revisions"),
    "kafka": ("scan-values", "fingerprint", "engine", "revisions"),
    "kafka+restore": ("scan-values", "fingerprint", "engine+restore", "revisions"),
    # a staged topology's roles; the decider's engine warms up on a text (the fingerprint kernel)
    "worker": ("scan-values", "fingerprint", "fprecords"),
    "decider": ("fingerprint", "fprecords", "engine", "revisions"),
    "decider+restore": ("fingerprint", "fprecords", "engine+restore", "revisions"),
    "all": ("scan", "fingerprint", "engine+restore", "growth", "fprecords", "explain", "evidence", "sketches",
            "revisions"),
    # the demo's run and the commands it prints next (inspect, ui: explain and evidence;
    # tune --replay: file mode's scan), so that none of them compiles again
    "demo": ("scan", "fingerprint", "engine", "explain", "evidence", "revisions"),
}


def run_units(cfg: Config, units: Iterable[str]) -> None:
    """Compile ``units`` in this process, one after the other, with the cyclic garbage collector
    off: compiling makes ~10^6 Python objects, and the collector's passes over them were ~10% of
    the compile time (engine 10.0 -> 9.1 s, fingerprint + scan 9.2 -> 8.1 s, for ~80 MB more at
    the peak). :func:`fill` collects once afterwards, while its workers finish."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        for u in units:
            UNITS[u].run(cfg)
    finally:
        if enabled:
            gc.enable()
