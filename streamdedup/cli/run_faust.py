"""``streamdedup run --topology faust``: the faust stage in a faust worker of its own."""

from __future__ import annotations

import logging
import os
import signal
import time

import click

from streamdedup.cli._common import fill_kernel_cache, kafka_overrides


def run_faust(cfg, bootstrap_servers: str | None, input_topics: tuple[str, ...], stop_when_idle: float | None) -> None:
    from streamdedup._optional import require
    from streamdedup.errors import StreamdedupError
    from streamdedup.logs import setup_logging

    faust = require("faust", "faust", "streamdedup run --topology faust")
    setup_logging()
    cfg = kafka_overrides(cfg, bootstrap_servers, input_topics)
    fill_kernel_cache(cfg, "worker")
    from streamdedup.runtime.faust.agent import build_app

    try:
        app = build_app(cfg)
    except StreamdedupError as exc:
        raise click.ClickException(str(exc)) from None
    stage = app.streamdedup_stage
    if stop_when_idle is not None:
        @app.timer(0.25)
        async def _stop_when_idle() -> None:
            # SIGTERM: the worker's own graceful stop (between batches: every batch is committed)
            if stage.started and not stage.busy and time.monotonic() - stage.last_active > stop_when_idle:
                logging.getLogger("streamdedup").info("idle for %.1f s: stopping", stop_when_idle)
                os.kill(os.getpid(), signal.SIGTERM)

    worker = faust.Worker(app, loglevel="WARNING", quiet=True, redirect_stdouts=False)
    worker.spinner = None  # its cursor escapes would land in our JSON log lines
    code = 0
    t0 = time.perf_counter()
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = exc.code or 0
    stage.summary.seconds = time.perf_counter() - t0
    logging.getLogger("streamdedup").info("done", extra={
        "topology": "faust", **stage.summary.as_log(), "batches": stage.batches, "exit_code": code,
        "not_ours": stage.txns.dropped if stage.txns else 0, "fenced": stage.txns.fenced if stage.txns else 0})
    if code:
        raise click.ClickException(f"the faust worker exited with code {code}")
    if not stage.reconciles():
        raise click.ClickException("counts do not reconcile: this is a bug")
