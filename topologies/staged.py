"""Staged topology: fingerprint/route workers and one sequenced decider.

    from topologies.staged import build_decider, build_worker
    decider = build_decider(load_config("config/default.yaml"), "state")   # one (a second one waits as standby)
    worker = build_worker(load_config("config/default.yaml"), "worker-1")  # up to one per input partition
    decider.run() / worker.run()

The design and its guarantees: ``streamdedup.runtime.staged``.
"""

from __future__ import annotations

from streamdedup.config import Config
from streamdedup.runtime.staged.decider import Decider
from streamdedup.runtime.staged.worker import Worker


def build_decider(config: Config, state_dir: str | None = None, stop_when_idle: float | None = None) -> Decider:
    return Decider(config, state_dir or config.state.dir or "state", stop_when_idle)


def build_worker(config: Config, instance: str | None = None, stop_when_idle: float | None = None) -> Worker:
    """``instance`` names the worker (transactional id, static group membership; default: host name)."""
    return Worker(config, stop_when_idle, instance=instance)
