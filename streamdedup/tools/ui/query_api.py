"""``POST /api/query``: queries over HTTP, relayed to the query topic (``kafka.queries``).

The inspector does not hold the index: the processor (or staged decider) that owns it answers
on the reply topic. The relay sends each query record with a key of its own and waits for the
answers with those keys. The body is what ``streamdedup fingerprint`` writes, one base64 record
a line; its params announcement line is skipped. The request needs
``Authorization: Bearer <kafka.queries.http_token>``; the inspector's Host check applies too.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import threading
import time
import uuid

import orjson
from confluent_kafka import Consumer, Producer, TopicPartition
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from streamdedup.config import Config
from streamdedup.pipeline.fingerprints import KIND_PARAMS
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.tools.ui.guard import read_capped

#: the largest body read (about 1,500 text-free records)
MAX_BODY = 1 << 20
#: queries one request may ask
MAX_QUERIES = 512
#: how long a request waits for its answers
WAIT_S = 20.0


class QueryRelay:
    """Sends query records to ``kafka.queries.topic`` and collects their answers."""

    def __init__(self, cfg: Config):
        k, q = cfg.kafka, cfg.kafka.queries
        self.topic, self.reply_topic = q.topic, q.reply_topic
        self.producer = Producer(client_settings(k, {"linger.ms": 0, "enable.idempotence": True}))
        self.consumer = Consumer(client_settings(k, {
            "group.id": f"{k.group_id}.http-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
            "isolation.level": "read_committed", "enable.partition.eof": False}))
        meta = self.consumer.list_topics(self.reply_topic, timeout=10).topics[self.reply_topic]
        if meta.error is not None:
            raise RuntimeError(f"kafka.queries.reply_topic {self.reply_topic}: {meta.error.str()}")
        # from the end as it is now: only answers to this relay's queries are read
        ends = [TopicPartition(self.reply_topic, p, self.consumer.get_watermark_offsets(
            TopicPartition(self.reply_topic, p), timeout=10)[1]) for p in meta.partitions]
        self.consumer.assign(ends)
        self._answers: dict[bytes, dict] = {}
        self._waiting: set[bytes] = set()
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._read, daemon=True, name="query-answers")
        self._thread.start()

    def _read(self) -> None:
        while not self._stop:
            for m in self.consumer.consume(100, 0.2):
                if m.error() is not None:
                    continue
                try:
                    answer = orjson.loads(m.value() or b"")
                except orjson.JSONDecodeError:
                    answer = {"error": "the answer could not be read"}
                with self._cond:
                    if m.key() in self._waiting:  # another relay's answers, or one given up on: not ours
                        self._answers[m.key()] = answer
                        self._cond.notify_all()

    def ask(self, records: list[bytes], client: str, wait_s: float = WAIT_S) -> list[dict]:
        """One answer per record, in order (an error answer for one not answered in time)."""
        base = uuid.uuid4().hex
        keys = [f"http-{base}-{i}".encode() for i in range(len(records))]
        with self._cond:
            self._waiting.update(keys)
        try:
            for key, value in zip(keys, records):
                self.producer.produce(self.topic, value, key, headers=[("client", client.encode())])
            self.producer.flush(10)
            deadline = time.monotonic() + wait_s
            with self._cond:
                while not all(k in self._answers for k in keys) and time.monotonic() < deadline:
                    self._cond.wait(max(0.0, deadline - time.monotonic()))
                return [self._answers.pop(k, {"error": f"no answer within {wait_s:g} s (is the index's owner running?)"})
                        for k in keys]
        finally:
            with self._cond:
                self._waiting.difference_update(keys)
                for k in keys:
                    self._answers.pop(k, None)

    def close(self) -> None:
        self._stop = True
        self._thread.join(5)
        self.consumer.close()
        self.producer.flush(5)


def _records(body: bytes) -> list[bytes] | str:
    out = []
    for n, line in enumerate(body.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            return f"line {n} is not base64"
        if len(record) > 1 and record[1] == KIND_PARAMS:
            continue  # `streamdedup fingerprint` writes its params first
        out.append(record)
    return out


def query_route(relay: QueryRelay, token: str) -> Route:
    async def api_query(request: Request) -> JSONResponse:
        given = request.headers.get("authorization", "")
        if not token or not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return JSONResponse({"error": "Authorization: Bearer <kafka.queries.http_token> required"}, 401)
        body = await read_capped(request, MAX_BODY)
        if body is None:
            return JSONResponse({"error": f"at most {MAX_BODY:,} bytes a request"}, 413)
        records = _records(body)
        if isinstance(records, str):
            return JSONResponse({"error": records}, 400)
        if not records or len(records) > MAX_QUERIES:
            return JSONResponse({"error": f"send 1 to {MAX_QUERIES} query records, one base64 record a line"}, 400)
        client = "http:" + request.headers.get("x-streamdedup-client", "anonymous")[:48]
        answers = await run_in_threadpool(relay.ask, records, client)
        return JSONResponse({"answers": answers})

    return Route("/api/query", api_query, methods=["POST"])
