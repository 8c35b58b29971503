"""The integration tier: a real Apache Kafka broker from scripts/kafka-local, never a mock.

A broker that cannot be started is an error, not a skip (also outside CI): these tests are
the only evidence that the processor works on Kafka.
"""

from __future__ import annotations

import os

import pytest

from .kafka_helpers import Topics, free_ports, start_broker, stop_broker


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _kernels_in_the_cache():
    """Every kernel compiled once, up front, as ``streamdedup warm-up`` does (a fresh clone has
    none): the processes these tests start load them instead of each paying a cold start inside
    a test's deadlines. Cold starts have tests of their own (marker ``cold_cache``)."""
    from streamdedup.config import load_config
    from streamdedup.warmup import fill

    fill.fill(load_config(environ={}), fill.NEEDS["all"])


@pytest.fixture(scope="session")
def kafka_bootstrap():
    """A broker of the tests' own on free ports (never one that happens to listen on 9092: its
    settings and topics are not the tests'), or the one ``STREAMDEDUP_TEST_BOOTSTRAP`` names."""
    given = os.environ.get("STREAMDEDUP_TEST_BOOTSTRAP")
    if given:
        yield given
        return
    port, controller = free_ports(2)
    address = start_broker(port, controller)
    yield address
    if os.environ.get("STREAMDEDUP_KEEP_BROKER") == "1":
        print(f"\nthe tests' broker is left running at {address} (scripts/kafka-local stop with KAFKA_PORT={port})")
    else:
        stop_broker(port)


@pytest.fixture
def topics(kafka_bootstrap):
    t = Topics(kafka_bootstrap)
    t.create()
    return t
