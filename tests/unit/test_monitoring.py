"""The monitoring profile's dashboard and alerts query only what streamdedup exports: every
metric name and label in their PromQL is one the processor, the staged decider and the workers
serve (one Metrics class), so neither can drift from the code."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
import yaml

import streamdedup

from streamdedup.runtime.kafka import metrics as metrics_module
from streamdedup.runtime.kafka.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "monitoring"
#: labels Prometheus adds to every scraped series
TARGET_LABELS = {"job", "instance"}
SELECTOR = re.compile(r"\b(streamdedup_\w+)(?:\{([^}]*)\})?")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def _exported() -> dict[str, dict[str, set[str]]]:
    """sample name -> label -> values seen, after one batch of every status."""
    m = Metrics(0)
    m.batch(10, {"unique": 5, "duplicate": 3, "dead_letter": 2}, 0.1, 100, (2, 1))
    m.lag.set(7)
    out: dict[str, dict[str, set[str]]] = {}
    for family in m.registry.collect():
        for sample in family.samples:
            labels = out.setdefault(sample.name, {})
            for key, value in sample.labels.items():
                labels.setdefault(key, set()).add(value)
    return out


def _dashboard_exprs() -> list[str]:
    dash = json.loads((MONITORING / "grafana" / "dashboards" / "streamdedup.json").read_text(encoding="utf-8"))
    return [t["expr"] for panel in dash["panels"] for t in panel.get("targets", [])]


def _alert_exprs() -> list[str]:
    rules = yaml.safe_load((MONITORING / "alerts.yml").read_text(encoding="utf-8"))
    return [r["expr"] for group in rules["groups"] for r in group["rules"]]


@pytest.mark.parametrize("source", ["dashboard", "alerts"])
def test_every_queried_metric_and_label_is_exported(source: str) -> None:
    exprs = _dashboard_exprs() if source == "dashboard" else _alert_exprs()
    exported = _exported()
    assert len(exprs) >= 5
    for expr in exprs:
        used = SELECTOR.findall(expr)
        for name, matchers in used:
            assert name in exported, f"{expr}: {name} is not exported (exported: {sorted(exported)})"
            for label, op, value in MATCHER.findall(matchers):
                assert label in exported[name] or label in TARGET_LABELS, f"{expr}: {name} has no label {label}"
                if op == "=" and label not in TARGET_LABELS:
                    assert value in exported[name][label], f"{expr}: {name}{{{label}}} is never {value!r}"
        names = {n for n, _ in used}
        for group in GROUPING.findall(expr):
            for label in filter(None, (g.strip() for g in group.split(","))):
                assert label in TARGET_LABELS or any(label in exported[n] for n in names), f"{expr}: nothing has label {label}"


def test_the_dashboard_shows_every_metric_family() -> None:
    text = " ".join(_dashboard_exprs())
    families = {f.name for f in Metrics(0).registry.collect()}
    assert {f for f in families if f not in text} == set()


def test_every_runtime_that_serves_metrics_uses_the_one_class() -> None:
    """The processor, the staged decider and the workers build this Metrics (their names are the
    dashboard's); a runtime with its own registry would need its own check."""
    from streamdedup.runtime.single import processor
    from streamdedup.runtime.staged import decider, worker

    for module in (processor, decider, worker):
        assert "Metrics(" in inspect.getsource(module), module.__name__
    # the package as imported (the source tree, or an installed wheel)
    package = Path(streamdedup.__file__).parent
    sources = [p.read_text(encoding="utf-8") for p in package.rglob("*.py") if p != Path(metrics_module.__file__)]
    assert not any("CollectorRegistry(" in s or "start_http_server(" in s for s in sources)


def test_prometheus_scrapes_the_services_that_serve_metrics() -> None:
    """Every compose service that turns metrics on is a scrape target, on the port it serves."""
    compose = yaml.safe_load(re.sub(r"\$\{(\w+):-([^}]*)\}", r"\2", (ROOT / "docker-compose.yml").read_text()))
    prom = yaml.safe_load((MONITORING / "prometheus.yml").read_text(encoding="utf-8"))
    targets = {(name, sd["port"]) for job in prom["scrape_configs"] for sd in job["dns_sd_configs"] for name in sd["names"]}
    serving = {(name, int(svc["environment"]["STREAMDEDUP_KAFKA__METRICS_PORT"])) for name, svc in compose["services"].items()
               if "STREAMDEDUP_KAFKA__METRICS_PORT" in svc.get("environment", {})}
    assert serving and serving == targets
    assert all(job["job_name"].startswith("streamdedup-") for job in prom["scrape_configs"])  # the alerts' job=~
    for name in ("prometheus", "grafana"):
        assert compose["services"][name]["profiles"] == ["monitoring"]
