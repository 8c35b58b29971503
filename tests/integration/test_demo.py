"""The main job (``make demo``'s Kafka demo) on the real broker, and the commands it tells a user to
run next: ``inspect`` shows its duplicates with their originals, fetched where their tags say."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from streamdedup import load_config

from .kafka_helpers import REPO, broker_running, free_ports, stop_broker


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamdedup.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_the_kafka_demo_and_the_inspect_and_tune_commands_it_prints(kafka_bootstrap, tmp_path) -> None:
    demo = _cli("demo", "--mode", "kafka", "--stories", "200", "--bootstrap-servers", kafka_bootstrap,
                "--output-dir", str(tmp_path), "--broker-kept")
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "reconciles: True" in demo.stdout
    printed = [shlex.split(line.split("#")[0]) for line in demo.stdout.splitlines() if line.startswith("  ") and " --config " in line]
    printed = [words[next(i for i, w in enumerate(words) if w in ("inspect", "ui", "tune")):] for words in printed]
    assert [c[0] for c in printed] == ["inspect", "ui", "tune"]
    cfg = load_config(str(tmp_path / "demo-kafka.yaml"))
    input_topic = cfg.kafka.input_topics[0]

    shown = _cli(*printed[0], "--json", "--limit", "30")
    assert shown.returncode == 0, shown.stderr[-2000:]
    pairs = [json.loads(line) for line in shown.stdout.splitlines()]
    assert len(pairs) >= 5
    for p in pairs:
        # every original was read at the input position its dedup.original tag names
        assert p["original"] is not None, p["missing"]
        assert p["tags"]["original"].startswith(f"{input_topic}:0:")
        assert p["original"]["position"] == p["tags"]["original"]
        assert p["original"]["id"] == p["tags"]["duplicate_of"] and p["original"]["text"]
        if p["tags"]["relation"] != "exact":
            assert any(s["op"] != "equal" for s in p["diff"])

    tune = _cli(*printed[2])
    assert tune.returncode == 0, tune.stderr[-2000:]
    assert "would flip:" in tune.stdout


def test_make_demo_prints_next_steps_that_a_new_shell_runs(tmp_path) -> None:
    """``make demo KEEP=1`` on a broker of its own port, as a user without an activated
    virtualenv runs it; every line it prints to run next (inspect, tune, stopping the broker)
    is pasted into a new shell elsewhere and works; the ui server is left out."""
    port, controller = free_ports(2)
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMDEDUP_", "KAFKA_", "VIRTUAL_ENV"))}
    env["PATH"] = path
    out = tmp_path / "demo"
    try:
        # this test's interpreter and virtualenv: make must not pick (and rebuild) another one under it
        venv = Path(sys.executable).parents[1]
        made = subprocess.run(["make", "-s", "demo", "KEEP=1", f"KAFKA_PORT={port}", f"KAFKA_CONTROLLER_PORT={controller}",
                               f"PYTHON={sys.executable}", f"VENV={venv}", f"DEMO_ARGS=--stories 200 --output-dir {out}"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
        raw = [line for line in made.stderr.splitlines() if re.match(r"%\d\|", line)]
        assert not raw, f"librdkafka lines outside the JSON logger: {raw}"
        steps = [line.split("#")[0].strip() for line in made.stdout.splitlines() if line.startswith("  ")]
        run_next = [s for s in steps if " --config " in s and " ui " not in s]
        stop = [s for s in steps if s.startswith("KAFKA_PORT=")]
        assert len(run_next) == 2 and len(stop) == 1, made.stdout[-3000:]
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        for line in run_next:
            ran = subprocess.run(["bash", "-c", line], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
            assert ran.returncode == 0, (line, ran.stderr[-2000:])
            assert ran.stdout.strip(), line
        stopped = subprocess.run(["bash", "-c", stop[0]], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert not broker_running(port), "the printed stop line left the demo's broker running"
    finally:
        stop_broker(port)
