"""Prometheus metrics of the processor (records in/out per status, batch latency, lag, index size,
exact-evidence questions)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from streamdedup.pipeline.route import DESTINATIONS


class Metrics:
    """Processor metrics, served over HTTP for Prometheus when ``port`` is not 0.

    Args:
        port: TCP port of the metrics server; 0 = no server.
        host: address it binds (``kafka.metrics_host``): loopback by default, so the metrics are
            not exposed on every interface unless asked for (``0.0.0.0`` in a container).
    """

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.registry = CollectorRegistry()
        self.records_in = Counter("streamdedup_records_in_total", "records consumed", registry=self.registry)
        self.records_out = Counter("streamdedup_records_out_total", "records produced", ["status"], registry=self.registry)
        self.latency = Histogram("streamdedup_batch_seconds", "micro-batch processing time", registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.lag = Gauge("streamdedup_consumer_lag", "records behind the high watermark, all partitions", registry=self.registry)
        self.index = Gauge("streamdedup_indexed_documents", "documents in the index", registry=self.registry)
        # a noisy copy's question costs a text comparison and, for an earlier text older than
        # the recent batches kept in memory, a state read: their rate explains batch latency
        self.questions = Counter("streamdedup_exact_evidence_questions_total",
                                 "exact-evidence questions (pairs compared on their canonical texts)", registry=self.registry)
        self.record_reads = Counter("streamdedup_exact_evidence_record_reads_total",
                                    "exact-evidence questions that read the earlier text from the state store",
                                    registry=self.registry)
        self._evidence_seen = (0, 0)
        self.revisions = Counter("streamdedup_revisions_total",
                                 "revisions produced (counted in records_out under the status of the output they went "
                                 "to: revision for the revisions topic)",
                                 registry=self.registry)
        self._last_lag = 0.0
        self._server = None
        if port:
            self._server, _ = start_http_server(port, addr=host, registry=self.registry)

    @property
    def address(self) -> tuple[str, int] | None:
        """(host, port) the metrics server is bound to; None without a server."""
        return None if self._server is None else self._server.server_address[:2]

    def close(self) -> None:
        """Stop the metrics server, if any."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def batch(self, n: int, counts: dict, seconds: float, indexed: int | None,
              evidence: tuple[int, int] | None = None) -> None:
        """A batch done: ``n`` records in, ``counts`` out per status, ``seconds`` it took, the
        index size and the engine's exact-evidence totals so far (``Deduplicator.evidence_counts``;
        None for both: this process holds no engine, a staged worker)."""
        if evidence is not None:
            # totals of one engine; smaller than last time: a new engine (a restart), counting from 0
            asked, read = evidence
            seen_asked, seen_read = self._evidence_seen
            if asked < seen_asked or read < seen_read:
                seen_asked, seen_read = 0, 0
            self.questions.inc(asked - seen_asked)
            self.record_reads.inc(read - seen_read)
            self._evidence_seen = evidence
        self.records_in.inc(n)
        for status in DESTINATIONS:  # revision: the revisions topic
            if counts.get(status):
                self.records_out.labels(status).inc(counts[status])
        if counts.get("revisions"):
            self.revisions.inc(counts["revisions"])
        self.latency.observe(seconds)
        if indexed is not None:
            self.index.set(indexed)

    def observe_lag(self, consumer, every_s: float = 5.0) -> None:
        now = time.monotonic()
        if now - self._last_lag < every_s:
            return
        self._last_lag = now
        total = 0
        try:
            for tp in consumer.assignment():
                low, high = consumer.get_watermark_offsets(tp, timeout=1, cached=True)
                pos = consumer.position([tp])[0].offset
                if high >= 0 and pos >= 0:
                    total += max(0, high - pos)
        except Exception:  # lag is best-effort; never stop processing for it
            return
        self.lag.set(total)
