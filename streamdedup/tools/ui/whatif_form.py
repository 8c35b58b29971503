"""The what-if form: recent input decided with the current configuration and with a candidate
(the current one plus the form's ``setting=value`` lines), in memory, as ``streamdedup tune
--replay`` does (:mod:`streamdedup.tools.whatif`): nothing is produced and no state is opened.

The input is the run's input file (file mode, ``--input``) or one of the config's input topics
(read_committed, never committing: :func:`streamdedup.tools.whatif_input.read_recent`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from streamdedup.config import Config, with_settings
from streamdedup.errors import ConfigError, StreamdedupError
from streamdedup.tools.whatif import DUPLICATE_CHANGED, DUPLICATE_TO_UNIQUE, UNIQUE_TO_DUPLICATE, Replayer, ReplayInput
from streamdedup.tools.ui.views import BadQuery, whole_number

#: records a form may replay at most (a replay holds them and their fingerprints in memory)
MAX_RECORDS = 200_000
#: settings that size a replay's memory or work, and the most a form may set each to (or the
#: running config's own value, if higher): engine.max_documents 2**31-1 took 17 GB in 38 s
SIZE_BOUNDS = {
    "engine.max_documents": 2_000_000,
    "engine.batch_size": 10_000,
    "engine.max_candidates": 64,
    "engine.max_verified": 64,
    "input.max_record_bytes": 10_000_000,
    "fingerprint.max_text_bytes": 10_000_000,
    "fingerprint.minhash.num_perm": 512,
    "fingerprint.chars.num_perm": 512,
    "fingerprint.lead.shingles": 10_000,
}


def _setting(cfg: Config, dotted: str):
    node = cfg
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def check_sizes(current: Config, candidate: Config) -> None:
    """Refuse a candidate that sizes memory or work past :data:`SIZE_BOUNDS`.

    Raises:
        BadQuery: names the setting and its bound.
    """
    for dotted, bound in SIZE_BOUNDS.items():
        limit = max(bound, _setting(current, dotted))
        if _setting(candidate, dotted) > limit:
            raise BadQuery(f"{dotted}: at most {limit:,} in a what-if (it sizes the replay's memory)")
MAIN_FLIPS = (UNIQUE_TO_DUPLICATE, DUPLICATE_TO_UNIQUE, DUPLICATE_CHANGED)


@dataclass(frozen=True)
class WhatIfInput:
    """Where replays read: the run's JSONL input file, else the config's input topics."""

    input_path: str | None
    topics: tuple[str, ...]

    def targets(self) -> list[str]:
        return [self.input_path] if self.input_path else list(self.topics)


@dataclass
class WhatIfResult:
    settings: list[str]
    target: str
    seconds: float
    #: ``ReplayReport.to_json()``: records, current/candidate counts, flips per kind, flipped records
    report: dict


def _read(cfg: Config, where: WhatIfInput, target: str, since: str, limit: int) -> ReplayInput:
    if where.input_path is not None:
        if since and not since.isdecimal():
            raise BadQuery("for the input file, 'since' is a number of lines to skip")
        return ReplayInput.from_file(where.input_path, whole_number("since", since, 0), limit)
    if target not in where.topics:
        raise BadQuery(f"topic {target!r} is not one of the config's input topics ({', '.join(where.topics)})")
    from streamdedup.runtime.since import parse_since
    from streamdedup.tools.whatif_input import read_recent

    try:
        start = parse_since(since, option="since") if since else None
    except (ValueError, OverflowError) as exc:
        raise BadQuery(str(exc)) from None
    return read_recent(cfg, target, start, limit)


def run_whatif(cfg: Config, where: WhatIfInput, lines: list[str], target: str, since: str, limit: int) -> WhatIfResult:
    """Replay up to ``limit`` records of ``target`` under ``cfg`` and ``cfg`` + ``lines``.

    Raises:
        BadQuery: a setting, the source or ``since`` the form cannot use.
        StreamdedupError: the input could not be read.
    """
    if not 1 <= limit <= MAX_RECORDS:
        raise BadQuery(f"records: give 1..{MAX_RECORDS:,}")
    try:
        candidate = with_settings(cfg, lines)
    except ConfigError as exc:
        raise BadQuery(str(exc).removeprefix("--set: ")) from None
    check_sizes(cfg, candidate)
    if where.input_path is not None and not Path(where.input_path).is_file():
        raise StreamdedupError(f"input file {where.input_path} not found")
    if not where.targets():
        raise BadQuery("the what-if replays the run's input: start streamdedup ui with --input FILE (file mode)")
    source = _read(cfg, where, target, since.strip(), limit)
    from streamdedup.warmup.fill import NEEDS, fill

    fill(cfg, NEEDS["run"])  # compiled once per machine; a no-op when cached
    t0 = time.perf_counter()
    report = Replayer(source, int(time.time() * 1000)).compare(cfg, candidate)
    return WhatIfResult(lines, target, time.perf_counter() - t0, report.to_json())
