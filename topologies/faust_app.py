"""faust topology: the staged topology's fingerprint/route stage as a faust agent.

    from topologies.faust_app import create_app
    app = create_app(load_config("config/default.yaml"))   # a faust.App with the agent attached
    app.main()                                              # or: streamdedup run --topology faust

The faust CLI (``faust -A topologies.faust_app worker --without-web``) builds the app on first
use of ``topologies.faust_app.app`` from ``STREAMDEDUP_CONFIG`` (a config file, optional) and
the ``STREAMDEDUP_*`` variables; importing this module builds nothing. The decider runs as in
the staged topology (``streamdedup run --topology staged --role decider``). To put the agent
into an app of your own: ``streamdedup.runtime.faust.agent.attach(app, config)``.
"""

from __future__ import annotations

import os
from typing import Any

from streamdedup.config import Config, load_config
from streamdedup.runtime.faust.agent import build_app


def create_app(config: Config, **faust_settings: Any):
    """A ``faust.App`` running the stage; ``faust_settings`` override ``faust_agent.app_settings``."""
    return build_app(config, **faust_settings)


def __getattr__(name: str):
    """``topologies.faust_app.app`` for the faust CLI, built when first asked for (PEP 562)."""
    if name != "app":
        raise AttributeError(name)
    app = create_app(load_config(os.environ.get("STREAMDEDUP_CONFIG")))
    globals()["app"] = app
    return app
