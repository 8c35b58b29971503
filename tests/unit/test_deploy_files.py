"""docker-compose.yml and the Dockerfile cannot run here (no Docker engine): check what can be checked."""

from __future__ import annotations

from pathlib import Path

import yaml

from streamdedup import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_compose_parses_and_matches_the_local_setup() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"kafka", "topics", "processor"} <= set(services)
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:4.")
    assert "127.0.0.1:9092:9092" in kafka["ports"]
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == 1  # exactly-once on one broker
    assert "9093" in env["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    for name in ("topics", "processor"):
        svc = services[name]
        assert svc["build"] == "."
        # every override the compose file sets must be a real setting
        cfg = load_config(ROOT / "config" / "default.yaml", environ={k: str(v) for k, v in svc["environment"].items()})
        assert cfg.kafka.bootstrap_servers == "kafka:19092"
        assert "config/default.yaml" in svc["command"]


def test_dockerfile_installs_the_package_and_runs_the_processor() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.startswith("# ") and "FROM python:3.11" in text
    for path in ("streamdedup", "topologies", "config", "pyproject.toml"):
        assert f"COPY {path}" in text or "COPY pyproject.toml" in text
    assert 'ENTRYPOINT ["streamdedup"]' in text and '"run"' in text
