"""Every numeric setting has a range: extreme values from YAML, the environment and ``--set``
(the web inspector's what-if form applies ``with_settings`` too) are refused with the setting's
name, or accepted and then run."""

from __future__ import annotations

import math

import orjson
import pytest
import yaml
from pydantic import BaseModel

from streamdedup.config import Config, load_config, with_settings
from streamdedup.config_sources import set_path
from streamdedup.errors import ConfigError
from streamdedup.runtime.filemode import run_file

EXTREMES = ("0", "-1", "nan", "inf", "-inf", "1e300", str(2 ** 63), str(2 ** 64), "9" * 400)


def _numeric(model: type[BaseModel], prefix: str = "") -> list[str]:
    out = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += _numeric(ann, f"{prefix}{name}.")
        elif ann in (int, float, int | None, float | None):
            out.append(prefix + name)
    return out


SETTINGS = _numeric(Config)


def test_the_walk_finds_the_numeric_settings() -> None:
    assert {"engine.window_hours", "fingerprint.max_text_bytes", "kafka.stall_restart_s"} <= set(SETTINGS)
    assert len(SETTINGS) > 40


def _loaded(how: str, path: str, raw: str, tmp_path) -> Config:
    if how == "env":
        return load_config(environ={"STREAMDEDUP_" + path.upper().replace(".", "__"): raw})
    if how == "set":
        return with_settings(load_config(environ={}), [f"{path}={raw}"])
    value = yaml.safe_load(raw)  # what a user's YAML holds: a number where it parses as one
    file = tmp_path / "c.yaml"
    tree: dict = {}
    set_path(tree, path.split("."), value)
    file.write_text(yaml.safe_dump(tree))
    return load_config(str(file), environ={})


def _runs(cfg: Config, tmp_path) -> None:
    """A small file-mode run: two stories and a copy, every record out once."""
    story = "the company said its first quarter net profit rose sharply from a year earlier " * 8
    lines = [{"id": "a", "text": story}, {"id": "b", "text": story + " analysts said"}, {"id": "c", "text": "x" * 50}]
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    summary = run_file(cfg, str(path), str(tmp_path / "out"))
    assert summary.reconciles() and summary.records == 3


@pytest.mark.parametrize("setting", SETTINGS)
def test_extreme_values_are_refused_by_name_or_run(setting: str, tmp_path) -> None:
    for how in ("yaml", "env", "set"):
        for raw in EXTREMES:
            try:
                cfg = _loaded(how, setting, raw, tmp_path)
            except ConfigError as exc:
                assert setting in str(exc), (how, raw, str(exc))
                continue
            value = cfg
            for part in setting.split("."):
                value = getattr(value, part)
            assert value is None or math.isfinite(value) and abs(value) < 2 ** 62, (how, raw, value)
            if how == "env":  # accepted: the run works (once per value, not per way of giving it)
                _runs(cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"index_sizing": "grow"})}),
                      tmp_path / f"run-{len(raw)}-{raw[:4]}")
