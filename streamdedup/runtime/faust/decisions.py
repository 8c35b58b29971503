"""The faust stage's reader of the decider's answers (asyncio, aiokafka; no consumer group).

The staged worker (``kafka.staged.worker``) commits its decisions-topic offsets in its output
transactions. The faust agent's transactions carry only their input partition's offset (one
transactional id per input partition: ``faust.transactions``), so this reader keeps no
offsets at all and relies on the decider's rule that a re-sent fingerprint is answered again
with the decision already made (``kafka.staged.recent``):

- when the agent first sees an input partition, the decisions partition serving it is read
  from its *end* as it is before any fingerprint of ours is sent (:meth:`open`);
- each batch registers the (input partition, offset) pairs it waits for before sending their
  fingerprints (:meth:`expect`), so its answers come after the position read from;
- decisions nobody waits for (answers to fingerprints a crashed predecessor sent, or
  repeated ones) are dropped; the first decision for an awaited offset is the one. Every
  answer for an offset is the same decision (the decider answers a re-send from its state).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from streamdedup.runtime.kafka.decision_record import BadDecisionRecord, DecisionRecord, decode

log = logging.getLogger(__name__)

InputPart = tuple[str, int]


class DecisionReader:
    """Futures for the decisions of awaited input positions, fed by one assigned consumer."""

    def __init__(self, consumer: Any, decisions_topic: str, mapping: dict[InputPart, int]):
        self._consumer = consumer  # an unstarted aiokafka.AIOKafkaConsumer without group_id
        self._topic, self._mapping = decisions_topic, mapping
        self._waiting: dict[tuple[InputPart, int], asyncio.Future] = {}
        self._open: dict[InputPart, Any] = {}
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self.dropped = 0  # decisions read that nobody waited for

    async def start(self) -> None:
        await self._consumer.start()
        self._task = asyncio.ensure_future(self._read())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._consumer.stop()

    async def open(self, part: InputPart) -> None:
        """Read ``part``'s decisions partition from its end (before our first fingerprint of it)."""
        if part in self._open:
            return
        from aiokafka import TopicPartition

        if part not in self._mapping:
            raise BadDecisionRecord(f"input partition {part[0]}:{part[1]} has no decisions partition: the topic was "
                                    f"not in kafka.input_topics, or gained partitions after start")
        dec = TopicPartition(self._topic, self._mapping[part])
        c = self._consumer
        async with self._lock:
            kept = {tp: await c.position(tp) for tp in c.assignment()}
            end = (await c.end_offsets([dec]))[dec]
            c.assign([*kept, dec])  # assign() forgets positions: put the others back where they were
            for tp, offset in kept.items():
                c.seek(tp, offset)
            c.seek(dec, end)
            self._open[part] = dec
        log.info("faust stage: reading decisions for %s:%d from %s:%d offset %d", part[0], part[1], dec.topic,
                 dec.partition, end)

    def expect(self, positions: list[tuple[InputPart, int]]) -> list[asyncio.Future]:
        """A future per (input partition, offset), in order; register before sending the fingerprints."""
        loop = asyncio.get_running_loop()
        futs = []
        for pos in positions:
            fut = self._waiting.get(pos)
            if fut is None or fut.done():
                fut = self._waiting[pos] = loop.create_future()
            futs.append(fut)
        return futs

    def forget(self, positions: list[tuple[InputPart, int]]) -> None:
        for pos in positions:
            self._waiting.pop(pos, None)

    async def _read(self) -> None:
        c = self._consumer
        try:
            while True:
                if not self._open:
                    await asyncio.sleep(0.05)
                    continue
                async with self._lock:
                    got = await c.getmany(timeout_ms=50, max_records=10_000)
                for tp, msgs in got.items():
                    for m in msgs:
                        self._offer(tp.partition, m)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - handed to every waiter, which re-raises it in the agent
            log.error("faust stage: the decisions reader failed: %s", exc)
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(exc)
            raise

    def _offer(self, dec_partition: int, m: Any) -> None:
        try:
            rec: DecisionRecord = decode(m.value)
        except BadDecisionRecord as exc:
            raise BadDecisionRecord(f"{m.topic}:{m.partition}:{m.offset}: {exc}") from None
        part = _part_of_key(m.key)
        if part is None or self._mapping.get(part) != dec_partition:
            raise BadDecisionRecord(f"decision at {m.topic}:{m.partition}:{m.offset} is for input "
                                    f"{(m.key or b'').decode(errors='replace')}, which that partition does not serve: "
                                    f"the decider runs with other kafka.input_topics")
        fut = self._waiting.pop((part, rec.offset), None)
        if fut is None or fut.done():
            self.dropped += 1
            return
        fut.set_result(rec)


def _part_of_key(key: bytes | None) -> InputPart | None:
    """``topic:partition`` (``decision_record.partition_key``'s format) -> (topic, partition)."""
    if not key:
        return None
    topic, _, p = key.decode(errors="replace").rpartition(":")
    if not topic or not p.isdecimal():
        return None
    return topic, int(p)
