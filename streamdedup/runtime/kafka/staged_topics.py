"""Which decisions partition serves which input partition, and the staged topics' checks (pure).

Decisions partition ``i`` holds the decisions of the i-th input partition, numbered over
``kafka.input_topics`` in their configured order, partition by partition. Each decisions
partition has one reader (the worker owning that input partition), so its committed offset
belongs to one lane: sharing a decisions partition between two workers would make their
offset commits overwrite each other. Adding partitions to an input topic renumbers the ones
after it: drain the workers (stop them when idle) before restarting with the new count.
"""

from __future__ import annotations

from streamdedup.config import KafkaConfig
from streamdedup.runtime.kafka.startup import StartupError


def partition_map(kcfg: KafkaConfig, partitions: dict[str, int]) -> dict[tuple[str, int], int]:
    """(input topic, partition) -> decisions partition."""
    out: dict[tuple[str, int], int] = {}
    for topic in kcfg.input_topics:
        for p in range(partitions[topic]):
            out[(topic, p)] = len(out)
    return out


def check_staged_topics(kcfg: KafkaConfig, partitions: dict[str, int]) -> dict[tuple[str, int], int]:
    """The partition map, or :class:`StartupError` naming the setting whose topic cannot work."""
    st = kcfg.staged
    for topic, setting in ((st.fingerprints_topic, "kafka.staged.fingerprints_topic"),
                           (st.decisions_topic, "kafka.staged.decisions_topic")):
        if topic not in partitions:
            raise StartupError(f"topic {topic!r} ({setting}) does not exist; create it (streamdedup topics create "
                               f"--topology staged) or set kafka.create_topics: true")
        if topic in kcfg.input_topics:
            raise StartupError(f"{setting} {topic!r} is also an input topic (kafka.input_topics)")
    if partitions[st.fingerprints_topic] != 1:
        raise StartupError(f"topic {st.fingerprints_topic!r} (kafka.staged.fingerprints_topic) has "
                           f"{partitions[st.fingerprints_topic]} partitions; it needs exactly 1 (its order defines "
                           f"which copy is first)")
    mapping = partition_map(kcfg, partitions)
    if partitions[st.decisions_topic] < len(mapping):
        raise StartupError(f"topic {st.decisions_topic!r} (kafka.staged.decisions_topic) has "
                           f"{partitions[st.decisions_topic]} partitions; the input topics have {len(mapping)} together "
                           f"and each needs its own")
    return mapping
