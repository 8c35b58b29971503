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
from streamdedup.runtime.kafka.fields import read_fields
from streamdedup.runtime.kafka.oversize import OutputGuard


def fingerprint_messages(msgs: list, preparer: Preparer, guard: OutputGuard, codec: FingerprintCodec,
                         time_invalid: dict[int, str] | None = None) -> list[bytes]:
    """The fingerprint records of ``msgs`` (messages with the confluent-kafka accessors).

    ``time_invalid``, when given, receives message index -> why its event time was not used
    (``decode``): the decider does not need it, the record's output carries it."""
    n = len(msgs)
    f = read_fields(msgs, int(time.time() * 1000))
    data, scan = preparer.scan_values(f.values)
    prep = preparer.prepare(data, scan, 0, n, lambda k: source_name(msgs[k]), f.times)
    if time_invalid is not None:
        time_invalid.update((k, d.time_invalid) for k, d in prep.slow.items() if d.time_invalid is not None)
    base = guard.base_sizes(f)
    out = guard.screen(base)
    if len(out):
        for k in out.tolist():
            if k not in prep.dead:
                prep.dead[k] = Rejected("output", guard.screen_reason(int(base[k])))
        prep.docs = np.setdiff1d(prep.docs, out)
    sources = [Source(*tp) for tp in f.partitions]
    return codec.encode_prepared(prep, sources, f.part_of.astype(np.int64), f.offsets)
