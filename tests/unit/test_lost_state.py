"""A lost state directory is noticed: refuse, accept knowingly, or rebuild from the input.

Driven by the in-process fake client (the same case runs on the real broker in
tests/integration/test_hostile.py).
"""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timezone

import orjson
import pytest

from streamdedup.engine.deduplicator import Source
from streamdedup.runtime.since import Since, parse_since
from streamdedup.runtime.single.lost_state import Gap, LostStateError, refusal, state_gaps
from streamdedup.runtime.kafka.clients import Clients
from streamdedup.runtime.single.processor import Processor
from streamdedup.runtime.kafka.startup import StartupError
from streamdedup.pipeline.tags import parse_headers

from .fake_kafka import Admin, Broker, Consumer, Producer
from .test_kafka_delivery import TOPICS, broker, config, feed


def _run(b: Broker, state: str, lost_state="refuse"):
    clients = Clients(consumer=lambda conf: Consumer(b, conf), producer=lambda conf: Producer(b, conf),
                      admin=lambda conf: Admin(b, conf))
    return Processor(config(), state, stop_when_idle=0.05, clients=clients, watchdog=False, lost_state=lost_state).run()


def _resends(records, n: int) -> list[tuple[bytes, bytes]]:
    """Exact resends of the first ``n`` stories under new ids."""
    out = []
    for key, value in records:
        if len(out) == n:
            break
        try:
            doc = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        if isinstance(doc.get("text"), str):
            out.append((b"re-" + key, orjson.dumps({"id": "re-" + doc["id"], "text": doc["text"]})))
    return out


def _statuses(b: Broker, prefix: bytes) -> list[str]:
    return [parse_headers(h).status for _, key, _, h in b.read_committed(list(TOPICS.values())) if key.startswith(prefix)]


@pytest.fixture
def lost(tmp_path):
    """A processed stream whose state directory is then deleted, and resends of its stories behind it."""
    records = feed(300)
    b = broker(records)
    state = str(tmp_path / "state")
    first = _run(b, state)
    assert first.records == len(records)
    shutil.rmtree(state)
    b.append("in", _resends(records, 100))
    return b, state, len(records)


def test_a_lost_state_is_refused_with_the_options(lost) -> None:
    b, state, n = lost
    with pytest.raises(LostStateError) as err:
        _run(b, state)
    msg = str(err.value)
    assert f"has committed offsets on 1 input partition(s) (in[0] at {n:,})" in msg
    assert "--rebuild-from-input" in msg and "--accept-empty-state" in msg and state in msg
    assert _statuses(b, b"re-") == []  # nothing emitted


def test_rebuild_from_input_restores_the_decisions_on_resends(lost) -> None:
    b, state, n = lost
    before = len(b.read_committed(list(TOPICS.values())))
    s = _run(b, state, lost_state=Since("earliest"))
    assert s.records == 100 and s.reconciles()  # the rebuilt records were not emitted again
    assert len(b.read_committed(list(TOPICS.values()))) == before + 100
    assert _statuses(b, b"re-") == ["duplicate"] * 100
    assert _run(b, state).records == 0  # the state now matches the committed offsets: no refusal


def test_accept_empty_state_goes_on_and_says_what_it_costs(lost) -> None:
    b, state, _ = lost
    s = _run(b, state, lost_state="accept")
    assert s.records == 100
    # what the refusal protects against: every story resent comes out unique once (its copies
    # among the resends still match each other); after a rebuild all 100 were duplicates
    assert _statuses(b, b"re-").count("unique") >= 60


def test_gaps_and_since() -> None:
    committed = {("a", 0): 10, ("a", 1): 5, ("a", 2): -1001, ("b", 0): 7}
    got = state_gaps(committed, {Source("a", 0): 10, Source("a", 1): 3})
    assert got == [Gap("a", 1, 5, 3), Gap("b", 0, 7, None)]
    assert "is behind them" in str(refusal(got[:1], "g", "/s"))
    assert "holds none of them" in str(refusal(got[1:], "g", "/s"))
    now = datetime(2026, 11, 23, 12, tzinfo=timezone.utc)
    assert parse_since("90m", now) == Since("time", int(datetime(2026, 11, 23, 10, 30, tzinfo=timezone.utc).timestamp() * 1000))
    assert parse_since("2026-11-20T06:00+01:00") == Since("time", int(datetime(2026, 11, 20, 5, tzinfo=timezone.utc).timestamp() * 1000))
    with pytest.raises(ValueError, match="--rebuild-from-input 'yesterday'"):
        parse_since("yesterday", option="--rebuild-from-input")


def test_a_missing_topic_stops_the_start_naming_its_setting(tmp_path) -> None:
    b = Broker()
    for t in ["in", TOPICS["unique"], TOPICS["duplicate"]]:
        b.create(t)
    with pytest.raises(StartupError, match=r"topic 'out.dead' \(kafka.dead_letter_topic\) does not exist.*kafka.create_topics"):
        _run(b, str(tmp_path / "s"))


@pytest.mark.parametrize("text", ["99999999999999999999", "9223372036854775808", "999999999999d", "9999999999999999999h"])
def test_since_beyond_what_kafka_or_the_calendar_holds_is_a_value_error(text) -> None:
    """Not an OverflowError (a 500 in the web inspector's what-if)."""
    with pytest.raises(ValueError, match=re.escape(repr(text))):
        parse_since(text, option="--since")


def test_a_rebuild_that_finds_nothing_says_so_as_a_warning(lost, caplog) -> None:
    """A SINCE at or past the committed offsets indexes nothing: as good as accepting the empty
    state, so it is a warning, not an info line about 0 records."""
    b, state, n = lost
    with caplog.at_level("INFO", logger="streamdedup"):
        _run(b, state, lost_state=Since("offset", n + 1000))
    warned = [r for r in caplog.records if r.levelname == "WARNING" and "found no records" in r.getMessage()]
    assert len(warned) == 1 and "pass as unique" in warned[0].getMessage()


def test_a_rebuild_of_the_last_n_starts_within_what_the_partition_holds() -> None:
    """Retention deleted offsets 0..49: the last 1,000 before offset 100 start at 50 (a start
    below the partition's first offset would send the consumer to its end)."""
    from confluent_kafka import TopicPartition

    from streamdedup.runtime.single.rebuild import _start_offsets

    class Held:
        def get_watermark_offsets(self, tp, timeout=None):
            return 50, 120

    starts = _start_offsets(Held(), [Gap("in", 0, 100, None), Gap("in", 1, 100, 90)], Since("last", 1000))
    assert starts == [TopicPartition("in", 0, 50), TopicPartition("in", 1, 90)]
    assert _start_offsets(Held(), [Gap("in", 0, 100, None)], Since("last", 10)) == [TopicPartition("in", 0, 90)]


@pytest.mark.parametrize("text", ["1969-12-31T23:59:59.999Z", "1900-01-01"])
def test_a_time_before_1970_is_refused(text) -> None:
    """The broker would read its negative milliseconds as "latest" or "earliest"."""
    with pytest.raises(ValueError, match="before 1970"):
        parse_since(text, option="--since")
