"""Small runtime parts: the retry helper, the watchdog, the state lock (standby detection)."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from streamdedup.errors import StateLockedError
from streamdedup.runtime.kafka.batch import describe
from streamdedup.runtime.kafka.retry import retry
from streamdedup.runtime.kafka.supervisor import Watchdog
from streamdedup.state.rocks import RocksStore, open_waiting

from .fake_kafka import Msg, Rec


def _retriable(exc: BaseException) -> bool:
    return isinstance(exc, KafkaException) and exc.args[0].retriable()


def test_retry_until_success_then_until_the_deadline() -> None:
    calls = []
    clock = [0.0]

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker away", retriable=True))
        return "ok"

    assert retry(flaky, what="x", deadline_s=10, retriable=_retriable, sleep=lambda s: None) == "ok" and len(calls) == 3

    def always():
        clock[0] += 4
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "still away", retriable=True))

    with pytest.raises(KafkaException, match="still away"):
        retry(always, what="x", deadline_s=10, retriable=_retriable, clock=lambda: clock[0], sleep=lambda s: None)
    assert clock[0] == 12  # tried at 4 and 8 (before the deadline at 10), gave up at 12
    fatal = KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    with pytest.raises(KafkaException, match="fenced"):
        retry(lambda: (_ for _ in ()).throw(fatal), what="x", deadline_s=10, retriable=_retriable, sleep=lambda s: None)


def test_watchdog_restarts_a_stalled_loop_and_not_a_live_one() -> None:
    fired = threading.Event()
    live = Watchdog(0.3, restart=fired.set, check_every_s=0.05).start()
    for _ in range(10):
        live.touch()
        time.sleep(0.05)
    live.stop()
    assert not fired.is_set()
    Watchdog(0.2, restart=fired.set, check_every_s=0.05).start()
    assert fired.wait(3)


def test_watchdog_restarts_when_a_bounded_call_hangs_past_its_timeout() -> None:
    """A client call that overruns its own timeout (librdkafka's send_offsets_to_transaction
    after a broker restart) restarts the process long before the main loop's limit; one that
    returns within its timeout and grace does not, nor does a disabled watchdog."""
    fired = threading.Event()
    dog = Watchdog(60, restart=fired.set, check_every_s=0.02, grace_s=0.1).start()
    assert dog.bounded("send_offsets_to_transaction", 0.1, lambda: time.sleep(0.15) or "ok") == "ok"
    time.sleep(0.2)
    assert not fired.is_set()
    hung = threading.Thread(target=dog.bounded, args=("send_offsets_to_transaction", 0.1, lambda: time.sleep(3)))
    hung.start()
    assert fired.wait(2.5) and hung.is_alive()  # at ~0.2 s, while the call still hangs
    hung.join()
    off = threading.Event()
    Watchdog(0, restart=off.set, check_every_s=0.02, grace_s=0.1).start().bounded("commit_transaction", 0.01,
                                                                                    lambda: time.sleep(0.3))
    assert not off.is_set()


def test_watchdog_names_a_long_decide_step_and_does_not_restart_for_it(caplog) -> None:
    """Deciding a batch of long records is work on input, not a stall: restarting would read the
    same records and overrun again. Past the limit it is named, with its records, each limit it
    runs on; once it ends, a loop that stalls is restarted as before."""
    fired = threading.Event()
    asked = []
    dog = Watchdog(0.2, restart=fired.set, check_every_s=0.02).start()
    with caplog.at_level(logging.WARNING, logger="streamdedup.runtime.kafka"):
        with dog.working(lambda: asked.append(1) or "deciding a batch of 3 records (in:0 offsets 7-9)"):
            time.sleep(0.7)
    assert not fired.is_set()
    warned = [r.getMessage() for r in caplog.records if "deciding a batch" in r.getMessage()]
    assert 2 <= len(warned) <= 4 and len(asked) == len(warned)
    assert "in:0 offsets 7-9" in warned[0] and "not restarting" in warned[0]
    assert fired.wait(2)  # nothing runs and nothing touches it: a stall
    dog.stop()


def test_a_batch_is_described_by_its_positions_and_longest_record() -> None:
    def msg(partition: int, offset: int, value: bytes | None) -> Msg:
        return Msg("news", partition, offset, Rec(None, value, None))

    msgs = [msg(0, 12, b"ab"), msg(1, 5, None), msg(0, 10, b"x" * 2000)]
    assert describe("deciding", msgs) == ("deciding a batch of 3 records (news:0 offsets 10-12, news:1 offsets 5-5; "
                                          "longest record 2,000 bytes at news:0:10)")


def test_a_state_held_by_another_process_is_a_standby_not_an_error(tmp_path) -> None:
    path = str(tmp_path / "state")
    RocksStore(path).close()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from streamdedup.state.rocks import RocksStore; "
                               f"s = RocksStore({path!r}); print('open', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StateLockedError, match="in use by another process"):
            RocksStore(path)
        t0 = time.monotonic()
        assert open_waiting(path, False, stop=lambda: time.monotonic() - t0 > 0.5, poll_s=0.1) is None
        holder.kill()
        holder.wait(10)
        store = open_waiting(path, False, stop=lambda: False, poll_s=0.1)
        assert store is not None
        with pytest.raises(StateLockedError, match="already open in this process"):
            RocksStore(path)
        store.close()
    finally:
        holder.kill()
        holder.wait(10)
        holder.stdout.close()
