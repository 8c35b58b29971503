"""The main job (``make demo``'s Kafka demo) on the real broker, and the commands it tells a user to
run next: ``inspect`` shows its duplicates with their originals, fetched where their tags say."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from streamdedup import load_config


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamdedup.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_the_kafka_demo_and_the_inspect_and_tune_commands_it_prints(kafka_bootstrap, tmp_path) -> None:
    demo = _cli("demo", "--mode", "kafka", "--stories", "200", "--bootstrap-servers", kafka_bootstrap,
                "--output-dir", str(tmp_path), "--broker-kept")
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "reconciles: True" in demo.stdout
    printed = [shlex.split(line.split("#")[0])[1:] for line in demo.stdout.splitlines() if line.startswith("  streamdedup ")]
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
