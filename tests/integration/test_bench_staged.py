"""``streamdedup bench kafka --topology staged`` end to end on the real broker: every contender
sees every record, each stage's CPU is reported by thread role, and ``--json`` prints JSON only
(the runs' own summaries once went to the same output)."""

from __future__ import annotations

import json
import subprocess
import sys

from .kafka_helpers import REPO


def test_staged_bench_reports_each_stage_cpu_as_json(kafka_bootstrap) -> None:
    cmd = [sys.executable, "-m", "streamdedup.cli", "bench", "kafka", "--topology", "staged", "--workers", "1",
           "--records", "1000", "--rounds", "1", "--no-latency", "--json", "--bootstrap-servers", kafka_bootstrap]
    proc = subprocess.run(cmd, cwd=str(REPO), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(proc.stdout)
    (one,) = res["rounds"]
    assert one["single"]["seen"] == one["staged"]["seen"] == 1000
    assert res["messages_per_record"]["single"] == 1.0 and res["messages_per_record"]["staged"] >= 3.0
    cpu = res["cpu_us_per_record"]
    assert {"single"} <= set(cpu["single"]) and {"decider", "worker"} <= set(cpu["staged"])
    for stage in (cpu["single"]["single"], cpu["staged"]["decider"], cpu["staged"]["worker"]):
        # every process has a main thread and librdkafka's; the total is the sum of the roles
        assert {"main thread", "librdkafka", "total"} <= set(stage)
        assert abs(stage["total"] - sum(v for k, v in stage.items() if k != "total")) < 1e-6
    assert "RocksDB" in cpu["single"]["single"] and "RocksDB" in cpu["staged"]["decider"]
    assert "RocksDB" not in cpu["staged"]["worker"]  # a worker keeps no state
    # (no sign is asserted: 1,000 records are a fraction of a second of work, within the spread of
    # the processes' start-up that the base run takes out; the documented runs are 100 times longer)
    assert set(res["cpu_bound_docs_per_s"]) == {"single", "staged"}
