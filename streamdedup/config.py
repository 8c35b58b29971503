"""Typed, frozen, validated configuration loaded in one place.

``load_config(path)`` reads a YAML file, applies ``STREAMDEDUP_*`` environment overrides and
validates the result. Nothing is read at import time. Every setting and its default lives in
``config/default.yaml`` with its unit; the models below mirror that file and reject unknown keys,
so a typo fails at start-up with the dotted name of the setting.

Environment overrides use ``__`` between levels, e.g.
``STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM=64`` or ``STREAMDEDUP_VERIFY__JACCARD_THRESHOLD=0.6``.
A value is a string unless the setting's type says otherwise; it is never parsed as YAML (a
password ``0123`` stays ``"0123"``, ``yes`` stays ``"yes"``). Numbers (decimal only: ``0x1F`` is
an error) and booleans (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``) are
converted by the setting's type. Lists take ``[a, b]`` (a YAML flow list whose items stay strings),
``a,b`` or a single ``a``. A setting that may be null is null when the value is empty or ``null``.
``kafka.librdkafka`` properties are named after ``LIBRDKAFKA__`` with ``_`` standing for ``.``
(``STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD`` sets ``sasl.password``; ``log_level`` and
``enabled_events`` keep their underscore), their values stay strings; or the whole mapping goes in
``STREAMDEDUP_KAFKA__LIBRDKAFKA='{security.protocol: SASL_SSL}'`` (YAML/JSON, values stay
strings), merged over the file's and overridden by single-property variables. librdkafka
properties whose name says password, passphrase, secret, key, token or credential are held as
``SecretStr``: no error message, repr or log shows their value.
"""

from __future__ import annotations

import difflib
import os
import re
import types
from pathlib import Path
from typing import Any, Literal, Mapping, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from .errors import ConfigError

ENV_PREFIX = "STREAMDEDUP_"

#: parts of a librdkafka property name that mark its value as a secret (over-matching a file
#: path such as ssl.key.location only hides it from logs)
_SECRET_PARTS = re.compile(r"password|passphrase|secret|key|token|credential")
#: secrets whose name does not say so (its implementation-defined text may carry credentials)
_SECRET_NAMES = frozenset({"sasl.oauthbearer.config"})


def is_secret_property(name: str) -> bool:
    """Whether a librdkafka property holds a secret (its value is never shown).

    >>> is_secret_property("sasl.password"), is_secret_property("ssl.key.pem"), is_secret_property("security.protocol")
    (True, True, False)
    """
    name = name.lower()
    return name in _SECRET_NAMES or _SECRET_PARTS.search(name) is not None


#: Coates' 62-symbol printable alphabet (seed 001): readable in logs and `explain` output.
DEFAULT_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class _Frozen(BaseModel):
    # hide_input_in_errors: a pydantic error printed anywhere must not carry a secret it was given
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, hide_input_in_errors=True)


class CanonicalConfig(_Frozen):
    """Broder's canonical form: documents that differ only in formatting are the same."""

    nfkc: bool = True
    casefold: bool = True
    strip_html: bool = True
    punctuation_to_space: bool = True


class ShingleConfig(_Frozen):
    kind: Literal["word", "char"] = "word"
    #: words per shingle for ``word``, UTF-8 bytes per shingle for ``char``
    size: int = Field(5, ge=1, le=32)


class MinHashConfig(_Frozen):
    #: slots (K); a power of two so a slot index is the top bits of one hash
    num_perm: int = Field(128, ge=8, le=1024)
    #: ``oph`` = one-permutation hashing with densification; ``classic`` = K hash functions
    method: Literal["oph", "classic"] = "oph"
    seed: int = Field(1, ge=0, lt=2**63)
    #: bits kept per slot in the stored record (b-bit minwise hashing, seed 004)
    storage_bits: Literal[1, 2, 4, 8, 16, 32] = 8

    @field_validator("num_perm")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        # a field validator, so the error is located at fingerprint.minhash.num_perm
        if v & (v - 1):
            raise ValueError(f"must be a power of two, got {v}")
        return v


class LSHConfig(_Frozen):
    #: Jaccard similarity at which a pair should become a candidate
    threshold: float = Field(0.4, gt=0.0, lt=1.0)
    #: recall matters more than candidate count: a false candidate costs one verification,
    #: a missed one is a duplicate let through (measured: 0.2/0.8 gives 31 bands of 3 rows,
    #: P(candidate) 0.98 at J=0.5, where teasers and reordered stories sit)
    false_positive_weight: float = Field(0.2, ge=0.0, le=1.0)
    false_negative_weight: float = Field(0.8, ge=0.0, le=1.0)
    #: explicit override; both or neither, bands * rows <= num_perm
    bands: int | None = Field(None, ge=1)
    rows: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _both_or_neither(self) -> "LSHConfig":
        if (self.bands is None) != (self.rows is None):
            raise ValueError("set both bands and rows, or neither")
        if self.false_positive_weight + self.false_negative_weight <= 0:
            raise ValueError("false_positive_weight + false_negative_weight must be > 0")
        return self


class LeadConfig(_Frozen):
    """A second, small MinHash over the first shingles of each text (its lead).

    A brief or teaser contained in a long story has a low Jaccard with it and slips under the
    main LSH bands; its lead matches the story's lead. 0 shingles disables it.
    """

    #: shingles from the start of the canonical text that make the lead
    shingles: int = Field(48, ge=0, le=100_000)
    #: MinHash slots of the lead (a power of two)
    num_perm: int = Field(32, ge=4, le=256)
    bands: int = Field(10, ge=1)
    rows: int = Field(3, ge=1)

    @model_validator(mode="after")
    def _fit(self) -> "LeadConfig":
        if self.num_perm & (self.num_perm - 1):
            raise ValueError(f"num_perm must be a power of two, got {self.num_perm}")
        if self.bands * self.rows > self.num_perm:
            raise ValueError(f"bands * rows = {self.bands * self.rows} exceeds num_perm = {self.num_perm}")
        return self


class SignatureConfig(_Frozen):
    """Coates LD signatures (seeds 000 and 001)."""

    #: C of the fine signature: about one symbol per C bytes of canonical text
    compression: int = Field(16, ge=2, le=4096)
    #: the coarse signature uses C * coarse_factor (its positions are a subset of the fine ones)
    coarse_factor: int = Field(8, ge=2, le=256)
    #: N, bytes in each hashed window. At most 8: the window is then one exact 64-bit value,
    #: and larger N only spreads each edit over more windows (measured: worse estimates).
    neighbourhood: int = Field(4, ge=2, le=8)
    #: k, the residue that selects emitting positions, 0 <= k < compression
    residue: int = Field(0, ge=0)
    alphabet: str = Field(DEFAULT_ALPHABET, min_length=2, max_length=256)
    seed: int = Field(7, ge=0, lt=2**63)

    @model_validator(mode="after")
    def _check(self) -> "SignatureConfig":
        if self.residue >= self.compression:
            raise ValueError(f"residue must be < compression ({self.compression})")
        if not self.alphabet.isascii() or len(set(self.alphabet)) != len(self.alphabet):
            raise ValueError("alphabet must be distinct ASCII characters")
        return self


class FingerprintConfig(_Frozen):
    canonical: CanonicalConfig = CanonicalConfig()
    shingle: ShingleConfig = ShingleConfig()
    minhash: MinHashConfig = MinHashConfig()
    lsh: LSHConfig = LSHConfig()
    lead: LeadConfig = LeadConfig()
    signature: SignatureConfig = SignatureConfig()
    #: UTF-8 bytes; longer texts are rejected (InputError), never silently truncated
    max_text_bytes: int = Field(1_000_000, ge=1)

    @model_validator(mode="after")
    def _bands_fit(self) -> "FingerprintConfig":
        if self.lsh.bands is not None and self.lsh.bands * self.lsh.rows > self.minhash.num_perm:
            raise ValueError(
                f"lsh.bands * lsh.rows = {self.lsh.bands * self.lsh.rows} exceeds "
                f"minhash.num_perm = {self.minhash.num_perm}"
            )
        return self


class VerifyConfig(_Frozen):
    """When a candidate pair counts as a duplicate (used by `explain` and the engine)."""

    #: estimated Jaccard at or above which a pair is a near-duplicate
    jaccard_threshold: float = Field(0.55, ge=0.0, le=1.0)
    #: calibrated LD similarity (1 - LD/length) at or above which a pair is a near-duplicate
    ld_similarity_threshold: float = Field(0.65, ge=0.0, le=1.0)
    #: estimated containment of the shorter text in the longer for contains/contained_in
    containment_threshold: float = Field(0.8, ge=0.0, le=1.0)
    #: the LD similarity only counts if the Jaccard (over non-boilerplate slots) is at least
    #: this: a shared footer or a fixed template (earnings tables) aligns well in signatures
    #: but carries no shared story
    ld_min_jaccard: float = Field(0.4, ge=0.0, le=1.0)
    #: slots left after removing boilerplate bands below which a pair is not judged by Jaccard
    min_informative_slots: int = Field(16, ge=1)
    #: relations that make a document a duplicate
    duplicate_relations: tuple[Literal["exact", "near_duplicate", "contains", "contained_in"], ...] = (
        "exact",
        "near_duplicate",
        "contained_in",
    )


class EngineConfig(_Frozen):
    """The dedup engine: window, bounds and candidate handling."""

    #: hours of event time a document stays a possible original
    window_hours: float = Field(72.0, gt=0.0)
    #: documents kept in the index at most (oldest evicted first); memory is sized from it
    max_documents: int = Field(1_000_000, ge=16, le=2**31 - 1)
    #: a band key written by this many different clusters in a row is boilerplate (hot)
    hot_bucket_clusters: int = Field(3, ge=2, le=255)
    #: distinct candidates collected per document
    max_candidates: int = Field(16, ge=1, le=1024)
    #: candidates verified per document, most shared bands first
    max_verified: int = Field(8, ge=1, le=1024)
    #: documents per micro-batch (one fingerprint call, one state commit)
    batch_size: int = Field(512, ge=1, le=100_000)
    #: cell tables of the index: ``grow`` starts small and grows fourfold with the stream (a
    #: short file does not pay for max_documents), ``full`` sizes them for max_documents at
    #: start-up and touches every page (no growth pauses: a long-running processor), ``auto``
    #: is full for the Kafka processor and grow for file mode. Decisions depend on it only as
    #: they depend on max_documents (which documents share a cell).
    index_sizing: Literal["auto", "grow", "full"] = "auto"


class InputConfig(_Frozen):
    """How records are decoded (file mode and Kafka)."""

    #: ``json`` (one object per record) or ``text`` (the whole record is the text)
    format: Literal["json", "text"] = "json"
    id_field: str = Field("id", min_length=1)
    #: joined with ``text_separator`` in this order; missing fields are skipped, all missing is an error
    text_fields: tuple[str, ...] = Field(("text",), min_length=1)
    text_separator: str = "\n"
    #: event time: epoch milliseconds (number) or ISO-8601 string; null = processing time
    time_field: str | None = None
    #: records larger than this many bytes go to dead-letter
    max_record_bytes: int = Field(1_000_000, ge=16)


class StateConfig(_Frozen):
    #: RocksDB state directory; null = OUTPUT_DIR/state in file mode, ./state for Kafka
    dir: str | None = None
    #: fsync each micro-batch's state commit (power-loss safe; SIGKILL-safe either way)
    sync: bool = True


class KafkaConfig(_Frozen):
    """The Kafka processor (``streamdedup run`` without ``--input``)."""

    bootstrap_servers: str = "127.0.0.1:9092"
    input_topics: tuple[str, ...] = Field(("news",), min_length=1)
    unique_topic: str = "news.unique"
    duplicates_topic: str = "news.duplicates"
    dead_letter_topic: str = "news.dead-letter"
    group_id: str = "streamdedup"
    #: one per processor instance *role*: a standby with the same id fences a zombie
    transactional_id: str = "streamdedup-single-index"
    delivery: Literal["exactly_once", "at_least_once"] = "exactly_once"
    #: ms to wait for a micro-batch to fill (batch size is engine.batch_size)
    linger_ms: int = Field(50, ge=0, le=60_000)
    #: when provisioning topics (``streamdedup topics create``)
    partitions: int = Field(3, ge=1)
    replication_factor: int = Field(1, ge=1)
    #: Prometheus metrics on this port (0 = off)
    metrics_port: int = Field(0, ge=0, le=65535)
    #: address the metrics server binds; 0.0.0.0 exposes it on every interface (containers)
    metrics_host: str = Field("127.0.0.1", min_length=1)
    #: seconds without progress in the main loop after which the processor restarts itself
    #: (a client call that never returns); 0 = never
    stall_restart_s: float = Field(180.0, ge=0.0)
    #: seconds allowed for the start-up checks (broker reachable, authentication, topics exist)
    startup_timeout_s: float = Field(30.0, gt=0.0)
    #: create missing input and output topics at start-up instead of failing
    create_topics: bool = False
    #: passed to librdkafka untouched (SASL/SSL, timeouts, ...); secret values are SecretStr
    librdkafka: dict[str, str | int | float | bool | SecretStr] = Field(default_factory=dict)

    @field_validator("librdkafka", mode="before")
    @classmethod
    def _hold_secrets(cls, v: Any) -> Any:
        if not isinstance(v, Mapping):
            return v  # pydantic reports the type
        out = {}
        for key, value in v.items():
            if key in ("bootstrap.servers", "metadata.broker.list"):
                # two sources for the brokers would make --bootstrap-servers silently lose
                raise ValueError(f"{key}: set kafka.bootstrap_servers instead")
            if isinstance(key, str) and is_secret_property(key) and not isinstance(value, SecretStr):
                if not isinstance(value, str):
                    # YAML reads an unquoted 0123 as 83 and yes as true: never guess a secret
                    raise ValueError(f"{key} is a secret and must be a string; quote it in YAML")
                value = SecretStr(value)
            out[key] = value
        return out

    def client_conf(self) -> dict[str, str | int | float | bool]:
        """librdkafka configuration with secrets revealed: the one place they are handed out.

        Callers pass it (adding their own client-specific properties) to confluent-kafka
        clients (``Consumer``, ``Producer``, ``AdminClient``); never log it, log
        :meth:`redacted_conf` instead.

        >>> KafkaConfig(librdkafka={"sasl.password": "0123"}).client_conf()
        {'bootstrap.servers': '127.0.0.1:9092', 'sasl.password': '0123'}
        """
        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        for key, value in self.librdkafka.items():
            conf[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        return conf

    def redacted_conf(self) -> dict[str, str | int | float | bool]:
        """:meth:`client_conf` for logs: secret values are ``***``.

        >>> KafkaConfig(librdkafka={"sasl.password": "0123", "security.protocol": "SASL_SSL"}).redacted_conf()
        {'bootstrap.servers': '127.0.0.1:9092', 'sasl.password': '***', 'security.protocol': 'SASL_SSL'}
        """
        conf: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        for key, value in self.librdkafka.items():
            conf[key] = "***" if isinstance(value, SecretStr) else value
        return conf


class Config(_Frozen):
    fingerprint: FingerprintConfig = FingerprintConfig()
    verify: VerifyConfig = VerifyConfig()
    engine: EngineConfig = EngineConfig()
    input: InputConfig = InputConfig()
    state: StateConfig = StateConfig()
    kafka: KafkaConfig = KafkaConfig()


def _set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


#: the librdkafka properties (settable by value) whose names have an underscore: the rest use dots
_UNDERSCORED = {"log.level": "log_level", "enabled.events": "enabled_events"}
_PROPERTY_NAME = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*")
_DECIMAL = re.compile(r"\s*[+-]?\d+\s*")
_NULLS = ("", "null")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where YAML failed and why, without the offending text (it may be a secret)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or ""
    # keep token names ('<stream end>'), drop quoted input ("found undefined alias 'S3cr3t'")
    problem = re.sub(r"'(?!<[a-z ]+>')[^']*'", "'...'", problem)
    return where + (f": {problem}" if problem else "")


def _env_list(name: str, dotted: str, raw: str) -> list[Any]:
    text = raw.strip()
    if text.startswith("["):
        problem = None
        try:
            # BaseLoader: items stay strings ([0123] is "0123"); the setting's type converts them
            items = yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader builds only str/list/dict
        except yaml.YAMLError as exc:
            problem = _yaml_problem(exc)
        if problem is not None:
            raise ConfigError(f"{name} ({dotted}): not a list [a, b]{problem}")
        return items
    if not text:
        return []
    items = [item.strip() for item in text.split(",")]
    if "" in items:
        raise ConfigError(f"{name} ({dotted}): empty item in the comma-separated list")
    return items


def _env_value(name: str, dotted: str, annotation: Any, raw: str) -> Any:
    """The raw string, shaped only as far as the setting's type needs; pydantic converts the rest."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = get_args(annotation)
        if type(None) in args and raw in _NULLS:
            return None
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    origin = get_origin(annotation)
    if origin in (tuple, list):
        return _env_list(name, dotted, raw)
    if origin is Literal and all(type(a) is int for a in get_args(annotation)) and _DECIMAL.fullmatch(raw):
        return int(raw)  # pydantic matches int literals against ints only
    return raw


def _env_mapping(name: str, dotted: str, raw: str) -> dict[str, Any]:
    problem = None
    try:
        value = yaml.load(raw, Loader=yaml.BaseLoader) if raw.strip() else {}  # BaseLoader: values stay strings
    except yaml.YAMLError as exc:
        problem = _yaml_problem(exc)
    if problem is not None:
        raise ConfigError(f"{name} ({dotted}): not a YAML/JSON mapping{problem}")
    if not isinstance(value, dict):
        raise ConfigError(f"{name} ({dotted}): must be a mapping such as {{security.protocol: SASL_SSL}}")
    return value


def _not_a_setting(name: str, dotted: str, part: str, choices: Mapping[str, Any]) -> ConfigError:
    what = "a setting" if "." in dotted else "a configuration section"
    close = difflib.get_close_matches(part, list(choices), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; one of: {', '.join(choices)}"
    return ConfigError(f"{name}: {dotted} is not {what}{hint}")


def _env_override(name: str, raw: str) -> list[tuple[tuple[str, ...], Any]]:
    """The (path, value) pairs one ``STREAMDEDUP_*`` variable sets, typed by walking the models."""
    parts = [p.lower() for p in name[len(ENV_PREFIX):].split("__")]
    model: type[BaseModel] = Config
    for i, part in enumerate(parts):
        path, dotted = tuple(parts[: i + 1]), ".".join(parts[: i + 1])
        field = model.model_fields.get(part)
        if field is None:
            raise _not_a_setting(name, dotted, part, model.model_fields)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
            continue
        tail = parts[i + 1:]
        if get_origin(annotation) is dict:  # kafka.librdkafka: property names are not ours to check
            if not tail:
                return [((*path, str(k)), v) for k, v in _env_mapping(name, dotted, raw).items()]
            prop = ".".join(tail)
            if not _PROPERTY_NAME.fullmatch(prop):
                raise ConfigError(f"{name}: {prop!r} is not a librdkafka property name (write sasl.password as SASL_PASSWORD)")
            prop = prop.replace("_", ".")
            prop = _UNDERSCORED.get(prop, prop)
            return [((*path, prop), raw)]
        if tail:
            raise ConfigError(f"{name}: {dotted} is a setting, not a section")
        return [(path, _env_value(name, dotted, annotation, raw))]
    raise ConfigError(f"{name}: {'.'.join(parts)} is a section; set its settings one by one")


def _env_overrides(environ: Mapping[str, str]) -> list[tuple[tuple[str, ...], Any, str]]:
    out = []
    # sorted: STREAMDEDUP_KAFKA__LIBRDKAFKA (a whole mapping) comes before its single properties
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            # STREAMDEDUP_CACHE and the like are not settings: a setting always has a section.
            continue
        out.extend((path, value, name) for path, value in _env_override(name, raw))
    return out


def _format_error(exc: ValidationError, sources: Mapping[tuple[str, ...], str]) -> str:
    """One line per error: the dotted setting, pydantic's message (never the input: secrets),
    and the environment variables that set anything there."""
    lines = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        where = ".".join(loc) or "(top level)"
        names = sorted({n for path, n in sources.items() if path[: len(loc)] == loc or loc[: len(path)] == path})
        msg = err["msg"]
        if err["type"] == "string_type" and not names:
            msg += "; quote it in YAML (0123, yes, 12:30 are not strings there)"
        lines.append(f"{where}: {msg}" + (f" (set by {', '.join(names)})" if names else ""))
    return "invalid configuration: " + "; ".join(lines)


def _read_file(p: Path) -> dict[str, Any]:
    # Errors are raised outside the except blocks: a YAML error's text quotes the offending
    # line, which may hold a secret, and a chained exception would print it in tracebacks.
    problem = None
    try:
        loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        problem = exc.strerror
    except yaml.YAMLError as exc:
        problem = "not valid YAML" + _yaml_problem(exc)
    if problem is not None:
        raise ConfigError(f"config file {p}: {problem}")
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {p}: top level must be a mapping, got {type(loaded).__name__}")
    return loaded


def load_config(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Load and validate the configuration.

    Args:
        path: a YAML file; ``None`` gives the built-in defaults (same as ``config/default.yaml``).
        environ: environment for ``STREAMDEDUP_*`` overrides; defaults to ``os.environ``.
            Values are typed by the setting they override (see the module docstring).

    Raises:
        ConfigError: naming the setting that is wrong (and the variable, for an override);
            never quoting a secret.

    >>> load_config(environ={}).fingerprint.minhash.num_perm
    128
    >>> load_config(environ={"STREAMDEDUP_KAFKA__GROUP_ID": "0123"}).kafka.group_id
    '0123'
    """
    tree: dict[str, Any] = {} if path is None else _read_file(Path(path))
    sources: dict[tuple[str, ...], str] = {}
    for keys, value, name in _env_overrides(os.environ if environ is None else environ):
        _set_path(tree, list(keys), value)
        sources[keys] = name
    try:
        return Config.model_validate(tree)
    except ValidationError as exc:
        message = _format_error(exc, sources)
    raise ConfigError(message)
