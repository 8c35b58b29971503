"""Typed, frozen, validated configuration loaded in one place.

``load_config(path)`` reads a YAML file, applies ``STREAMDEDUP_*`` environment overrides and
validates the result. Nothing is read at import time. Every setting and its default lives in
``config/default.yaml`` with its unit; the models below mirror that file and reject unknown keys,
so a typo fails at start-up with the dotted name of the setting.

Environment overrides (``STREAMDEDUP_SECTION__SETTING``) are read by ``config_sources``, typed by
these models; secrets are ``SecretStr``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from streamdedup.config_sources import AutoOnOff, env_overrides, format_error, is_secret_property, read_file, set_overrides, set_path
from streamdedup.errors import ConfigError

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
    fold_traditional: AutoOnOff = "auto"  # Traditional -> Simplified Chinese; auto: Han text without kana (canonical.py)


class ShingleConfig(_Frozen):
    kind: Literal["word", "char"] = "word"
    #: words per shingle for ``word``, UTF-8 bytes per shingle for ``char``
    size: int = Field(5, ge=1, le=32)
    #: ``word`` only: tokens per shingle in a text whose tokens are mostly single characters
    #: of scripts written without spaces (Chinese, Japanese, Thai; ``streamdedup.text.scripts``)
    unspaced_size: int = Field(5, ge=1, le=32)


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
    """A small MinHash of each text's first shingles: a teaser's lead matches its story's. 0 shingles: off."""

    #: shingles from the start of the canonical text that make the lead
    shingles: int = Field(48, ge=0, le=100_000)
    #: MinHash slots of the lead (a power of two)
    num_perm: int = Field(32, ge=4, le=256)
    bands: int = Field(10, ge=1)
    rows: int = Field(3, ge=1)

    _fit = model_validator(mode="after")(lambda self: _sketch_fits(self))


def _sketch_fits(s: Any) -> Any:
    """A small MinHash's slots are a power of two and hold its bands."""
    if s.num_perm & (s.num_perm - 1):
        raise ValueError(f"num_perm must be a power of two, got {s.num_perm}")
    if s.bands * s.rows > s.num_perm:
        raise ValueError(f"bands * rows = {s.bands * s.rows} exceeds num_perm = {s.num_perm}")
    return s


class CharsConfig(_Frozen):
    """A MinHash of the canonical text's byte n-grams with its own LSH bands (issue 11): a
    character edit breaks ``size`` grams, not five word shingles, so copies with 2-3% noise stay
    candidates; bytes, not words, so it serves scripts without spaces. 0 bands disables it."""

    size: int = Field(8, ge=2, le=8)  # bytes per gram, each the exact window as one 64-bit integer
    sample_bits: int = Field(3, ge=0, le=6)  # keep 1 gram in 2**sample_bits, chosen by content (Broder's MOD_m)
    num_perm: int = Field(64, ge=8, le=1024)  # a power of two
    bands: int = Field(16, ge=0, le=255)
    rows: int = Field(4, ge=1)

    _fit = model_validator(mode="after")(lambda self: _sketch_fits(self))


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
    chars: CharsConfig = CharsConfig()
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
    #: signature embedding (and estimated containment, for contains) for contains/contained_in
    containment_threshold: float = Field(0.8, ge=0.0, le=1.0)
    contained_min_estimate: float = Field(0.5, ge=0.0, le=1.0)  # estimated containment for contained_in
    #: the LD similarity only counts if the Jaccard (over non-boilerplate slots) is at least
    #: this: a shared footer or a fixed template (earnings tables) aligns well in signatures
    #: but carries no shared story
    ld_min_jaccard: float = Field(0.4, ge=0.0, le=1.0)
    #: slots left after removing boilerplate bands below which a pair is not judged by Jaccard
    min_informative_slots: int = Field(16, ge=1)
    #: exact character evidence (issue 11, ``_kernels.evidence``): the best pair below
    #: ld_min_jaccard of a document nothing else decided, if its LD similarity reaches
    #: exact_min_ld, is a near-duplicate at exact byte 8-gram Jaccard >= exact_gram_jaccard,
    #: unless digits read as 0 raise it by more than exact_max_digit_gain (numbers differ) or
    #: fewer than exact_min_near_words of the copy's own words are one edit from the other's
    exact_evidence: bool = True
    exact_min_ld: float = Field(0.9, ge=0.0, le=1.0)
    exact_gram_jaccard: float = Field(0.58, ge=0.0, le=1.0)
    exact_max_digit_gain: float = Field(0.05, ge=0.0, le=1.0)
    exact_min_near_words: float = Field(0.3, ge=0.0, le=1.0)
    #: shorter texts are never asked about: their signature is too coarse for exact_min_ld
    exact_min_bytes: int = Field(300, ge=0)
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
    #: start-up and faults every page in (in the background where the kernel can; no growth
    #: pauses: a long-running processor), ``auto``
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
    #: hours an event time may lie past the wall clock (the window follows the latest event time)
    max_future_skew_hours: float = Field(24.0, gt=0.0, le=87_600.0)
    #: event time not finite, before 1970, out of range or past the skew: ``arrival`` decides the
    #: record with its arrival time, tagged ``dedup.time_invalid``; ``dead_letter``: stage ``time``
    invalid_time: Literal["arrival", "dead_letter"] = "arrival"


class StateConfig(_Frozen):
    #: RocksDB state directory; null = OUTPUT_DIR/state in file mode, ./state for Kafka
    dir: str | None = None
    #: fsync each micro-batch's state commit (power-loss safe; SIGKILL-safe either way)
    sync: bool = True
    #: keep each indexed story's canonical text (lower-cased words) in the state: exact character
    #: evidence compares a noisy copy with it. false: the state holds fingerprints, ids and
    #: decisions only (needs verify.exact_evidence: false; records written before keep theirs)
    keep_text: bool = True


class StagedConfig(_Frozen):
    """The staged topology (``streamdedup run --topology staged``): workers and one decider."""

    #: one partition: its order defines "first seen"
    fingerprints_topic: str = "news.fingerprints"
    #: at least as many partitions as the input topics have together
    decisions_topic: str = "news.decisions"
    #: a re-sent fingerprint older than this many decisions per input partition is decided again
    recent_positions: int = Field(200_000, ge=1_000)


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
    staged: StagedConfig = StagedConfig()
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

    @model_validator(mode="after")
    def _text_for_evidence(self) -> "Config":
        if not self.state.keep_text and self.verify.exact_evidence:
            raise ValueError("state.keep_text: false needs verify.exact_evidence: false (exact evidence compares a "
                             "copy with the earlier story's text, kept in the state)")
        return self


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
    tree: dict[str, Any] = {} if path is None else read_file(Path(path))
    return _overridden(tree, env_overrides(os.environ if environ is None else environ, Config))


def _overridden(tree: dict[str, Any], overrides) -> Config:
    """``tree`` with ``(keys, value, where it came from)`` overrides set, validated; a
    ConfigError names the setting and where its value came from."""
    sources: dict[tuple[str, ...], str] = {}
    for keys, value, label in overrides:
        set_path(tree, list(keys), value)
        sources[keys] = label
    try:
        return Config.model_validate(tree)
    except ValidationError as exc:
        message = format_error(exc, sources)
    raise ConfigError(message)


def with_settings(cfg: Config, items: list[str]) -> Config:
    """``cfg`` with ``dotted.setting=value`` items applied (a command's ``--set``), validated
    as a whole; values are typed as environment overrides are.

    Raises:
        ConfigError: naming the setting (and the ``--set`` that gave it).

    >>> with_settings(Config(), ["verify.jaccard_threshold=0.7"]).verify.jaccard_threshold
    0.7
    """
    # python mode keeps SecretStr values as they are (the librdkafka validator accepts them)
    return _overridden(cfg.model_dump(), set_overrides(items, Config))
