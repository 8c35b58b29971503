"""A batch of consumed records -> fingerprint records: the fingerprint stage of the staged
topology, shared by its confluent worker and its faust agent.

The same prepare (dead letters with stage and reason) and oversize screen as every runtime,
then one fingerprint record per input record, in order (dead letters as dead-letter kinds).
"""

from __future__ import annotations

import time

import numpy as np

from streamdedup.text.decode import Rejected
from streamdedup.engine.checkpoint import Source
from streamdedup.pipeline import Preparer
from streamdedup.pipeline.fingerprints import FingerprintCodec
from streamdedup.runtime.kafka.batch import source_name
from streamdedup.runtime.kafka.oversize import OutputGuard


def fingerprint_messages(msgs: list, preparer: Preparer, guard: OutputGuard, codec: FingerprintCodec,
                         time_invalid: dict[int, str] | None = None) -> list[bytes]:
    """The fingerprint records of ``msgs`` (messages with the confluent-kafka accessors).

    ``time_invalid``, when given, receives message index -> why its event time was not used
    (``decode``): the decider does not need it, the record's output carries it."""
    n = len(msgs)
    values = [m.value() or b"" for m in msgs]
    data, scan = preparer.scan_values(values)
    now_ms = int(time.time() * 1000)
    times = np.array([ts if ts_type else now_ms for ts_type, ts in (m.timestamp() for m in msgs)], np.int64)
    prep = preparer.prepare(data, scan, 0, n, lambda k: source_name(msgs[k]), times)
    if time_invalid is not None:
        time_invalid.update((k, d.time_invalid) for k, d in prep.slow.items() if d.time_invalid is not None)
    base = guard.base_sizes(msgs, values)
    out = guard.screen(base)
    if len(out):
        for k in out.tolist():
            if k not in prep.dead:
                prep.dead[k] = Rejected("output", guard.screen_reason(int(base[k])))
        prep.docs = np.setdiff1d(prep.docs, out)
    index: dict[tuple[str, int], int] = {}
    sources: list[Source] = []
    source_index = np.empty(n, np.int64)
    offsets = np.empty(n, np.int64)
    for k, m in enumerate(msgs):
        tp = (m.topic(), m.partition())
        i = index.get(tp)
        if i is None:
            i = index[tp] = len(sources)
            sources.append(Source(*tp))
        source_index[k], offsets[k] = i, m.offset()
    return codec.encode_prepared(prep, sources, source_index, offsets)
