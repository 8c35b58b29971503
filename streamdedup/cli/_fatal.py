"""One line for an error that ends a command: what happened and, where we know it, what to do.

Operators read it in a pod's last log lines: a 90-line traceback with "No space left on device"
in its middle hides the one fact they need. The traceback is for ``--debug``.
"""

from __future__ import annotations

import logging

from streamdedup.errors import StreamdedupError

log = logging.getLogger("streamdedup")


def fatal_message(exc: BaseException) -> str:
    """The message for ``exc``; logged as one JSON line too when the JSON logger is set up."""
    message = _describe(exc)
    if log.handlers:  # the Kafka processor's JSON logs: its last line says why it stopped
        log.critical("fatal: %s", message, extra={"error_type": type(exc).__name__})
    return message


def _describe(exc: BaseException) -> str:
    if isinstance(exc, StreamdedupError):
        return str(exc)
    text = str(exc)
    if "No space left on device" in text:
        # RocksDB reports a full disk from its background flushes and compactions too, as a
        # plain Exception wherever the next call notices it
        return (f"the disk is full (No space left on device): {text}; free space (or move state.dir) and restart: "
                f"nothing is lost, the unfinished batch is decided again")
    from confluent_kafka import KafkaError, KafkaException

    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        if err.code() == KafkaError._INVALID_ARG:
            return f"kafka.librdkafka: {err.str()}"
        return f"Kafka: {err.str()} ({err.name()}; --debug shows where)"
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {text} (unexpected: --debug shows the traceback; please report it)"
