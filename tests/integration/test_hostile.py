"""Hostile conditions on the real broker: bad settings fail fast with one line naming
the setting, secrets reach librdkafka unaltered and appear nowhere else, a lost state is noticed,
fatal errors are one line (a traceback only with --debug), spoofed tags do not survive.

(Case 1, an output too large to produce, is tests/integration/test_oversize.py.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import orjson
import pytest

from streamdedup.bench.feeds import news_records

from .kafka_helpers import REPO, KAFKA_LOCAL, Topics, consume_all, produce

SASL_PASSWORD = "0123"  # what YAML would have read as 83: the broker knows only the string
ODD_PASSWORD = "*S3cr3t: {x"  # not valid YAML: once printed in an error message


def _cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "streamdedup.cli", *args]
    return subprocess.run(cmd, env=env, cwd=str(REPO), capture_output=True, text=True, timeout=timeout)


def _run(env: dict, state: str, *extra: str, idle: float = 3.0, timeout: float = 180) -> subprocess.CompletedProcess:
    return _cli(env, "run", "--state-dir", state, "--stop-when-idle", str(idle), *extra, timeout=timeout)


def _env(topics: Topics, **extra: str) -> dict:
    return topics.env(**{"STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]", "STREAMDEDUP_KAFKA__STARTUP_TIMEOUT_S": "8", **extra})


def _one_line_error(res: subprocess.CompletedProcess) -> str:
    """The command failed with exit 1, a single ``Error:`` line and no traceback."""
    assert res.returncode == 1, res.stderr[-2000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1, res.stderr[-2000:]
    return errors[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- 3: it fails instead of hanging ---------------------------------------------------------------

def test_unreachable_broker_fails_within_the_startup_timeout(topics, tmp_path) -> None:
    env = _env(topics, STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS=f"127.0.0.1:{_free_port()}",
               STREAMDEDUP_KAFKA__STARTUP_TIMEOUT_S="6")
    t0 = time.monotonic()
    res = _run(env, str(tmp_path / "s"), timeout=60)
    took = time.monotonic() - t0
    line = _one_line_error(res)
    assert "no Kafka broker answered" in line and "kafka.bootstrap_servers" in line and "kafka.startup_timeout_s" in line
    assert took < 6 + 15  # the deadline plus the interpreter's start
    librdkafka_lines = [ln for ln in res.stderr.splitlines() if '"logger": "streamdedup.librdkafka"' in ln]
    assert len(librdkafka_lines) <= 3, res.stderr  # rate-limited (was 1,269 lines a minute)


def test_misspelt_input_topic_is_named_with_its_setting(topics, tmp_path) -> None:
    res = _run(_env(topics, STREAMDEDUP_KAFKA__INPUT_TOPICS=f"[{topics.input}x]"), str(tmp_path / "s"))
    line = _one_line_error(res)
    assert f"topic '{topics.input}x' (kafka.input_topics) does not exist, did you mean '{topics.input}'?" in line


def test_missing_output_topics_fail_or_are_created_when_configured(kafka_bootstrap, tmp_path) -> None:
    t = Topics(kafka_bootstrap)
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # held: a collected client cancels its futures
    admin.create_topics([NewTopic(t.input, 1, 1)])[t.input].result(30)
    res = _run(_env(t), str(tmp_path / "s"))
    line = _one_line_error(res)
    for name, setting in (("unique", "kafka.unique_topic"), ("duplicate", "kafka.duplicates_topic"),
                          ("dead_letter", "kafka.dead_letter_topic")):
        assert f"topic '{t.outputs[name]}' ({setting}) does not exist" in line
    assert "kafka.create_topics" in line
    records = news_records(50, seed=41)
    produce(kafka_bootstrap, t.input, records)
    res = _run(_env(t, STREAMDEDUP_KAFKA__CREATE_TOPICS="true"), str(tmp_path / "s"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(consume_all(kafka_bootstrap, list(t.outputs.values()), len(records))) == len(records)


def test_invalid_librdkafka_property_is_one_line(topics, tmp_path) -> None:
    res = _run(_env(topics, STREAMDEDUP_KAFKA__LIBRDKAFKA__FETCH_MAX_BYTEZ="1"), str(tmp_path / "s"))
    assert _one_line_error(res) == 'Error: kafka.librdkafka: No such configuration property: "fetch.max.bytez"'


# -- 2 and 3: secrets unaltered and unseen; a failed login fails fast -------------------------------

@pytest.fixture(scope="module")
def sasl_broker():
    """A broker of its own with a SASL_PLAINTEXT listener (scripts/kafka-local KAFKA_SASL_PORT)."""
    port, cport, sport = _free_port(), _free_port(), _free_port()
    env = dict(os.environ, KAFKA_PORT=str(port), KAFKA_CONTROLLER_PORT=str(cport), KAFKA_SASL_PORT=str(sport))
    jaas = f'user_streamdedup="{SASL_PASSWORD}" user_odd="{ODD_PASSWORD}"'
    env["KAFKA_SASL_USERS"] = jaas
    start = subprocess.run([str(KAFKA_LOCAL), "start"], env=env, capture_output=True, text=True, timeout=600)
    assert start.returncode == 0, start.stderr[-3000:]
    try:
        yield f"127.0.0.1:{port}", f"127.0.0.1:{sport}"
    finally:
        subprocess.run([str(KAFKA_LOCAL), "stop"], env=env, capture_output=True, timeout=120)


def _sasl_env(topics: Topics, sasl_bootstrap: str, user: str, password: str) -> dict:
    return _env(topics, STREAMDEDUP_KAFKA__BOOTSTRAP_SERVERS=sasl_bootstrap,
                STREAMDEDUP_KAFKA__LIBRDKAFKA__SECURITY_PROTOCOL="SASL_PLAINTEXT",
                STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_MECHANISM="PLAIN",
                STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_USERNAME=user,
                STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD=password)


@pytest.mark.parametrize("user,password", [("streamdedup", SASL_PASSWORD), ("odd", ODD_PASSWORD)])
def test_passwords_reach_librdkafka_unaltered_and_are_never_shown(sasl_broker, tmp_path, user, password) -> None:
    plain, sasl = sasl_broker
    t = Topics(plain)
    t.create()
    records = news_records(100, seed=43)
    produce(plain, t.input, records)
    res = _run(_sasl_env(t, sasl, user, password), str(tmp_path / "s"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert password not in res.stderr and password not in res.stdout
    assert len(consume_all(plain, list(t.outputs.values()), len(records))) == len(records)


def test_failed_login_fails_fast_and_hides_the_password(sasl_broker, tmp_path) -> None:
    plain, sasl = sasl_broker
    t = Topics(plain)
    t.create()
    t0 = time.monotonic()
    res = _run(_sasl_env(t, sasl, "streamdedup", "0124:wrong{"), str(tmp_path / "s"), timeout=60)
    line = _one_line_error(res)
    assert "authentication to the Kafka cluster" in line and "sasl.password" in line
    assert "0124:wrong{" not in res.stderr
    assert time.monotonic() - t0 < 8 + 15


# -- 4: metrics on the loopback interface by default ------------------------------------------------

def _listening(port: int) -> list[str]:
    """Local addresses (hex, /proc/net/tcp) listening on ``port``."""
    out = []
    with open("/proc/net/tcp") as f:
        lines = f.read().splitlines()[1:]
    for line in lines:
        local, state = line.split()[1], line.split()[3]
        addr, p = local.split(":")
        if int(p, 16) == port and state == "0A":
            out.append(addr)
    return out


def test_metrics_listen_on_loopback_only(topics, tmp_path) -> None:
    port = _free_port()
    records = news_records(20000, seed=47)
    produce(topics.bootstrap, topics.input, records)
    cmd = [sys.executable, "-m", "streamdedup.cli", "run", "--state-dir", str(tmp_path / "s"), "--stop-when-idle", "3"]
    proc = subprocess.Popen(cmd, env=_env(topics, STREAMDEDUP_KAFKA__METRICS_PORT=str(port)), cwd=str(REPO),
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _listening(port) == ["0100007F"]  # 127.0.0.1, not 00000000 (every interface)
    finally:
        proc.terminate()
        proc.wait(60)


# -- 5: a lost state is noticed -------------------------------------------------------------------

def test_lost_state_is_refused_then_rebuilt_from_the_input(topics, tmp_path) -> None:
    stories = news_records(1000, seed=53)
    produce(topics.bootstrap, topics.input, stories)
    state = str(tmp_path / "state")
    env = _env(topics)
    assert _run(env, state).returncode == 0
    shutil.rmtree(state)
    resends = [(b"re-" + k, orjson.dumps({**orjson.loads(v), "id": "re-" + k.decode()})) for k, v in stories]
    produce(topics.bootstrap, topics.input, resends)
    line = _one_line_error(_run(env, state))
    assert "has committed offsets on 3 input partition(s)" in line and "--rebuild-from-input" in line
    assert "--accept-empty-state" in line
    res = _run(env, state, "--rebuild-from-input", "earliest")
    assert res.returncode == 0, res.stderr[-2000:]
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), 2 * len(stories))
    keys = [k for _, k, _, _ in out]
    assert len(keys) == len(set(keys)) == 2 * len(stories)  # the rebuild emitted nothing again
    resent = [h["dedup.status"] for _, k, _, h in out if k.startswith(b"re-")]
    assert resent == [b"duplicate"] * len(stories)  # without the rebuild most came out unique (959 of 1,000)


# -- 6: fatal errors are one line; --debug shows the traceback ---------------------------------------

def test_incompatible_state_is_one_line_and_debug_shows_the_traceback(topics, tmp_path) -> None:
    produce(topics.bootstrap, topics.input, news_records(30, seed=59))
    state = str(tmp_path / "state")
    assert _run(_env(topics), state).returncode == 0
    other = _env(topics, STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM="64")
    line = _one_line_error(_run(other, state))
    assert "use a new state directory" in line
    debug = _cli(other, "--debug", "run", "--state-dir", state, "--stop-when-idle", "3")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs (a disk that fills up) needs root")
def test_full_state_disk_is_one_line_and_nothing_is_lost(topics, tmp_path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], check=True)
    try:
        records = news_records(6000, seed=61)
        produce(topics.bootstrap, topics.input, records)
        state = str(disk / "state")
        line = _one_line_error(_run(_env(topics), state))
        assert "the disk is full (No space left on device)" in line and state in line
        shutil.copytree(state, tmp_path / "state")  # more space: the same state on a bigger disk
        res = _run(_env(topics), str(tmp_path / "state"))
        assert res.returncode == 0, res.stderr[-2000:]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
    out = consume_all(topics.bootstrap, list(topics.outputs.values()), len(records))
    keys = [k for _, k, _, _ in out]
    assert len(keys) == len(set(keys)) == len(records)


# -- 7: incoming dedup.* headers cannot spoof the tags -----------------------------------------------

def test_spoofed_tags_are_renamed_upstream(topics, tmp_path) -> None:
    from confluent_kafka import Producer

    records = news_records(20, seed=67)
    p = Producer({"bootstrap.servers": topics.bootstrap, "enable.idempotence": True})
    for k, v in records:
        p.produce(topics.input, v, k, headers=[("dedup.status", b"unique"), ("dedup.duplicate_of", b"nobody")])
    p.produce(topics.input, records[0][1], b"copy", headers=[("dedup.status", b"unique")])
    assert p.flush(30) == 0
    assert _run(_env(topics), str(tmp_path / "s")).returncode == 0
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": topics.bootstrap, "group.id": f"chk-{topics.run_id}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed"})
    c.subscribe(list(topics.outputs.values()))
    seen = {}
    deadline = time.monotonic() + 60
    while len(seen) < len(records) + 1 and time.monotonic() < deadline:
        for m in c.consume(100, 0.5):
            if m.error() is None:
                seen[m.key()] = m.headers()
    c.close()
    assert len(seen) == len(records) + 1
    for key, headers in seen.items():
        names = [n for n, _ in headers]
        assert names.count("dedup.status") == 1 and ("dedup.upstream.status", b"unique") in headers
    # the copy and its original say "unique" upstream; ours says one of them is a duplicate
    # (which one depends on the order their partitions are read)
    pair = sorted(dict(seen[k])["dedup.status"] for k in (b"copy", records[0][0]))
    assert pair == [b"duplicate", b"unique"]
