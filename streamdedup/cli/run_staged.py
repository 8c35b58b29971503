"""``streamdedup run --topology staged --role worker|decider``."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import click

from streamdedup.cli._common import fill_kernel_cache, kafka_overrides


def run_staged(cfg, role: str, state_dir: str | None, bootstrap_servers: str | None, input_topics: tuple[str, ...],
               stop_when_idle: float | None, instance: str | None) -> None:
    from streamdedup.logs import setup_logging

    setup_logging()
    cfg = kafka_overrides(cfg, bootstrap_servers, input_topics)
    log = logging.getLogger("streamdedup")
    if role == "decider":
        from streamdedup.runtime.staged.decider import Decider

        state = state_dir or cfg.state.dir or "state"
        fill_kernel_cache(cfg, "decider+restore" if Path(state).exists() else "decider")
        decider = Decider(cfg, state, stop_when_idle)
        _on_signals(decider.request_stop)
        d = decider.run()
        log.info("done", extra={"role": "decider", "fingerprints": d.fingerprints, "decided": d.decided, "resent": d.resent,
                                "dead_letter": d.dead, "resent_at_start": d.resent_at_start, "batches": d.batches, "queries": d.queries,
                                "seconds": round(d.seconds, 3)})
        return
    if state_dir is not None:
        raise click.UsageError("--role worker keeps no state: --state-dir is for the decider")
    fill_kernel_cache(cfg, "worker")
    from streamdedup.runtime.staged.worker import Worker

    worker = Worker(cfg, stop_when_idle, instance=instance)
    _on_signals(worker.request_stop)
    w = worker.run()
    log.info("done", extra={"role": "worker", **w.as_log(), "fingerprints_sent": w.fingerprints_sent,
                            "transactions": w.transactions, "rewinds": w.rewinds})
    if not w.reconciles():
        raise click.ClickException("counts do not reconcile: this is a bug")


def _on_signals(stop) -> None:
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
