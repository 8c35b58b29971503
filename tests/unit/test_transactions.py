"""The transactional producer's steps every Kafka runtime shares (runtime/kafka/transactions.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from streamdedup.runtime.kafka import transactions as T


class _Queue:
    """A producer whose local queue is full for the first ``full`` calls."""

    def __init__(self, full: int):
        self.full, self.calls, self.polls, self.sent = full, [], 0, []

    def produce(self, topic, value, key=None, **options):
        self.calls.append((topic, value, key, options))
        if len(self.calls) <= self.full:
            raise BufferError("Local: Queue full")
        self.sent.append((topic, value, key, options))

    def poll(self, timeout):
        self.polls += 1


def test_a_full_local_queue_is_served_and_the_record_produced_once() -> None:
    q = _Queue(full=3)
    T.produce_waiting(q, "out", b"v", b"k", headers=[("h", b"1")], partition=0)
    assert q.polls == 3 and q.sent == [("out", b"v", b"k", {"headers": [("h", b"1")], "partition": 0})]


def test_which_errors_are_retried_and_which_abort_the_transaction() -> None:
    retriable = KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True))
    abortable = KafkaException(KafkaError(KafkaError._FENCED, "x", txn_requires_abort=True))
    fatal = KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    assert T.retriable(retriable) and not T.retriable(fatal) and not T.retriable(ValueError("x"))
    assert T.requires_abort(abortable) and not T.requires_abort(fatal)


def test_the_offsets_go_into_the_transaction_before_its_commit_each_retried() -> None:
    said = []

    class P:
        def __init__(self):
            self.failures = 1

        def send_offsets_to_transaction(self, offsets, group, timeout):
            said.append(("offsets", offsets, group))
            if self.failures:
                self.failures -= 1
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "coordinator moved", retriable=True))

        def commit_transaction(self, timeout):
            said.append(("commit", timeout))

    touched = []
    T.commit_offsets(P(), ["tp"], "group", lambda: touched.append(1), slice_s=5.0)
    assert said == [("offsets", ["tp"], "group"), ("offsets", ["tp"], "group"), ("commit", 5.0)] and touched == [1]


def test_a_fatal_error_is_not_retried() -> None:
    class P:
        def init_transactions(self, timeout):
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))

    with pytest.raises(KafkaException):
        T.init_transactions(P(), lambda: None, pause_s=0.0)


class _Aborting:
    """A producer whose abort succeeds, or fails with ``fails``."""

    def __init__(self, fails: KafkaException | None = None):
        self.fails, self.aborts = fails, 0

    def abort_transaction(self, timeout):
        self.aborts += 1
        if self.fails is not None:
            raise self.fails


def _error(code: int, *, abort: bool = False, fatal: bool = False, retriable: bool = False) -> KafkaException:
    return KafkaException(KafkaError(code, "x", fatal=fatal, retriable=retriable, txn_requires_abort=abort))


def test_a_failed_transaction_is_aborted_or_its_producer_replaced() -> None:
    """Both runtimes' one rule: an abortable error is aborted and the producer goes on; a failed
    abort, a fatal error and one neither abortable nor fatal need a new producer (no abort tried)."""
    p = _Aborting()
    assert T.aborted(p, _error(KafkaError._TIMED_OUT, abort=True)) and p.aborts == 1
    p = _Aborting(fails=_error(KafkaError._TIMED_OUT, retriable=True))
    assert not T.aborted(p, _error(KafkaError._TIMED_OUT, abort=True)) and p.aborts == 1
    for err in (_error(KafkaError._FENCED, fatal=True), _error(KafkaError._TIMED_OUT, retriable=True)):
        p = _Aborting()
        assert not T.aborted(p, err) and p.aborts == 0


class _Txn(_Aborting):
    """A transactional producer that records its id's registration and its transactions."""

    def __init__(self, fails=None):
        super().__init__(fails)
        self.inits, self.begun = 0, 0

    def init_transactions(self, timeout):
        self.inits += 1

    def begin_transaction(self):
        self.begun += 1


@pytest.mark.parametrize("fenced", ["replace", "raise"])
def test_one_transactional_producer_follows_the_rule_and_its_runtime_s_fenced_policy(fenced: str) -> None:
    """``Transactional``: the producer's id is registered when it starts; an abortable error is
    aborted and the producer goes on; a failed abort gets a new, registered producer; a fatal
    error gets one under ``fenced="replace"`` (the processor) and is raised under ``"raise"``
    (a worker whose instance another process took over)."""
    made: list[_Txn] = []

    def new() -> _Txn:
        made.append(_Txn(fails=_error(KafkaError._TIMED_OUT, retriable=True) if len(made) == 1 else None))
        return made[-1]

    tx = T.Transactional(new, touch=lambda: None, fenced=fenced, pause_s=0.0)
    tx.begin()
    assert tx.producer is made[0] and made[0].inits == 1 and made[0].begun == 1
    assert tx.failed(_error(KafkaError._TIMED_OUT, abort=True)) and tx.producer is made[0] and made[0].aborts == 1
    tx.start()  # the second producer's abort fails: a third one takes over
    assert not tx.failed(_error(KafkaError._TIMED_OUT, abort=True)) and tx.producer is made[2] and made[2].inits == 1
    fatal = _error(KafkaError._FENCED, fatal=True)
    if fenced == "raise":
        with pytest.raises(KafkaException):
            tx.failed(fatal)
        assert tx.producer is made[2] and len(made) == 3
    else:
        assert not tx.failed(fatal) and tx.producer is made[3] and made[2].aborts == 0
