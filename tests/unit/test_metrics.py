"""The Prometheus metrics server binds kafka.metrics_host (loopback by default), not every interface."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator

import pytest

from streamdedup.runtime.kafka.metrics import Metrics


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _non_loopback_address() -> str | None:
    """This machine's address on its default route, if it has one (UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


@pytest.fixture
def metrics() -> Iterator[Metrics]:
    m = Metrics(_free_port())  # host left at its default
    yield m
    m.close()


def test_default_host_is_loopback(metrics: Metrics) -> None:
    assert metrics.address is not None and metrics.address[0] == "127.0.0.1"


def test_serves_metrics_on_loopback(metrics: Metrics) -> None:
    metrics.batch(3, {"unique": 2, "duplicate": 1}, 0.01, 5)
    conn = http.client.HTTPConnection("127.0.0.1", metrics.address[1], timeout=5)
    try:
        conn.request("GET", "/metrics")
        body = conn.getresponse().read().decode()
    finally:
        conn.close()
    assert "streamdedup_records_in_total 3.0" in body


def test_not_reachable_on_another_interface(metrics: Metrics) -> None:
    addr = _non_loopback_address()
    if addr is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        with pytest.raises(ConnectionRefusedError):
            s.connect((addr, metrics.address[1]))


def test_explicit_host_is_used() -> None:
    m = Metrics(_free_port(), host="127.0.0.1")
    try:
        assert m.address[0] == "127.0.0.1"
    finally:
        m.close()
    assert m.address is None


def test_port_zero_starts_no_server() -> None:
    m = Metrics(0, host="0.0.0.0")
    assert m.address is None
    m.close()  # a no-op


def _sample(m: Metrics, name: str) -> float:
    return m.registry.get_sample_value(name)


def test_exact_evidence_counters_follow_the_engine_totals_across_a_restart() -> None:
    """The engine reports running totals; the counters add what is new, and a new engine (a
    restart: totals smaller than before) counts from zero instead of going backwards."""
    m = Metrics(0)
    questions, reads = "streamdedup_exact_evidence_questions_total", "streamdedup_exact_evidence_record_reads_total"
    m.batch(1, {}, 0.01, 1, (2, 1))
    m.batch(1, {}, 0.01, 1, (5, 1))
    assert (_sample(m, questions), _sample(m, reads)) == (5.0, 1.0)
    m.batch(1, {}, 0.01, 1, (1, 0))  # a restarted engine
    m.batch(1, {}, 0.01, 1, (3, 2))
    assert (_sample(m, questions), _sample(m, reads)) == (8.0, 3.0)
    m.batch(1, {}, 0.01, None)  # a staged worker: no engine, nothing counted
    assert _sample(m, questions) == 8.0
