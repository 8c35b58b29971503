"""Start-up checks: the cluster answers, we are let in, the topics exist; or one line saying which setting is wrong.

Without them a processor with an unreachable bootstrap address, a failed SASL login or a
misspelt input topic waited forever (its idle clock starts with the first assignment), and
missing output topics gave a traceback after 64 s that did not name them. All of it
is decided within ``kafka.startup_timeout_s``.
"""

from __future__ import annotations

import difflib
import logging
import time
from dataclasses import dataclass
from typing import Callable

from confluent_kafka import KafkaError, KafkaException

from streamdedup.config import KafkaConfig
from streamdedup.errors import StreamdedupError
from streamdedup.pipeline.route import outputs_in_use
from streamdedup.runtime.kafka.clientlog import client_settings

log = logging.getLogger(__name__)

#: errors that waiting does not cure: fail at once instead of at the deadline
_AUTH_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
_ATTEMPT_S = 5.0  # one metadata request; between attempts the client's error reports are read


class StartupError(StreamdedupError):
    """A start-up check failed; the message names the setting to look at."""


@dataclass(frozen=True)
class Cluster:
    """What the checks saw: partitions per topic (input and output topics)."""

    partitions: dict[str, int]


#: reads of the metadata, this far apart, that a topic just created may take to appear in it
_CREATED_ATTEMPTS = 50
_CREATED_WAIT_S = 0.1


def topic_settings(kcfg: KafkaConfig, staged: bool = False, revisions: bool = False) -> dict[str, str]:
    """Each topic the processor uses -> the setting that names it (an input topic may also be an output: first wins).
    ``staged`` adds the staged topology's fingerprints and decisions topics, ``revisions`` the
    revisions topic (``verify.revisions: topic``); ``kafka.queries.topic`` set, the query topics."""
    out = {t: "kafka.input_topics" for t in kcfg.input_topics}
    named = [(o.topic(kcfg), f"kafka.{o.setting}") for o in outputs_in_use(revisions)]
    if staged:
        named += [(kcfg.staged.fingerprints_topic, "kafka.staged.fingerprints_topic"),
                  (kcfg.staged.decisions_topic, "kafka.staged.decisions_topic")]
    if kcfg.queries.topic:  # the index's owner answers queries
        named += [(kcfg.queries.topic, "kafka.queries.topic"), (kcfg.queries.reply_topic, "kafka.queries.reply_topic")]
    for topic, setting in named:
        out.setdefault(topic, setting)
    return out


def check_cluster(kcfg: KafkaConfig, new_admin: Callable[[dict], object] | None = None,
                  clock: Callable[[], float] = time.monotonic, staged: bool = False, revisions: bool = False) -> Cluster:
    """Run the checks; raise :class:`StartupError` naming the problem and the setting.

    ``new_admin`` makes the admin client from a librdkafka config (default confluent-kafka's
    ``AdminClient``); a test passes a fake. ``staged`` and ``revisions``: as :func:`topic_settings`.
    """
    if new_admin is None:
        from confluent_kafka.admin import AdminClient as new_admin
    errors: list[KafkaError] = []
    conf = client_settings(kcfg, {"error_cb": errors.append})
    try:
        admin = new_admin(conf)
    except KafkaException as exc:  # an unknown or invalid librdkafka property
        raise StartupError(f"kafka.librdkafka: {exc.args[0].str()}") from None
    metadata = _metadata(admin, kcfg, errors, clock)
    missing = _missing(metadata, kcfg, staged, revisions)
    if missing and kcfg.create_topics:
        from streamdedup.runtime.kafka.admin import create_topics

        made = []
        for topic, outcome in create_topics(kcfg, admin=admin, staged=staged, revisions=revisions).items():
            if outcome == "created":
                made.append(topic)
                log.warning("created topic %s (%s was missing; kafka.create_topics is on)", topic,
                            topic_settings(kcfg, staged, revisions)[topic])
        # a topic just created reaches the metadata the brokers serve a moment later
        for _ in range(_CREATED_ATTEMPTS):
            metadata = _metadata(admin, kcfg, errors, clock)
            missing = _missing(metadata, kcfg, staged, revisions)
            if not set(missing) & set(made):
                break
            time.sleep(_CREATED_WAIT_S)
    if missing:
        raise StartupError(_missing_message(missing, metadata, kcfg, staged, revisions))
    return Cluster({t: len(metadata.topics[t].partitions) for t in topic_settings(kcfg, staged, revisions)})


def _metadata(admin, kcfg: KafkaConfig, errors: list, clock: Callable[[], float]):
    """Cluster metadata within the deadline; an authentication failure ends the wait at once."""
    deadline = clock() + kcfg.startup_timeout_s
    last = None
    while True:
        remaining = deadline - clock()
        try:
            return admin.list_topics(timeout=max(0.1, min(_ATTEMPT_S, remaining)))
        except KafkaException as exc:
            last = exc.args[0]
        admin.poll(0)  # serves error_cb: the reason a metadata request timed out
        for err in errors:
            if err.code() in _AUTH_CODES:
                raise StartupError(f"authentication to the Kafka cluster at {kcfg.bootstrap_servers} failed: "
                                   f"{err.str()} (kafka.librdkafka: security.protocol, sasl.mechanism, "
                                   f"sasl.username, sasl.password)")
        if errors:
            last = errors[-1]
        errors.clear()
        if clock() >= deadline:
            why = f": {last.str()}" if last is not None else ""
            raise StartupError(f"no Kafka broker answered at {kcfg.bootstrap_servers} within {kcfg.startup_timeout_s:g} s "
                               f"(kafka.bootstrap_servers; the wait is kafka.startup_timeout_s){why}")


def _missing(metadata, kcfg: KafkaConfig, staged: bool, revisions: bool) -> dict[str, str]:
    """Topic -> why it cannot be used (absent, or the broker's error for it)."""
    out = {}
    for topic in topic_settings(kcfg, staged, revisions):
        tm = metadata.topics.get(topic)
        if tm is None or (tm.error is not None and tm.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            out[topic] = "does not exist"
        elif tm.error is not None:
            out[topic] = tm.error.str()
    return out


def _missing_message(missing: dict[str, str], metadata, kcfg: KafkaConfig, staged: bool, revisions: bool) -> str:
    settings = topic_settings(kcfg, staged, revisions)
    existing = [t for t in metadata.topics if not t.startswith("__")]
    parts = []
    for topic, why in missing.items():
        close = difflib.get_close_matches(topic, existing, n=1)
        hint = f", did you mean {close[0]!r}?" if close and why == "does not exist" else ""
        parts.append(f"topic {topic!r} ({settings[topic]}) {why}{hint}")
    absent = any(why == "does not exist" for why in missing.values())
    create = "streamdedup topics create --topology staged" if staged else "streamdedup topics create"
    advice = (f"; create the missing topics ({create}) or set kafka.create_topics: true" if absent and not kcfg.create_topics
              else "")
    return f"on {kcfg.bootstrap_servers}: " + "; ".join(parts) + advice
