"""``streamdedup bench soak`` end to end on the real broker: a short soak loses nothing and reports
latency percentiles, RSS samples and the index size."""

from __future__ import annotations

import json
import subprocess
import sys

from .kafka_helpers import REPO


def test_short_soak_loses_nothing_and_reports_latency(kafka_bootstrap, tmp_path) -> None:
    report = tmp_path / "soak.json"
    cmd = [sys.executable, "-m", "streamdedup.cli", "bench", "soak", "--rate", "200", "--seconds", "10",
           "--bootstrap-servers", kafka_bootstrap, "--max-documents", "50000", "--sample-every", "2", "--json", str(report)]
    proc = subprocess.run(cmd, cwd=str(REPO), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(report.read_text())
    d = res["delivery"]
    assert d["ok"] and d["lost"] == d["doubled"] == d["unexpected"] == 0
    assert d["produced"] == d["seen"] == res["primer"] + res["producer"]["records"] == res["primer"] + 2000
    assert sum(res["outputs"].values()) == d["produced"]
    # the wire feed has ~20% resends and variants: both outputs are used
    assert res["outputs"]["unique"] > 0 and res["outputs"]["duplicate"] > 0
    summary = res["processor_summary"]
    assert res["processor_exit_code"] == 0 and summary["records"] == d["produced"]
    lat = res["latency"]
    assert lat["n"] == res["producer"]["records"] == 2000
    assert 0 < lat["p50_ms"] <= lat["p95_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert res["latency_windows"] and sum(w["n"] for w in res["latency_windows"]) == lat["n"]
    samples = res["samples"]
    assert len(samples) >= 4 and all(s["rss_mb"] and s["rss_mb"] > 50 for s in samples)
    assert summary["unique"] <= res["index"]["indexed"] <= summary["records"]
    assert res["index"]["max_documents"] == 50000
    assert "visible latency" in proc.stdout and "nothing lost" in proc.stdout
