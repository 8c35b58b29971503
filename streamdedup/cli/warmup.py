"""``streamdedup warm-up``: compile every Numba kernel into the on-disk cache, so that the first
real run starts in seconds (the Dockerfile runs it at image build)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click
import numpy as np
import orjson

from ..config import Config
from ._common import config_option, get_config

_STORY = "warm up the kernels with a short story about nothing in particular at all, told twice"
#: every kind of line file mode meets: fast ASCII, a copy, a near copy, a time field, non-ASCII,
#: escapes and HTML (the Python decoder's texts), a line that is not JSON, a blank line
_LINES = [
    orjson.dumps({"id": "a", "text": _STORY}),
    orjson.dumps({"id": "b", "text": _STORY}),
    orjson.dumps({"id": "c", "text": _STORY + " and one more sentence", "time": 1_700_000_000_000}),
    orjson.dumps({"id": "d", "text": "Zürich: eine Geschichte über nichts, " + _STORY}),
    b'{"id": "e", "text": "a \\"quoted\\" <b>story</b> about nothing\\nin particular"}',
    b"not json",
    b"",
]


def compile_kernels(cfg: Config) -> None:
    """Run a tiny workload through every path that calls a kernel: file mode (scan, decide,
    records, output assembly), a restore from state, Kafka's record scan, raw-text input,
    index and arena growth, and explain's pair comparison."""
    from ..arena import Arena
    from ..engine import Deduplicator
    from ..filemode import run_file
    from ..fingerprint import Fingerprinter
    from ..index import CandidateIndex
    from ..scan import FAST, LineScanner, gather_documents
    from ..state import MemoryStore
    from ..verify import Fingerprint, compare

    # a small index (kernels are compiled per argument type, not size)
    cfg = cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"max_documents": 64, "index_sizing": "grow"})})
    fp_cfg = cfg.fingerprint
    # file mode end to end into a scratch state (never the configured state.dir), then the
    # engine's own warm-up (a restore from state included)
    with tempfile.TemporaryDirectory(prefix="streamdedup-warm-up-") as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_bytes(b"\n".join(_LINES) + b"\n")
        run_file(cfg, str(path), str(Path(tmp) / "out"), state_dir=str(Path(tmp) / "state"))
    Deduplicator(cfg, MemoryStore()).warm_up()

    # Kafka: record values scanned one by one, then gathered into a batch; a batch whose
    # records are not adjacent (replays left out) gathers its texts with another kernel call
    scanner = LineScanner(cfg.input, fp_cfg.max_text_bytes, fp_cfg.canonical.strip_html)
    data, scanned = scanner.scan_records(_LINES[:3])
    docs = np.flatnonzero(scanned.status == FAST)
    for batch in (docs, docs[::2]):
        if len(batch):
            gather_documents(data, scanned, batch, {}, fp_cfg.canonical, np.zeros(len(batch), np.int64))
    # raw-text input (input.format: text) takes another scan kernel
    text_input = cfg.input.model_copy(update={"format": "text"})
    LineScanner(text_input, fp_cfg.max_text_bytes, False).scan(np.frombuffer(b"one\n\ntwo\n", np.uint8), True)

    # growth: a long file-mode stream rehashes the index and grows the signature ring
    index = CandidateIndex(4, 8, 3, 8)
    index.grow(1, 0)
    arena = Arena(8, fp_cfg.minhash.num_perm, fp_cfg.minhash.storage_bits)
    arena.reserve(arena.buf.shape[0] + 1, index.slot_seq, index.slot_time, 0, 0, 0)

    # explain: one pair through the verification kernel
    batch = Fingerprinter(fp_cfg).fingerprint_batch([_STORY, _STORY + " again"])
    _staged(cfg, batch)
    compare(Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1), cfg.verify, fp_cfg.signature, full=True)


def _staged(cfg: Config, batch) -> None:
    """A staged topology's worker and decider: fingerprint records encoded, decoded, decided."""
    from ..engine import Deduplicator
    from ..engine_state import Source
    from ..pipeline.fingerprints import FingerprintCodec, decide
    from ..state import MemoryStore

    engine = Deduplicator(cfg, MemoryStore())
    codec = FingerprintCodec(engine.fp)
    values = codec.encode(batch, ["a", "b"], np.zeros(2, np.int64), [Source("in")], np.zeros(2, np.int64), np.arange(2))
    decide(engine, codec.decode(values))


@click.command("warm-up")
@config_option
def warm_up(config_path: str | None) -> None:
    """Compile the Numba kernels into their on-disk cache (about a minute once; seconds when cached)."""
    from .._kernels.cache import cache_dir, missing_kernels

    cfg = get_config(config_path)
    cold = missing_kernels()
    click.echo(f"{'compiling' if cold else 'loading'} the Numba kernels (cache: {cache_dir()}) ...", err=True)
    t0 = time.perf_counter()
    compile_kernels(cfg)
    seconds = time.perf_counter() - t0
    still = missing_kernels()
    if still:
        raise click.ClickException(f"kernels not cached after warm-up (is the cache directory writable?): {', '.join(still)}")
    click.echo(f"kernels {'compiled and cached' if cold else 'loaded from the cache'} in {seconds:.1f} s")
