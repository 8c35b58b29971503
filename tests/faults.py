"""Fault injection for the failed-batch rule: one stage of the pipeline raises once.

Each stage is the function a runtime calls for it; ``arm`` replaces it (with pytest's
monkeypatch) by a wrapper that raises :class:`InjectedFault` on its ``at``-th call and passes
every other call through. The engine's warm-up calls the engine stages once on a scratch
engine, so ``at`` counts from the first call of the process, not of the stream: a fault at 3
falls mid-stream for any feed of several batches.
"""

from __future__ import annotations

import importlib


class InjectedFault(RuntimeError):
    """Raised by an armed stage."""


#: stage -> (module, attribute path) of what each runtime calls for it
ENGINE_STAGES = {
    "prepare": ("streamdedup.pipeline.prepare", "Preparer.prepare"),
    "fingerprint": ("streamdedup.sketch.fingerprint", "Fingerprinter.fingerprint_prepared"),
    "decide": ("streamdedup._kernels.decide", "decide_batch"),
    "state_encode": ("streamdedup._kernels.records", "encode_batch"),
}
ROUTE = {
    "processor": ("streamdedup.runtime.kafka.batch", "KafkaPipeline.route"),
    "filemode": ("streamdedup.runtime.filemode", "_Writer.batch"),
    "decider": ("streamdedup.runtime.staged.decider", "Decider._emit"),
    "worker": ("streamdedup.runtime.staged.worker", "Worker._transaction"),  # _emit runs every loop, even idle
}


def stage_target(stage: str, runtime: str) -> tuple[str, str]:
    return ROUTE[runtime] if stage == "route" else ENGINE_STAGES[stage]


def arm(monkeypatch, stage: str, runtime: str, at: int = 3) -> list[int]:
    """Make ``stage`` raise on its ``at``-th call; returns a one-item list counting the calls."""
    module, path = stage_target(stage, runtime)
    owner = importlib.import_module(module)
    *parents, name = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    original = getattr(owner, name)
    calls = [0]

    def faulty(*args, **kwargs):
        calls[0] += 1
        if calls[0] == at:
            raise InjectedFault(f"injected into {stage} ({path}, call {at})")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, faulty)
    # a fingerprint step reached without the fast path's PreparedTexts goes through the other one
    if stage == "fingerprint":
        fp = importlib.import_module("streamdedup.sketch.fingerprint").Fingerprinter
        plain = fp.fingerprint_batch

        def faulty_plain(*args, **kwargs):
            calls[0] += 1
            if calls[0] == at:
                raise InjectedFault(f"injected into fingerprint (Fingerprinter.fingerprint_batch, call {at})")
            return plain(*args, **kwargs)

        monkeypatch.setattr(fp, "fingerprint_batch", faulty_plain)
    return calls


STAGES = ("prepare", "fingerprint", "decide", "state_encode", "route")
