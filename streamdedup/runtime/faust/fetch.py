"""The faust stage's input in whole fetches, past faust's per-event path.

faust hands every fetched record to its streams one at a time: the consumer's drain loop awaits
``Service.wait_first(callback(message), suspend_flow.wait())`` per record (four tasks and an
``asyncio.wait`` each), the conductor decodes it into an event and queues it, and the stream
takes it out again. Measured on a busy 2-core machine, an agent that only counted what
``noack_take`` handed it read 4.7k-6.3k records/s, under half of the single processor:
the ceiling of any agent on that path.

:class:`BatchingConsumer` is faust's aiokafka consumer with one change: for the topics in its
transport's ``batch_routes``, a fetch goes to the route's handler as one list of faust
messages (stamped with the consumer generation, as faust stamps them), with one ``wait_first``
per fetch instead of per record. Everything else stays faust's: the group, the assignment and
its generations, pausing and resuming partitions, the seek to the committed offsets after a
rebalance, and the per-record path for every other topic. What faust does not do for these
records: count them in its monitor, and track or commit them (the stage's input is read with
``acks=False`` anyway: its offsets go in the stage's own transactions).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from faust.transport.consumer import CONSUMER_FETCHING
from faust.transport.drivers.aiokafka import Consumer as AIOKafkaConsumer
from faust.transport.drivers.aiokafka import Transport as AIOKafkaTransport

#: a route's handler: the messages of one fetch (every partition of the route's topics)
BatchHandler = Callable[[list], Awaitable[None]]


class BatchingConsumer(AIOKafkaConsumer):
    """faust's aiokafka consumer delivering whole fetches of some topics (see the module docstring)."""

    def _routes(self) -> dict[str, BatchHandler]:
        return getattr(self.transport, "batch_routes", None) or {}

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - runs on a broker
        routes = self._routes()
        if not routes:
            return await super()._drain_messages(fetcher)
        consumer_should_stop = self._stopped.is_set
        fetcher_should_stop = fetcher._stopped.is_set
        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                self.diag.set_flag(CONSUMER_FETCHING)
                records, active = await self._wait_next_records(1.0)
                await self.sleep(0)  # as faust's loop: a fetch can return at once, again and again
                if records and not self.should_stop:
                    await self._deliver(records, active, routes)
                self.diag.unset_flag(CONSUMER_FETCHING)
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                return
            raise
        finally:
            self.diag.unset_flag(CONSUMER_FETCHING)

    async def _deliver(self, records: dict, active: set | None, routes: dict[str, BatchHandler]) -> None:
        """One fetch: the routed topics' messages to their handlers (one call per handler), the
        rest one by one through faust's callback, as faust's own drain loop does."""
        if not self.flow_active:
            # faust's getmany: a fetch that raced a rebalance is dropped, and the partitions go
            # back to their committed offsets
            await self.perform_seek()
            return
        to_message = self._to_message
        read_offset = self._read_offset
        batches: dict[BatchHandler, list] = {}
        others: list = []
        for tp, recs in records.items():
            if active is not None and tp not in active and tp not in self._buffered_partitions:
                continue  # paused since the fetch (faust's getmany skips these too)
            last = read_offset.get(tp)
            # faust's drain loop drops records below the last read offset (a fetch from before a seek)
            fresh = recs if last is None else [r for r in recs if r.offset >= last]
            if not fresh:
                continue
            self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
            handler = routes.get(tp.topic)
            msgs = [to_message(tp, r) for r in fresh]
            if handler is None:
                others += msgs
            else:
                batches.setdefault(handler, []).extend(msgs)
            read_offset[tp] = fresh[-1].offset
        for handler, msgs in batches.items():
            # a rebalance may stop the flow while the handler waits for room: the fetch is
            # dropped then (faust seeks to the committed offsets and reads it again)
            await self.wait_first(handler(msgs), self.suspend_flow.wait())
        for message in others:
            await self.wait_first(self.callback(message), self.suspend_flow.wait())


def route_batches(app: Any, topics: tuple[str, ...], handler: BatchHandler) -> None:
    """Have ``app``'s consumer deliver ``topics`` to ``handler`` in whole fetches.

    Raises ``ValueError`` if the app does not use faust's aiokafka driver or its consumer
    exists already (it is created when the worker starts: attach the stage before)."""
    transport = app.transport
    if not isinstance(transport, AIOKafkaTransport):
        raise ValueError(f"the faust stage needs faust's aiokafka driver (broker 'kafka://...'), not {type(transport).__name__}")
    if getattr(app, "_consumer", None) is not None:
        raise ValueError("the faust app's consumer exists already: attach the stage before the worker starts")
    if not issubclass(transport.Consumer, BatchingConsumer):
        transport.Consumer = BatchingConsumer  # instance attribute: this app only
    routes = getattr(transport, "batch_routes", None)
    if routes is None:
        routes = transport.batch_routes = {}
    for t in topics:
        routes[t] = handler
