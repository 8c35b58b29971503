"""Configuration: one typed, frozen, validated load; every setting in config/default.yaml."""

from __future__ import annotations

import typing
from pathlib import Path

import pydantic
import pytest
import yaml

from streamdedup import Config, ConfigError, Fingerprinter, StreamdedupError, load_config

DEFAULT_YAML = Path(__file__).resolve().parents[2] / "config" / "default.yaml"
NO_ENV: dict[str, str] = {}


def _model_leaves(model: type[pydantic.BaseModel], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, pydantic.BaseModel):
            out |= _model_leaves(ann, f"{prefix}{name}.")
        else:
            assert not any(isinstance(a, type) and issubclass(a, pydantic.BaseModel) for a in typing.get_args(ann)), name
            out.add(prefix + name)
    return out


def _yaml_leaves(tree: object, prefix: str = "") -> set[str]:
    if isinstance(tree, dict) and tree:
        out: set[str] = set()
        for key, value in tree.items():
            out |= _yaml_leaves(value, f"{prefix}{key}.")
        return out
    return {prefix.rstrip(".")}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "streamdedup.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- defaults


def test_defaults_load() -> None:
    cfg = load_config(environ=NO_ENV)
    assert isinstance(cfg, Config)
    assert cfg.fingerprint.minhash.num_perm == 128 and cfg.fingerprint.minhash.method == "oph"
    assert cfg.fingerprint.shingle.kind == "word" and cfg.fingerprint.shingle.size == 5
    assert cfg.fingerprint.signature.compression == 16 and cfg.fingerprint.signature.neighbourhood == 4
    assert cfg.fingerprint.lsh.bands is None and cfg.fingerprint.lsh.rows is None


def test_default_yaml_equals_the_built_in_defaults() -> None:
    assert load_config(DEFAULT_YAML, environ=NO_ENV) == load_config(environ=NO_ENV)


def test_every_setting_appears_in_default_yaml_and_nothing_else() -> None:
    tree = yaml.safe_load(DEFAULT_YAML.read_text(encoding="utf-8"))
    in_model = _model_leaves(Config)
    in_yaml = _yaml_leaves(tree)
    assert in_model - in_yaml == set(), "settings missing from config/default.yaml"
    assert in_yaml - in_model == set(), "keys in config/default.yaml that are not settings"
    assert "fingerprint.minhash.num_perm" in in_model and "kafka.librdkafka" in in_model  # the walk is real


def test_default_yaml_mentions_every_setting_once() -> None:
    """yaml.safe_load keeps the last of two equal keys silently, so count the lines themselves."""
    seen: dict[tuple[str, ...], int] = {}
    path: list[tuple[int, str]] = []
    for line in DEFAULT_YAML.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#") or ":" not in line:
            continue
        indent = len(line) - len(line.lstrip())
        path = [(i, k) for i, k in path if i < indent] + [(indent, line.split(":", 1)[0].strip())]
        full = tuple(k for _, k in path)
        seen[full] = seen.get(full, 0) + 1
    assert ("fingerprint", "minhash", "num_perm") in seen
    assert all(n == 1 for n in seen.values()), {k: n for k, n in seen.items() if n > 1}


def test_config_is_frozen() -> None:
    cfg = load_config(environ=NO_ENV)
    with pytest.raises(pydantic.ValidationError):
        cfg.fingerprint.minhash.num_perm = 64  # type: ignore[misc]


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "# nothing set\n"), environ=NO_ENV) == load_config(environ=NO_ENV)


def test_file_values_are_read(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "fingerprint:\n  minhash:\n    num_perm: 256\nverify:\n  jaccard_threshold: 0.7\n"), environ=NO_ENV)
    assert cfg.fingerprint.minhash.num_perm == 256 and cfg.verify.jaccard_threshold == 0.7
    assert cfg.fingerprint.minhash.seed == 1  # untouched settings keep their defaults


# ----------------------------------------------------------------------------- environment


def test_env_override() -> None:
    cfg = load_config(environ={"STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM": "64"})
    assert cfg.fingerprint.minhash.num_perm == 64
    batch = Fingerprinter(cfg.fingerprint).fingerprint_batch(["one two three four five six"])
    assert batch.minhash.shape == (1, 64)


def test_env_values_are_yaml_scalars() -> None:
    cfg = load_config(environ={
        "STREAMDEDUP_VERIFY__JACCARD_THRESHOLD": "0.6",
        "STREAMDEDUP_STATE__SYNC": "false",
        "STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, body]",
        "STREAMDEDUP_INPUT__TIME_FIELD": "published",
        "STREAMDEDUP_KAFKA__LIBRDKAFKA__SECURITY.PROTOCOL": "SASL_SSL",
    })
    assert cfg.verify.jaccard_threshold == 0.6 and cfg.state.sync is False
    assert cfg.input.text_fields == ("title", "body") and cfg.input.time_field == "published"
    assert cfg.kafka.librdkafka == {"security.protocol": "SASL_SSL"}


def test_env_overrides_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "fingerprint:\n  minhash:\n    num_perm: 32\n    seed: 9\n")
    cfg = load_config(path, environ={"STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM": "64"})
    assert (cfg.fingerprint.minhash.num_perm, cfg.fingerprint.minhash.seed) == (64, 9)


def test_os_environ_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMDEDUP_ENGINE__BATCH_SIZE", "7")
    assert load_config().engine.batch_size == 7


def test_unrelated_variables_are_ignored() -> None:
    env = {"STREAMDEDUP_CACHE": "/tmp/x", "PATH": "/bin", "streamdedup_fingerprint__minhash__num_perm": "64"}
    assert load_config(environ=env) == load_config(environ=NO_ENV)


def test_unknown_env_section_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="STREAMDEDUP_BOGUS__X"):
        load_config(environ={"STREAMDEDUP_BOGUS__X": "1"})


def test_unknown_env_key_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"fingerprint\.minhash\.num_prem"):
        load_config(environ={"STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PREM": "64"})


def test_unparsable_env_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="STREAMDEDUP_INPUT__TEXT_FIELDS"):
        load_config(environ={"STREAMDEDUP_INPUT__TEXT_FIELDS": "[unclosed"})


# ----------------------------------------------------------------------------- errors in files


def test_unknown_key_in_a_file_names_the_dotted_setting(tmp_path: Path) -> None:
    path = _write(tmp_path, "fingerprint:\n  minhash:\n    num_perm: 64\n    num_prem: 64\n")
    with pytest.raises(ConfigError, match=r"fingerprint\.minhash\.num_prem"):
        load_config(path, environ=NO_ENV)


def test_unknown_section_in_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fingreprint"):
        load_config(_write(tmp_path, "fingreprint:\n  minhash: {}\n"), environ=NO_ENV)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_config(tmp_path / "nope.yaml", environ=NO_ENV)


@pytest.mark.parametrize("text", ["fingerprint: [unclosed\n", "- just\n- a list\n", "just a string\n"])
def test_malformed_files(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="streamdedup.yaml"):
        load_config(_write(tmp_path, text), environ=NO_ENV)


def test_config_error_is_a_streamdedup_error() -> None:
    with pytest.raises(StreamdedupError):
        load_config(environ={"STREAMDEDUP_BOGUS__X": "1"})


# ----------------------------------------------------------------------------- invalid values

NUM_PERM = "STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM"


@pytest.mark.parametrize("value", ["4", "2048", "sixty-four"])
def test_num_perm_out_of_range_names_the_setting(value: str) -> None:
    with pytest.raises(ConfigError, match=r"fingerprint\.minhash\.num_perm"):
        load_config(environ={NUM_PERM: value})


@pytest.mark.parametrize("source", ["env", "file"])
def test_num_perm_not_a_power_of_two_names_the_dotted_setting(tmp_path: Path, source: str) -> None:
    with pytest.raises(ConfigError, match=r"fingerprint\.minhash\.num_perm\b.*power of two"):
        if source == "env":
            load_config(environ={NUM_PERM: "100"})
        else:
            load_config(_write(tmp_path, "fingerprint:\n  minhash:\n    num_perm: 100\n"), environ=NO_ENV)


@pytest.mark.parametrize("residue, compression", [("16", None), ("20", None), ("8", "8")])
def test_residue_must_be_below_compression(residue: str, compression: str | None) -> None:
    env = {"STREAMDEDUP_FINGERPRINT__SIGNATURE__RESIDUE": residue}
    if compression:
        env["STREAMDEDUP_FINGERPRINT__SIGNATURE__COMPRESSION"] = compression
    with pytest.raises(ConfigError, match=r"fingerprint\.signature.*residue"):
        load_config(environ=env)
    env["STREAMDEDUP_FINGERPRINT__SIGNATURE__RESIDUE"] = str(int(compression or 16) - 1)
    assert load_config(environ=env).fingerprint.signature.residue == int(compression or 16) - 1


@pytest.mark.parametrize("which", ["BANDS", "ROWS"])
def test_lsh_bands_and_rows_go_together(which: str) -> None:
    with pytest.raises(ConfigError, match=r"fingerprint\.lsh.*bands and rows"):
        load_config(environ={f"STREAMDEDUP_FINGERPRINT__LSH__{which}": "4"})


def test_lsh_bands_times_rows_must_fit_num_perm() -> None:
    env = {"STREAMDEDUP_FINGERPRINT__LSH__BANDS": "40", "STREAMDEDUP_FINGERPRINT__LSH__ROWS": "4"}
    with pytest.raises(ConfigError, match=r"lsh\.bands \* lsh\.rows = 160 exceeds minhash\.num_perm = 128"):
        load_config(environ=env)
    env["STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM"] = "256"
    assert load_config(environ=env).fingerprint.lsh.bands == 40
    env["STREAMDEDUP_FINGERPRINT__LSH__BANDS"] = "32"
    env["STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM"] = "128"
    assert load_config(environ=env).fingerprint.lsh.bands == 32  # exactly num_perm is fine


def test_lead_bands_times_rows_must_fit_its_num_perm() -> None:
    with pytest.raises(ConfigError, match=r"fingerprint\.lead"):
        load_config(environ={"STREAMDEDUP_FINGERPRINT__LEAD__BANDS": "11"})


@pytest.mark.parametrize(
    "variable, value, setting",
    [
        ("STREAMDEDUP_FINGERPRINT__SHINGLE__KIND", "sentence", "fingerprint.shingle.kind"),
        ("STREAMDEDUP_FINGERPRINT__MINHASH__METHOD", "bottom_k", "fingerprint.minhash.method"),
        ("STREAMDEDUP_FINGERPRINT__MINHASH__STORAGE_BITS", "3", "fingerprint.minhash.storage_bits"),
        ("STREAMDEDUP_FINGERPRINT__LSH__THRESHOLD", "1.0", "fingerprint.lsh.threshold"),
        ("STREAMDEDUP_FINGERPRINT__SIGNATURE__ALPHABET", "aa", "fingerprint.signature"),
        ("STREAMDEDUP_FINGERPRINT__MAX_TEXT_BYTES", "0", "fingerprint.max_text_bytes"),
        ("STREAMDEDUP_VERIFY__DUPLICATE_RELATIONS", "[exact, cousin]", "verify.duplicate_relations"),
        ("STREAMDEDUP_KAFKA__DELIVERY", "maybe_once", "kafka.delivery"),
    ],
)
def test_bad_values_name_the_setting(variable: str, value: str, setting: str) -> None:
    with pytest.raises(ConfigError, match=setting.replace(".", r"\.")):
        load_config(environ={variable: value})


# ----------------------------------------------------------------------------- start-up settings


def test_kafka_start_up_and_metrics_defaults() -> None:
    kafka = load_config(environ=NO_ENV).kafka
    assert (kafka.metrics_host, kafka.startup_timeout_s, kafka.create_topics) == ("127.0.0.1", 30.0, False)
