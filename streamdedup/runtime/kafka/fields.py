"""The fields of a consumed batch's messages, each read once for every step that needs it.

The positions, the size guard, the outputs and the engine's sources all read a message's
fields; each accessor is a call, and each step made its own. Here every accessor is called
once a message, through ``map`` (no Python loop body per message). Works for any message with
the confluent-kafka accessors (the faust stage's adapters, the tests' fakes).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import methodcaller

import numpy as np

_TOPIC, _PARTITION, _OFFSET = methodcaller("topic"), methodcaller("partition"), methodcaller("offset")
_KEY, _VALUE, _HEADERS, _TIMESTAMP = methodcaller("key"), methodcaller("value"), methodcaller("headers"), methodcaller("timestamp")


@dataclass
class Fields:
    """Per message: key, value (``b""`` for none), own headers (None for none), event time
    (its timestamp, or ``now_ms`` when it has none), offset, and the index of its (topic,
    partition) in ``partitions`` (in order of first appearance)."""

    keys: list
    values: list[bytes]
    headers: list
    times: np.ndarray
    offsets: np.ndarray
    partitions: list[tuple[str, int]]
    part_of: np.ndarray

    def next_offsets(self) -> dict[tuple[str, int], int]:
        """Per (topic, partition), the offset after its last message of the batch."""
        n = len(self.part_of)
        last = n - 1 - np.unique(self.part_of[::-1], return_index=True)[1]  # partitions are 0..P-1, all present
        return {tp: int(o) + 1 for tp, o in zip(self.partitions, self.offsets[last].tolist())}


def read_fields(msgs: list, now_ms: int) -> Fields:
    """The fields of ``msgs``."""
    n = len(msgs)
    values = [v or b"" for v in map(_VALUE, msgs)]
    tps = list(zip(map(_TOPIC, msgs), map(_PARTITION, msgs)))
    index = {tp: i for i, tp in enumerate(dict.fromkeys(tps))}
    part_of = np.fromiter(map(index.__getitem__, tps), np.int32, n)
    offsets = np.fromiter(map(_OFFSET, msgs), np.int64, n)
    kinds, stamps = zip(*map(_TIMESTAMP, msgs)) if n else ((), ())
    times = np.fromiter(stamps, np.int64, n)
    if not all(kinds):  # a message without a timestamp (kind 0) is at ``now_ms``
        times[np.fromiter(kinds, np.int64, n) == 0] = now_ms
    return Fields(list(map(_KEY, msgs)), values, list(map(_HEADERS, msgs)), times, offsets, list(index), part_of)
