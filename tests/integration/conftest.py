"""The integration tier: a real Apache Kafka broker from scripts/kafka-local, never a mock.

A broker that cannot be started is an error, not a skip (also outside CI): these tests are
the only evidence that the processor works on Kafka.
"""

from __future__ import annotations

import os

import pytest

from .kafka_helpers import Topics, broker_running, start_broker, stop_broker


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
    given = os.environ.get("STREAMDEDUP_TEST_BOOTSTRAP")
    if given:
        yield given
        return
    # a broker someone else started (make demo, scripts/kafka-local start) is reused and left running
    ours = not broker_running()
    address = start_broker()
    yield address
    if ours and os.environ.get("STREAMDEDUP_KEEP_BROKER") != "1":
        stop_broker()


@pytest.fixture
def topics(kafka_bootstrap):
    t = Topics(kafka_bootstrap)
    t.create()
    return t
