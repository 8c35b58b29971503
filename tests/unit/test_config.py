"""Configuration: one typed, frozen, validated load; every setting in config/default.yaml."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pydantic
import pytest
import yaml

from streamdedup import Config, ConfigError, Fingerprinter, StreamdedupError, load_config
from streamdedup.config import KafkaConfig, is_secret_property

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


def test_env_values_are_typed_by_the_setting() -> None:
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


# ----------------------------------------------------------------------------- env values are strings

# Each was mangled when env values went through YAML: 83 (octal), 750 (sexagesimal), True, 31, 1000,
# or an error message quoting the value.
HOSTILE = ["0123", "12:30", "yes", "0x1F", "1_000", "*S3cr3t: {x", "null", "", "  padded  ", "[not, a, list]", "~"]
SECRET = "*S3cr3t: {x"


@pytest.mark.parametrize("value", HOSTILE)
def test_a_string_setting_keeps_the_exact_string(value: str) -> None:
    assert load_config(environ={"STREAMDEDUP_KAFKA__GROUP_ID": value}).kafka.group_id == value


@pytest.mark.parametrize("value", HOSTILE)
def test_a_librdkafka_password_keeps_the_exact_string(value: str) -> None:
    kafka = load_config(environ={"STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD": value}).kafka
    assert isinstance(kafka.librdkafka["sasl.password"], pydantic.SecretStr)
    assert kafka.client_conf()["sasl.password"] == value


def test_numbers_and_booleans_are_converted_by_the_settings_type() -> None:
    cfg = load_config(environ={
        "STREAMDEDUP_ENGINE__BATCH_SIZE": "64", "STREAMDEDUP_ENGINE__WINDOW_HOURS": "0.5",
        "STREAMDEDUP_STATE__SYNC": "yes", "STREAMDEDUP_FINGERPRINT__CANONICAL__NFKC": "off",
        "STREAMDEDUP_FINGERPRINT__MINHASH__STORAGE_BITS": "16",  # an int Literal
        "STREAMDEDUP_KAFKA__CREATE_TOPICS": "TRUE", "STREAMDEDUP_KAFKA__METRICS_PORT": "0123",  # decimal, not octal
    })
    assert (cfg.engine.batch_size, cfg.engine.window_hours, cfg.fingerprint.minhash.storage_bits) == (64, 0.5, 16)
    assert cfg.state.sync is True and cfg.fingerprint.canonical.nfkc is False and cfg.kafka.create_topics is True
    assert cfg.kafka.metrics_port == 123


@pytest.mark.parametrize(
    "variable, value, setting",
    [
        ("STREAMDEDUP_ENGINE__BATCH_SIZE", "0x1F", "engine.batch_size"),  # not 31
        ("STREAMDEDUP_ENGINE__BATCH_SIZE", "1e3", "engine.batch_size"),
        ("STREAMDEDUP_ENGINE__WINDOW_HOURS", "inf", "engine.window_hours"),
        ("STREAMDEDUP_ENGINE__WINDOW_HOURS", "nan", "engine.window_hours"),
        ("STREAMDEDUP_STATE__SYNC", "maybe", "state.sync"),
        ("STREAMDEDUP_STATE__SYNC", "", "state.sync"),
        ("STREAMDEDUP_KAFKA__STARTUP_TIMEOUT_S", "0", "kafka.startup_timeout_s"),
        ("STREAMDEDUP_KAFKA__METRICS_HOST", "", "kafka.metrics_host"),
        ("STREAMDEDUP_INPUT__TEXT_FIELDS", "", "input.text_fields"),
        ("STREAMDEDUP_INPUT__TEXT_FIELDS", "a,,b", "input.text_fields"),
        ("STREAMDEDUP_INPUT__TEXT_FIELDS", "[a, [b]]", "input.text_fields"),
        ("STREAMDEDUP_FINGERPRINT__LSH__BANDS", "", "fingerprint.lsh"),  # null bands with rows set
        ("STREAMDEDUP_FINGERPRINT__MINHASH", "64", "fingerprint.minhash"),  # a section, not a setting
        ("STREAMDEDUP_ENGINE__BATCH_SIZE__X", "1", "engine.batch_size"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA", "[a]", "kafka.librdkafka"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__BOOTSTRAP_SERVERS", "x:9092", "kafka.librdkafka"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__METADATA_BROKER_LIST", "x:9092", "kafka.librdkafka"),
    ],
)
def test_env_errors_name_the_setting_and_the_variable(variable: str, value: str, setting: str) -> None:
    env = {variable: value}
    if variable.endswith("LSH__BANDS"):
        env["STREAMDEDUP_FINGERPRINT__LSH__ROWS"] = "4"
    with pytest.raises(ConfigError) as info:
        load_config(environ=env)
    assert setting in str(info.value) and variable in str(info.value)


def test_lists_take_a_flow_list_a_comma_list_or_one_item() -> None:
    def topics(value: str) -> tuple[str, ...]:
        return load_config(environ={"STREAMDEDUP_KAFKA__INPUT_TOPICS": value}).kafka.input_topics

    assert topics("[news, wire]") == topics("news, wire") == topics("news,wire") == ("news", "wire")
    assert topics("news") == topics("[news]") == ("news",)
    assert topics("[0123, yes, 'a,b']") == ("0123", "yes", "a,b")  # items stay strings
    relations = load_config(environ={"STREAMDEDUP_VERIFY__DUPLICATE_RELATIONS": "exact,contains"}).verify
    assert relations.duplicate_relations == ("exact", "contains")


@pytest.mark.parametrize("value, expected", [("", None), ("null", None), ("published", "published"), ("NULL", "NULL")])
def test_a_nullable_setting_is_null_when_empty_or_null(value: str, expected: str | None) -> None:
    cfg = load_config(environ={"STREAMDEDUP_INPUT__TIME_FIELD": value, "STREAMDEDUP_STATE__DIR": value})
    assert cfg.input.time_field == expected and cfg.state.dir == expected


def test_a_nullable_number_is_null_when_empty() -> None:
    env = {"STREAMDEDUP_FINGERPRINT__LSH__BANDS": "", "STREAMDEDUP_FINGERPRINT__LSH__ROWS": "null"}
    assert load_config(environ=env).fingerprint.lsh.bands is None
    env = {"STREAMDEDUP_FINGERPRINT__LSH__BANDS": "10", "STREAMDEDUP_FINGERPRINT__LSH__ROWS": "4"}
    assert load_config(environ=env).fingerprint.lsh.bands == 10


def test_an_unknown_env_setting_suggests_the_near_one() -> None:
    with pytest.raises(ConfigError, match=r"STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PREM.*num_perm"):
        load_config(environ={"STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PREM": "64"})


# ----------------------------------------------------------------------------- librdkafka and secrets


@pytest.mark.parametrize(
    "variable, prop",
    [
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD", "sasl.password"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__SECURITY.PROTOCOL", "security.protocol"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__SECURITY_PROTOCOL", "security.protocol"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL__MECHANISM", "sasl.mechanism"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__SSL_KEY_PASSWORD", "ssl.key.password"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__SESSION_TIMEOUT_MS", "session.timeout.ms"),
        ("STREAMDEDUP_KAFKA__LIBRDKAFKA__LOG_LEVEL", "log_level"),  # one of the two underscored properties
    ],
)
def test_librdkafka_property_spelling_in_env_names(variable: str, prop: str) -> None:
    conf = load_config(environ={variable: "7"}).kafka.client_conf()
    assert conf == {"bootstrap.servers": "127.0.0.1:9092", prop: "7"}  # values stay strings


def test_librdkafka_whole_mapping_merges_with_the_file_and_single_properties_win(tmp_path: Path) -> None:
    path = _write(tmp_path, "kafka:\n  librdkafka:\n    security.protocol: SSL\n    session.timeout.ms: 10000\n")
    cfg = load_config(path, environ={
        "STREAMDEDUP_KAFKA__LIBRDKAFKA": '{security.protocol: SASL_SSL, "sasl.password": 0123, sasl.username: yes}',
        "STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_USERNAME": "svc",
    })
    assert cfg.kafka.client_conf() == {
        "bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SASL_SSL", "session.timeout.ms": 10000,
        "sasl.password": "0123", "sasl.username": "svc",
    }


@pytest.mark.parametrize("name", ["sasl.password", "ssl.key.password", "ssl.key.pem", "ssl.keystore.password",
                                  "sasl.oauthbearer.client.secret", "sasl.oauthbearer.assertion.private.key.passphrase",
                                  "sasl.oauthbearer.config", "SASL.PASSWORD"])
def test_secret_property_names(name: str) -> None:
    assert is_secret_property(name)


@pytest.mark.parametrize("name", ["security.protocol", "sasl.username", "sasl.mechanism", "ssl.ca.location",
                                  "ssl.certificate.pem", "session.timeout.ms"])
def test_ordinary_property_names(name: str) -> None:
    assert not is_secret_property(name)


def test_secrets_are_secretstr_and_hidden_from_repr_str_and_dumps(tmp_path: Path) -> None:
    path = _write(tmp_path, "kafka:\n  librdkafka:\n    ssl.key.pem: 'K3y-PEM'\n    security.protocol: SSL\n")
    cfg = load_config(path, environ={"STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD": SECRET,
                                     "STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_OAUTHBEARER_CLIENT_SECRET": "0c-S3cr3t"})
    lib = cfg.kafka.librdkafka
    assert all(isinstance(lib[k], pydantic.SecretStr) for k in ("sasl.password", "ssl.key.pem", "sasl.oauthbearer.client.secret"))
    assert lib["security.protocol"] == "SSL"
    for text in (repr(cfg), str(cfg), repr(cfg.kafka), cfg.model_dump_json(), str(cfg.model_dump()), str(cfg.kafka.redacted_conf())):
        assert "S3cr3t" not in text and "K3y" not in text
    assert cfg.kafka.redacted_conf()["sasl.password"] == "***" and cfg.kafka.redacted_conf()["security.protocol"] == "SSL"
    conf = cfg.kafka.client_conf()
    assert (conf["sasl.password"], conf["ssl.key.pem"], conf["sasl.oauthbearer.client.secret"]) == (SECRET, "K3y-PEM", "0c-S3cr3t")


def _message_and_chain(exc: BaseException) -> str:
    """Everything a traceback could print: the message and any chained exception."""
    parts = []
    seen: BaseException | None = exc
    while seen is not None:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


@pytest.mark.parametrize(
    "env",
    [
        {"STREAMDEDUP_KAFKA__LIBRDKAFKA": "{sasl.password: *S3cr3t: {x"},
        {"STREAMDEDUP_KAFKA__LIBRDKAFKA": "*S3cr3t: {x"},
        {"STREAMDEDUP_KAFKA__LIBRDKAFKA": "S3cr3t"},
        {"STREAMDEDUP_KAFKA__LIBRDKAFKA": '{sasl.password: [S3cr3t]}'},
        {"STREAMDEDUP_INPUT__TEXT_FIELDS": "[*S3cr3t: {x"},
        {"STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD": SECRET, "STREAMDEDUP_KAFKA__LINGER_MS": "-1"},
        {"STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD": SECRET, "STREAMDEDUP_KAFKA__BOGUS": "1"},
    ],
)
def test_env_errors_never_quote_a_secret(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(environ=env)
    assert "S3cr3t" not in _message_and_chain(info.value)
    assert any(name in str(info.value) for name in env)


@pytest.mark.parametrize(
    "text",
    [
        "kafka:\n  librdkafka:\n    sasl.password: *S3cr3t: {x\n",
        "kafka:\n  librdkafka:\n    sasl.password: 'S3cr3t\n",
        'kafka:\n  librdkafka:\n    sasl.password: "\\qS3cr3t"\n',
        "kafka:\n  librdkafka:\n    sasl.password: [S3cr3t]\n",
        "kafka:\n  librdkafka:\n    sasl.password: S3cr3t\n  linger_ms: -1\n",
        "kafka:\n  librdkafka:\n    sasl.password: S3cr3t\n  bogus: 1\n",
    ],
)
def test_file_errors_never_quote_a_secret(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text), environ=NO_ENV)
    assert "S3cr3t" not in _message_and_chain(info.value)


def test_a_bad_yaml_file_still_says_where(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"streamdedup\.yaml: not valid YAML at line 3, column 20"):
        load_config(_write(tmp_path, "kafka:\n  librdkafka:\n    sasl.password: *S3cr3t: {x\n"), environ=NO_ENV)


@pytest.mark.parametrize("value", ["4711", "0123", "yes", "12:30"])
def test_a_secret_in_a_file_must_be_a_quoted_string(tmp_path: Path, value: str) -> None:
    """YAML turns them into 4711, 83, True, 750: refuse to guess, without quoting the value."""
    path = _write(tmp_path, f"kafka:\n  librdkafka:\n    sasl.password: {value}\n")
    with pytest.raises(ConfigError, match=r"kafka\.librdkafka.*sasl\.password.*quote it") as info:
        load_config(path, environ=NO_ENV)
    assert not {"4711", "83", "True", "750"} & set(re.findall(r"\w+", str(info.value)))
    quoted = _write(tmp_path, f"kafka:\n  librdkafka:\n    sasl.password: '{value}'\n")
    assert load_config(quoted, environ=NO_ENV).kafka.client_conf()["sasl.password"] == value


def test_an_unquoted_string_setting_in_a_file_says_quote_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kafka\.group_id: .*quote it"):
        load_config(_write(tmp_path, "kafka:\n  group_id: 0123\n"), environ=NO_ENV)


def test_pydantic_errors_built_directly_hide_their_input() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        KafkaConfig(librdkafka={"sasl.password": ["S3cr3t"]}, linger_ms=-1)
    assert "S3cr3t" not in str(info.value)


def test_client_conf_is_a_fresh_dict() -> None:
    kafka = load_config(environ={"STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD": "pw"}).kafka
    kafka.client_conf()["sasl.password"] = "changed"
    assert kafka.client_conf()["sasl.password"] == "pw"


# ----------------------------------------------------------------------------- start-up settings


def test_kafka_start_up_and_metrics_defaults() -> None:
    kafka = load_config(environ=NO_ENV).kafka
    assert (kafka.metrics_host, kafka.startup_timeout_s, kafka.create_topics) == ("127.0.0.1", 30.0, False)


# ----------------------------------------------------------------------------- --set (a command's overrides)


def test_set_items_are_typed_like_env_overrides() -> None:
    from streamdedup.config import with_settings

    base = load_config(environ={"STREAMDEDUP_VERIFY__LD_MIN_JACCARD": "0.3"})
    cfg = with_settings(base, ["verify.jaccard_threshold=0.7", "verify.duplicate_relations=exact,contains",
                               "input.time_field=", "kafka.librdkafka.sasl.password=0123", "state.sync=no"])
    assert cfg.verify.jaccard_threshold == 0.7 and cfg.verify.duplicate_relations == ("exact", "contains")
    assert cfg.verify.ld_min_jaccard == 0.3  # the base config's other settings stay
    assert cfg.input.time_field is None and cfg.state.sync is False
    # a property keeps its dots and a secret stays a string (0123, not 83)
    assert cfg.kafka.client_conf()["sasl.password"] == "0123"
    assert with_settings(base, []) == base


@pytest.mark.parametrize(("item", "message"), [
    ("verify.jaccard_treshold=0.5", "--set: verify.jaccard_treshold is not a setting; did you mean 'jaccard_threshold'?"),
    ("verify.jaccard_threshold=abc", "verify.jaccard_threshold: Input should be a valid number"),
    ("verify.jaccard_threshold=1.5", "(set by --set verify.jaccard_threshold)"),
    ("verify=0.5", "verify is a section"),
    ("verify.jaccard_threshold", "write SETTING=VALUE"),
    ("fingerprint.minhash.num_perm=100", "fingerprint.minhash.num_perm: Value error, must be a power of two"),
])
def test_a_bad_set_item_names_the_setting(item: str, message: str) -> None:
    from streamdedup.config import with_settings

    with pytest.raises(ConfigError) as info:
        with_settings(Config(), [item])
    assert message in str(info.value)
