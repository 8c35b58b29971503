"""The faust stage's fingerprint records, sent by confluent-kafka rather than aiokafka.

The fingerprints topic is outside the stage's transactions (the decider reads the records while
their batch waits), so any idempotent producer will do. librdkafka builds the produce requests
and writes them from threads of its own; aiokafka did both on faust's event loop, where the
produce requests and their socket writes took about a seventh of the faust worker's time
(py-spy, one worker at ~4.5k records/s). The records are the bulk of what the stage writes:
~1.4 KB each against ~1.1 KB of output.
"""

from __future__ import annotations

import asyncio
from typing import Any

from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.runtime.kafka.transactions import produce_waiting


class FingerprintSender:
    """Records in order to partition 0 of the fingerprints topic; a failed delivery raises at the
    next :meth:`check` (the decider would never answer that record)."""

    def __init__(self, kcfg: Any):
        from confluent_kafka import Producer

        self.topic = kcfg.staged.fingerprints_topic
        self.error: Any = None
        # delivery reports for failures only: no Python call per record
        self._p = Producer(client_settings(kcfg, {"linger.ms": 5, "enable.idempotence": True,
                                                  "delivery.report.only.error": True, "on_delivery": self._failed}))

    def _failed(self, err: Any, msg: Any) -> None:
        if err is not None and self.error is None:
            self.error = err

    async def start(self, params: bytes) -> None:
        """The parameters record first, delivered before any fingerprint (the decider checks it)."""
        produce_waiting(self._p, self.topic, params, partition=0)
        left = await asyncio.to_thread(self._p.flush, 30)
        if left:
            raise RuntimeError(f"the fingerprints topic {self.topic!r} took no record within 30 s")
        self.check()

    def send(self, values: list[bytes]) -> None:
        for v in values:
            produce_waiting(self._p, self.topic, v, partition=0)
        self.check()

    def check(self) -> None:
        """Serve delivery reports; raise if a record was not delivered."""
        from confluent_kafka import KafkaException

        self._p.poll(0)
        if self.error is not None:
            raise KafkaException(self.error)

    async def stop(self) -> None:
        await asyncio.to_thread(self._p.flush, 10)
