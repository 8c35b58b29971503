"""The faust stage's own transactions: one aiokafka transactional producer per input partition.

faust commits offsets only for topics whose acks are enabled; the stage reads its input with
``acks=False`` (see ``agent.attach``), so faust never commits them: each batch's outputs and
its next input offset go out in one transaction per input partition here
(``send_offsets_to_transaction`` under the faust app's group, which faust seeks to).

Fencing. aiokafka's ``send_offsets_to_transaction`` takes a group id only (no generation or
member id: no KIP-447 check), so a zombie is fenced the KIP-98 way: the transactional id is
stable per input partition (``<kafka.transactional_id>.faust.<topic>.<partition>``) and a new
owner's ``init_transactions`` fences the old one. Ownership is claimed per consumer
generation (faust stamps every message with the generation it was fetched in), in this order:

1. the first batch of a partition in a newer generation starts a new producer for its id,
   which waits until a predecessor's transaction is committed or aborted and fences it;
2. then reads the group's committed offset for the partition: records below it were emitted
   by a predecessor that committed after faust's seek, and are dropped;
3. records of an older generation are dropped (faust seeks every assigned partition to its
   committed offset after each rebalance, so they come again), and so are records of a
   partition whose producer was fenced, until a newer generation gives it back (faust's
   position has moved past the fenced batch; only its seek to committed re-reads it).

Why not ``runtime.kafka.transactions`` (confluent-kafka): its ``send_offsets_to_transaction``
needs the group metadata of a confluent-kafka consumer in the group, and faust's consumer is
aiokafka's; and the agent runs on faust's event loop, where aiokafka's calls do not block.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger(__name__)

InputPart = tuple[str, int]


@dataclass
class Lane:
    """An input partition as this process owns it in one consumer generation."""

    generation: int
    producer: Any  # aiokafka.AIOKafkaProducer, inside an open (client-side) transaction
    done: int  # the next offset to emit: the group's committed offset, then ours
    fenced: bool = False


class PartitionTransactions:
    """Claim input partitions per generation, filter what was emitted, commit per partition."""

    def __init__(self, make_producer: Callable[[str], Any], admin: Any, group_id: str, tid_prefix: str,
                 current_generation: Callable[[], int] = lambda: 0):
        self._make, self._admin = make_producer, admin  # admin: a started aiokafka AIOKafkaAdminClient
        #: the app's consumer generation now (``app.consumer_generation_id``)
        self._current = current_generation
        self.group_id, self.tid_prefix = group_id, tid_prefix
        self.lanes: dict[InputPart, Lane] = {}
        self.dropped = 0  # messages not handled: older generation, already emitted, or fenced
        self.fenced = 0  # batches a newer owner fenced (their outputs were aborted)

    def transactional_id(self, part: InputPart) -> str:
        return f"{self.tid_prefix}.faust.{part[0]}.{part[1]}"

    def claims(self, messages: list) -> bool:
        """Whether :meth:`admit` would claim a partition (a newer generation, or a new one)."""
        for m in messages:
            lane = self.lanes.get((m.topic, m.partition))
            if lane is None or (m.generation_id or 0) > lane.generation:
                return True
        return False

    async def admit(self, messages: list) -> list:
        """``messages`` (faust ``Message``) less those not ours to emit, claiming partitions seen in a newer generation."""
        newest: dict[InputPart, int] = {}
        for m in messages:
            part = (m.topic, m.partition)
            newest[part] = max(newest.get(part, -1), m.generation_id or 0)
        for part, generation in newest.items():
            lane = self.lanes.get(part)
            # never for a generation the group has left: this agent ran behind its consumer
            # while the partition moved on, and a claim now would fence its current owner
            # (whose messages would then be dropped until the next rebalance); faust reads
            # these messages again if the partition is still ours
            if (lane is None or generation > lane.generation) and generation >= self._current():
                await self._claim(part, generation)
        kept = []
        for m in messages:
            lane = self.lanes.get((m.topic, m.partition))
            if lane is not None and not lane.fenced and (m.generation_id or 0) == lane.generation and m.offset >= lane.done:
                kept.append(m)
        self.dropped += len(messages) - len(kept)
        return kept

    async def _claim(self, part: InputPart, generation: int) -> None:
        from aiokafka import TopicPartition

        old = self.lanes.pop(part, None)
        if old is not None:
            await _close(old.producer)
        producer = self._make(self.transactional_id(part))
        await producer.start()
        await producer.begin_transaction()  # waits for the producer id: the fencing is done here
        tp = TopicPartition(*part)
        got = await self._admin.list_consumer_group_offsets(self.group_id, partitions=[tp])
        committed = got[tp].offset if tp in got else -1
        self.lanes[part] = Lane(generation, producer, committed)
        log.info("faust stage: %s:%d claimed in generation %d (transactional id %s), committed offset %d",
                 part[0], part[1], generation, self.transactional_id(part), committed)

    async def commit(self, part: InputPart, outputs: list, next_offset: int) -> bool:
        """``outputs`` ((topic, key, value, headers) in order) and ``next_offset`` as the group's
        committed offset of ``part``, in one transaction. False if a newer owner fenced it: the
        outputs were aborted and the partition's records are dropped until a newer generation."""
        from aiokafka import TopicPartition
        from aiokafka.errors import ProducerFenced

        lane = self.lanes[part]
        if lane.fenced:  # a batch in flight behind a fenced one
            return False
        p = lane.producer
        try:
            # every output acknowledged before the offset joins the transaction: aiokafka
            # commits a transaction whose sends failed (a batch expired without a leader, a
            # record refused), which would commit the input offset without those outputs
            await asyncio.gather(*await send_batched(p, outputs))
            await p.send_offsets_to_transaction({TopicPartition(*part): next_offset}, self.group_id)
            await p.commit_transaction()
        except ProducerFenced:
            lane.fenced = True
            self.fenced += 1
            log.warning("faust stage: %s:%d fenced by a newer owner (generation %d here): %d outputs aborted",
                        part[0], part[1], lane.generation, len(outputs))
            return False
        lane.done = next_offset
        await p.begin_transaction()
        return True

    async def stop(self) -> None:
        """Abort each open transaction and stop its producer. A stop that cancelled the emitter
        between its sends and its commit leaves outputs in an open transaction: aborted now, they
        do not hold read_committed readers of the outputs until the transaction times out (their
        records are read again and emitted by the next owner)."""
        from aiokafka.errors import KafkaError

        lanes, self.lanes = list(self.lanes.values()), {}
        for lane in lanes:
            if not lane.fenced:
                try:
                    await lane.producer.abort_transaction()
                except KafkaError as exc:
                    log.info("faust stage: aborting the open transaction at stop: %r", exc)
            await _close(lane.producer)


class StableOffsets:
    """The group's committed offsets, read stable (KIP-447 ``require_stable``): a claim reads
    them right after its ``init_transactions`` fenced a predecessor, whose offset commit may
    still be pending; a plain OffsetFetch (aiokafka's admin asks at most v3, which cannot ask for
    stable offsets) could return the offset before it, and the new owner would emit records
    the predecessor's transaction already emitted. confluent-kafka's admin client, on a thread."""

    def __init__(self, bootstrap_servers: str, timeout_s: float = 30.0):
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient({"bootstrap.servers": bootstrap_servers})
        self._timeout = timeout_s

    async def list_consumer_group_offsets(self, group_id: str, partitions: list) -> dict:
        """``{tp: offset record}`` for the partitions (aiokafka ``TopicPartition``) that have a
        committed offset (the record's ``.offset``), as aiokafka's admin client answers."""
        return await asyncio.to_thread(self._read, group_id, partitions)

    def _read(self, group_id: str, partitions: list) -> dict:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        req = [ConsumerGroupTopicPartitions(group_id, [TopicPartition(tp.topic, tp.partition) for tp in partitions])]
        got = self._admin.list_consumer_group_offsets(req, require_stable=True, request_timeout=self._timeout)
        res = got[group_id].result(self._timeout + 5)
        by = {(t.topic, t.partition): t for t in res.topic_partitions}
        out = {}
        for tp in partitions:
            t = by.get((tp.topic, tp.partition))
            if t is None:
                continue
            if t.error is not None:
                raise RuntimeError(f"the committed offset of {tp.topic}:{tp.partition} (group {group_id}): {t.error}")
            if t.offset >= 0:  # OFFSET_INVALID: none committed
                out[tp] = _Committed(t.offset)
        return out

    async def close(self) -> None:
        """Nothing to close (the client has no open transaction; it goes with the process)."""


@dataclass(frozen=True)
class _Committed:
    offset: int


async def send_batched(producer: Any, outputs: list) -> list:
    """``outputs`` ((topic, key, value, headers)) in producer batches, in order per destination
    partition, chosen as aiokafka's ``send`` chooses it (its default partitioner: murmur2 of the
    key, a random partition for none): one ``send_batch`` per batch instead of a ``send`` per
    record. A record too large for an empty batch goes through ``send``, behind the batches before it.
    Returns the delivery futures (a caller awaits them before it commits)."""
    from aiokafka.partitioner import DefaultPartitioner

    dests: dict[tuple[str, int], list] = {}
    partitions: dict[str, list[int]] = {}
    for topic, key, value, headers in outputs:
        if topic not in partitions:
            partitions[topic] = sorted(await producer.partitions_for(topic))
        every = partitions[topic]
        dests.setdefault((topic, DefaultPartitioner()(key, every, every)), []).append((key, value, headers))
    futures = []
    for (topic, partition), records in dests.items():
        batch = producer.create_batch()
        for key, value, headers in records:
            if batch.append(key=key, value=value, timestamp=None, headers=headers) is not None:
                continue
            if batch.record_count():  # full (a refused append closes it)
                futures.append(await producer.send_batch(batch, topic, partition=partition))
            batch = producer.create_batch()
            if batch.append(key=key, value=value, timestamp=None, headers=headers) is None:
                futures.append(await producer.send(topic, value, key=key, partition=partition, headers=headers))
                batch = producer.create_batch()
        if batch.record_count():
            futures.append(await producer.send_batch(batch, topic, partition=partition))
    return futures


async def _close(producer: Any) -> None:
    """Stop a producer; a fenced one's sender has already failed, which is no news here."""
    from aiokafka.errors import KafkaError

    try:
        await producer.stop()
    except KafkaError as exc:
        log.info("faust stage: a fenced producer stopped with %r", exc)
