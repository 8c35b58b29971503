"""Every output is declared once (``route.OUTPUTS``): the topics a run creates, checks, guards
and counts, the files file mode writes and the metric's labels all come from that declaration."""

from __future__ import annotations

import re
from pathlib import Path

from streamdedup import load_config
from streamdedup.pipeline.route import DESTINATIONS, OUTPUTS, output_topics, outputs_in_use
from streamdedup.runtime.filemode import Summary, _Writer
from streamdedup.runtime.kafka.limits import check_size_settings
from streamdedup.runtime.kafka.oversize import OutputGuard
from streamdedup.runtime.kafka.startup import topic_settings

ROOT = Path(__file__).resolve().parents[2]
ON = {"STREAMDEDUP_VERIFY__REVISIONS": "topic"}


def test_each_output_is_a_destination_a_topic_setting_and_a_file() -> None:
    cfg = load_config(environ=ON)
    assert DESTINATIONS == tuple(o.dest for o in OUTPUTS)
    assert output_topics(cfg) == {o.dest: getattr(cfg.kafka, o.setting) for o in OUTPUTS}
    assert set(output_topics(load_config())) == {o.dest for o in OUTPUTS if not o.topic_policy_only}
    settings = topic_settings(cfg.kafka, revisions=True)
    assert {settings[o.topic(cfg.kafka)] for o in OUTPUTS} == {f"kafka.{o.setting}" for o in OUTPUTS}
    guard = OutputGuard(cfg.kafka, check_size_settings(cfg), revisions=True)
    assert guard.dest_of == {o.topic(cfg.kafka): o.dest for o in OUTPUTS}
    assert OutputGuard._outputs(cfg.kafka, True) == tuple(o.topic(cfg.kafka) for o in OUTPUTS)


def test_file_mode_writes_a_file_per_output_in_use(tmp_path) -> None:
    for revisions_file in (False, True):
        out = tmp_path / str(revisions_file)
        out.mkdir()
        w = _Writer(out, Summary(), sync=False, revisions_file=revisions_file)
        w.close()
        assert sorted(p.name for p in out.iterdir()) == sorted(f"{o.file}.jsonl" for o in outputs_in_use(revisions_file))


def test_no_module_names_an_output_topic_setting_outside_the_declaration() -> None:
    """A new output is its declaration (and its setting): no runtime lists the output topics itself."""
    pattern = re.compile(r"\.(?:unique|duplicates|dead_letter|revisions)_topic\b")  # a setting read
    allowed = {"streamdedup/pipeline/route.py", "streamdedup/config.py", "streamdedup/config_kafka.py"}
    found = {}
    for p in sorted((ROOT / "streamdedup").rglob("*.py")):
        rel = str(p.relative_to(ROOT))
        hits = [line.strip() for line in p.read_text().splitlines() if pattern.search(line)]
        if hits and rel not in allowed:
            found[rel] = hits
    # the output guard names the dead-letter topic (its fallback) and the two topics it screens
    # records for before the engine (limits names the setting in its refusal); the inspector
    # reads the duplicates topic by default, and the demo prints what each output received
    assert set(found) <= {"streamdedup/runtime/kafka/oversize.py", "streamdedup/runtime/kafka/limits.py",
                          "streamdedup/tools/inspection/kafka_source.py", "streamdedup/cli/demo.py",
                          "streamdedup/cli/ui.py", "streamdedup/cli/inspect.py"}, found
