"""Single-index topology: all input partitions feed one index owner (exactly-once by default).

    from topologies.single_index import build
    processor = build(load_config("config/default.yaml"))
    processor.run()
"""

from __future__ import annotations

from streamdedup.config import Config
from streamdedup.runtime.since import Since
from streamdedup.runtime.single.processor import Processor


def build(config: Config, state_dir: str | None = None, stop_when_idle: float | None = None,
          lost_state: str | Since = "refuse") -> Processor:
    """``lost_state``: "refuse", "accept" or a ``Since`` to rebuild from (see ``streamdedup run --help``)."""
    return Processor(config, state_dir or config.state.dir or "state", stop_when_idle=stop_when_idle, lost_state=lost_state)
