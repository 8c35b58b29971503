"""Typed, frozen, validated configuration loaded in one place.

``load_config(path)`` reads a YAML file, applies ``STREAMDEDUP_*`` environment overrides and
validates the result. Nothing is read at import time. The models below are the source of every
setting's default, unit, range and meaning (the generated docs/reference/configuration.md reads
them); ``config/default.yaml`` lists the same settings (a test holds the two equal). Unknown keys
are rejected, so a typo fails at start-up with the dotted name of the setting.

Environment overrides (``STREAMDEDUP_SECTION__SETTING``) are read by ``config_sources``, typed by
these models; secrets are ``SecretStr``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import SecretStr, ValidationError, field_validator, model_validator

from streamdedup.config_fields import Frozen, setting
from streamdedup.config_kafka import KafkaConfig, StagedConfig  # noqa: F401 (re-exported: streamdedup.config names every section)
from streamdedup.config_sources import AutoOnOff, env_overrides, format_error, read_file, set_overrides, set_path
from streamdedup.config_sources import is_secret_property  # noqa: F401 (re-exported)
from streamdedup.errors import ConfigError

#: the most bytes a record, a text or a byte count may be set to (Kafka's own records stop well
#: below; every size in the pipeline stays far from an int32 or int64 overflow)
MAX_BYTES = 256_000_000
#: Coates' 62-symbol printable alphabet (Coates' Levenshtein estimates): readable in logs and `explain` output.
DEFAULT_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class CanonicalConfig(Frozen):
    """Broder's canonical form: documents that differ only in formatting are the same."""

    nfkc: bool = setting(True, "Unicode NFKC normalisation (full-width forms, ligatures, no-break spaces)")
    casefold: bool = setting(True, 'Unicode case folding ("Straße" -> "strasse")')
    strip_html: bool = setting(True, "drop HTML tags and comments and decode entities, only in texts that look like HTML")
    punctuation_to_space: bool = setting(True, "every character that is not a letter, digit or combining mark becomes a space")
    fold_traditional: AutoOnOff = setting(
        "auto", "Traditional -> Simplified Chinese (OpenCC t2s): auto = Han text without kana, on = Japanese too, off")


class ShingleConfig(Frozen):
    """The shingles of the main MinHash."""

    kind: Literal["word", "char"] = setting("word", "shingles of words or of UTF-8 bytes")
    size: int = setting(5, "words per shingle (kind word) or UTF-8 bytes per shingle (kind char)", "words or bytes", ge=1, le=32)
    unspaced_size: int = setting(
        5, "kind word: tokens per shingle in a text written without spaces (Chinese, Japanese, Thai: one token a character)",
        "tokens", ge=1, le=32)


class MinHashConfig(Frozen):
    """The main MinHash sketch."""

    num_perm: int = setting(128, "MinHash slots K; a power of two, so a slot index is the top bits of one hash", "slots",
                             ge=8, le=1024)
    method: Literal["oph", "classic"] = setting(
        "oph", "oph = one-permutation hashing with densification; classic = K hash functions (slow, the reference)")
    seed: int = setting(1, "hash seed; fingerprints made with different seeds are refused as incomparable", ge=0, lt=2**63)
    storage_bits: Literal[1, 2, 4, 8, 16, 32] = setting(8, "bits kept per slot in the stored record (b-bit minwise hashing)",
                                                         "bits")

    @field_validator("num_perm")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        # a field validator, so the error is located at fingerprint.minhash.num_perm
        if v & (v - 1):
            raise ValueError(f"must be a power of two, got {v}")
        return v


class LSHConfig(Frozen):
    """LSH bands of the main MinHash: bands and rows follow from the threshold and the weights."""

    threshold: float = setting(0.4, "Jaccard similarity at which a pair should become a candidate", gt=0.0, lt=1.0)
    # recall matters more than candidate count: a false candidate costs one verification, a
    # missed one is a duplicate let through (measured: 0.2/0.8 gives 31 bands of 3 rows,
    # P(candidate) 0.98 at J=0.5, where teasers and reordered stories sit)
    false_positive_weight: float = setting(
        0.2, "weight of the S-curve's area below the threshold (a false candidate costs one verification)", ge=0.0, le=1.0)
    false_negative_weight: float = setting(
        0.8, "weight of the area above it (a missed candidate lets a duplicate through)", ge=0.0, le=1.0)
    bands: int | None = setting(None, "explicit override of the bands (with rows): bands * rows <= num_perm", "bands", ge=1, le=1024)
    rows: int | None = setting(None, "explicit override of the rows per band (with bands)", "slots", ge=1, le=1024)

    @model_validator(mode="after")
    def _both_or_neither(self) -> "LSHConfig":
        if (self.bands is None) != (self.rows is None):
            raise ValueError("set both bands and rows, or neither")
        if self.false_positive_weight + self.false_negative_weight <= 0:
            raise ValueError("false_positive_weight + false_negative_weight must be > 0")
        return self


class LeadConfig(Frozen):
    """A small MinHash of each text's first shingles: a teaser's lead matches its story's. 0 shingles: off."""

    shingles: int = setting(48, "shingles from the start of the canonical text that make the lead; 0 disables the lead",
                             "shingles", ge=0, le=100_000)
    num_perm: int = setting(32, "slots of the lead MinHash (a power of two)", "slots", ge=4, le=256)
    bands: int = setting(10, "lead LSH bands, indexed beside the main bands", "bands", ge=1, le=256)
    rows: int = setting(3, "slots per lead band", "slots", ge=1, le=256)

    _fit = model_validator(mode="after")(lambda self: _sketch_fits(self))


def _sketch_fits(s: Any) -> Any:
    """A small MinHash's slots are a power of two and hold its bands."""
    if s.num_perm & (s.num_perm - 1):
        raise ValueError(f"num_perm must be a power of two, got {s.num_perm}")
    if s.bands * s.rows > s.num_perm:
        raise ValueError(f"bands * rows = {s.bands * s.rows} exceeds num_perm = {s.num_perm}")
    return s


class CharsConfig(Frozen):
    """A MinHash of the canonical text's byte n-grams with its own LSH bands: a character edit
    breaks ``size`` grams, not five word shingles, so copies with 2-3% noise stay candidates;
    bytes, not words, so it serves scripts without spaces. 0 bands disables it."""

    # each gram is the exact window as one 64-bit integer
    size: int = setting(8, "bytes per gram", "bytes", ge=2, le=8)
    sample_bits: int = setting(
        3, "the MinHash reads 1 gram in 2**sample_bits, chosen by the gram's bytes (the same sample in every text)",
        "bits", ge=0, le=6)
    num_perm: int = setting(64, "slots of the character MinHash (a power of two)", "slots", ge=8, le=1024)
    bands: int = setting(16, "character LSH bands, indexed after the lead bands; 0 disables them", "bands", ge=0, le=255)
    rows: int = setting(4, "slots per character band", "slots", ge=1, le=1024)

    _fit = model_validator(mode="after")(lambda self: _sketch_fits(self))


class SignatureConfig(Frozen):
    """Coates LD signatures: edit distance estimated from short signatures."""

    compression: int = setting(16, "C of the fine signature: about one symbol per C bytes of canonical text", "bytes",
                                ge=2, le=4096)
    coarse_factor: int = setting(8, "the coarse signature uses C * coarse_factor; its positions are a subset of the fine ones",
                                  ge=2, le=256)
    # At most 8: the window is then one exact 64-bit value, and a larger N only spreads each
    # edit over more windows (measured: worse estimates).
    neighbourhood: int = setting(4, "N, bytes in each hashed window", "bytes", ge=2, le=8)
    residue: int = setting(0, "k, which 1/C of the window hashes emit a symbol; 0 <= k < compression", ge=0,
                           le=4095)
    alphabet: str = setting(DEFAULT_ALPHABET, "the signature's output symbols (distinct ASCII characters)",
                             min_length=2, max_length=256)
    seed: int = setting(7, "window-hash seed", ge=0, lt=2**63)

    @model_validator(mode="after")
    def _check(self) -> "SignatureConfig":
        if self.residue >= self.compression:
            raise ValueError(f"residue must be < compression ({self.compression})")
        if not self.alphabet.isascii() or len(set(self.alphabet)) != len(self.alphabet):
            raise ValueError("alphabet must be distinct ASCII characters")
        return self


class FingerprintConfig(Frozen):
    """How each text is fingerprinted; a state built with other fingerprint settings is refused."""

    canonical: CanonicalConfig = CanonicalConfig()
    shingle: ShingleConfig = ShingleConfig()
    minhash: MinHashConfig = MinHashConfig()
    lsh: LSHConfig = LSHConfig()
    lead: LeadConfig = LeadConfig()
    chars: CharsConfig = CharsConfig()
    signature: SignatureConfig = SignatureConfig()
    max_text_bytes: int = setting(1_000_000, "longer texts are rejected (a dead letter), never silently truncated",
                                   "bytes of UTF-8", ge=1, le=MAX_BYTES)
    secret: SecretStr = setting(
        SecretStr(""), "a deployment's secret in every hash of the fingerprint (keyed mode): fingerprints made without "
        "it, or with another, are refused, and no one without it can test a guessed phrase against them; at least 16 "
        "characters; empty = off")

    @field_validator("secret")
    @classmethod
    def _secret_long_enough(cls, v: SecretStr) -> SecretStr:
        if 0 < len(v.get_secret_value()) < 16:
            raise ValueError("fingerprint.secret: at least 16 characters (a long random string), or empty")
        return v

    @model_validator(mode="after")
    def _bands_fit(self) -> "FingerprintConfig":
        if self.lsh.bands is not None and self.lsh.bands * self.lsh.rows > self.minhash.num_perm:
            raise ValueError(
                f"lsh.bands * lsh.rows = {self.lsh.bands * self.lsh.rows} exceeds "
                f"minhash.num_perm = {self.minhash.num_perm}"
            )
        return self


class VerifyConfig(Frozen):
    """When a candidate pair counts as a duplicate (used by `explain` and the engine)."""

    jaccard_threshold: float = setting(0.55, "estimated Jaccard at or above which a pair is a near-duplicate", ge=0.0, le=1.0)
    ld_similarity_threshold: float = setting(
        0.65, "calibrated LD similarity (1 - LD/length) at or above which a pair is a near-duplicate, if ld_min_jaccard holds",
        ge=0.0, le=1.0)
    containment_threshold: float = setting(
        0.8, "signature embedding for contains / contained_in, and estimated containment for contains", ge=0.0, le=1.0)
    contained_min_estimate: float = setting(
        0.5, "lowest estimated containment for contained_in; below containment_threshold the embedding must rise to 1.0 here",
        ge=0.0, le=1.0)
    # a teaser of 20-40 words (60-150 Chinese characters) of a long story: 128 b-bit MinHash
    # slots hold one or two of its shingles, so its containment estimate is 0.0-0.5 for a true
    # 1.0; the exact embedding of its whole signature is the evidence there
    short_copy_ratio: int = setting(
        8, "a text with at most 1/N of the earlier text's shingles is contained_in it when its whole signature "
        "(at least 4 symbols) embeds exactly, whatever its containment estimate; 0 turns this off", "times", ge=0,
        le=1_000_000)
    # a shared footer or a fixed template (earnings tables) aligns well in signatures but
    # carries no shared story
    ld_min_jaccard: float = setting(0.4, "the LD similarity counts only for a pair with at least this Jaccard",
                                     ge=0.0, le=1.0)
    min_informative_slots: int = setting(
        16, "MinHash slots left outside boilerplate bands below which a pair is not judged by its Jaccard", "slots", ge=1,
        le=1024)
    # exact character evidence (``_kernels.evidence``): the best pair below ld_min_jaccard of a
    # document nothing else decided, if its LD similarity reaches exact_min_ld, is a
    # near-duplicate at exact byte 8-gram Jaccard >= exact_gram_jaccard, unless digits read as 0
    # raise it by more than exact_max_digit_gain (numbers differ) or fewer than
    # exact_min_near_words of the copy's own words are one edit from the other's
    exact_evidence: bool = setting(
        True, "compare the canonical texts of a pair nothing else decided: below ld_min_jaccard (character noise), "
        "a short text in a longer one (short_exact_*), or a short story without the boilerplate blocks the stream "
        "shows in many stories")
    exact_min_ld: float = setting(0.9, "LD similarity such a pair needs before its texts are compared", ge=0.0, le=1.0)
    exact_gram_jaccard: float = setting(0.58, "exact byte 8-gram Jaccard at or above which it is a near-duplicate",
                                         ge=0.0, le=1.0)
    exact_max_digit_gain: float = setting(
        0.05, "unless reading digits as 0 raises that Jaccard by more than this (templates differ in numbers)", ge=0.0, le=1.0)
    exact_min_near_words: float = setting(
        0.3, "or fewer than this share of the copy's own words are one edit from a word of the other", ge=0.0, le=1.0)
    # a shorter text's signature (~1 symbol per 16 bytes) is too coarse for exact_min_ld
    exact_min_bytes: int = setting(300, "canonical text both texts need for the exact path", "bytes", ge=0,
                                  le=MAX_BYTES)
    # a short copy (at most half the earlier text's bytes: a teaser after a header block, a
    # "key points" box) that its estimates cannot settle: a handful of MinHash slots, and a
    # signature embedding broken where the copy skipped text. Its 8-grams are looked up in the
    # earlier canonical text: 0.94-0.99 of a teaser's or key points' are there, 0.1-0.6 of a
    # story quoting a paragraph or sharing a disclaimer
    short_exact_containment: float = setting(
        0.85, "exact byte 8-gram containment of a short text (at most half the earlier's bytes) in an earlier text at "
        "or above which it is contained_in it, unless digits read as 0 raise it by more than exact_max_digit_gain; "
        "0 turns this off", ge=0.0, le=1.0)
    short_exact_min_estimate: float = setting(
        0.3, "containment estimate from which such a pair's texts are compared", ge=0.0, le=1.0)
    duplicate_relations: tuple[Literal["exact", "near_duplicate", "contains", "contained_in"], ...] = setting(
        ("exact", "near_duplicate", "contained_in"), "relations that make a document a duplicate")
    # a correction or an update is linked like a copy, but withholding it would keep the wrong
    # fact downstream: news desks want it on the unique topic (see docs/how-it-works.md)
    revisions: Literal["unique", "duplicates", "topic", "off"] = setting(
        "unique", "where a duplicate that revises its match goes (changed figures, negations, names, CORRECTED/UPDATE "
        "markers, added facts): unique = the unique topic, tagged revision; duplicates = the duplicates topic, tagged "
        "revision; topic = a topic of its own (kafka.revisions_topic; file mode: revisions.jsonl), tagged revision; "
        "off = not looked for (a revision is a duplicate)")
    # the revision test is the decide step's largest part (~40 us a linked pair, compiled, the
    # GIL released); a batch's pairs are independent, so parts of them run at once
    revision_threads: int = setting(
        2, "threads a batch's revision tests run on at once (1: the deciding thread alone); decisions are the same "
        "whatever it is", "threads", ge=1, le=64)


class EngineConfig(Frozen):
    """The dedup engine: window, bounds and candidate handling."""

    window_hours: float = setting(72.0, "event time a document stays a possible original", "hours", gt=0.0,
                                 le=87_600.0)
    max_documents: int = setting(1_000_000, "documents kept in the index at most (oldest evicted first); memory is sized from it",
                                  "documents", ge=16, le=2**31 - 1)
    hot_bucket_clusters: int = setting(3, "a band key written by this many different clusters in a row is boilerplate (hot)",
                                        "clusters", ge=2, le=255)
    max_candidates: int = setting(16, "distinct candidates collected per document", "candidates", ge=1, le=1024)
    max_verified: int = setting(8, "candidates verified per document, most shared bands first", "candidates", ge=1, le=1024)
    batch_size: int = setting(512, "documents per micro-batch (one fingerprint call, one state commit)", "documents",
                               ge=1, le=100_000)
    # Decisions depend on it only as they depend on max_documents (which documents share a cell);
    # full faults every page in at start-up (in the background where the kernel can)
    index_sizing: Literal["auto", "grow", "full"] = setting(
        "auto", "index tables: grow = start small, grow with the stream; full = sized for max_documents at start-up; "
        "auto = full for Kafka, grow for file mode")


class InputConfig(Frozen):
    """How records are decoded (file mode and Kafka)."""

    format: Literal["json", "text"] = setting("json", "json = one object per record; text = the whole record is the text")
    id_field: str = setting("id", "field holding the record's id; missing: the source position names the record",
                             min_length=1)
    text_fields: tuple[str, ...] = setting(
        ("text",), "fields joined into the text, in this order; missing ones are skipped, all missing is a dead letter",
        min_length=1)
    text_separator: str = setting("\n", "what joins the text fields")
    time_field: str | None = setting(None, "event time field: epoch milliseconds or ISO-8601; null = processing time")
    max_record_bytes: int = setting(1_000_000, "larger records go to dead-letter", "bytes", ge=16, le=MAX_BYTES)
    max_future_skew_hours: float = setting(24.0, "how far an event time may lie past the wall clock", "hours",
                                            gt=0.0, le=87_600.0)
    invalid_time: Literal["stream", "arrival", "dead_letter"] = setting(
        "stream", "an invalid event time (or Kafka timestamp): stream = decide at the stream's time (the latest "
        "event time seen; the arrival time before any), tagged dedup.time_invalid; arrival = decide with the "
        "arrival time, tagged; dead_letter = a dead letter of stage time")


class StateConfig(Frozen):
    """The RocksDB state: every indexed document's record and the input positions."""

    # by default it holds each indexed story's canonical text: protect it as the feed itself
    dir: str | None = setting(None, "RocksDB state directory; null = OUTPUT_DIR/state in file mode, ./state for Kafka")
    sync: bool = setting(True, "fsync each micro-batch's state commit (power-loss safe; SIGKILL-safe either way)")
    # exact character evidence compares a noisy copy with the earlier story's kept text
    keep_text: bool = setting(True, "keep each indexed story's canonical text in the state; false needs verify.revisions: off "
                               "(the state then holds fingerprints, ids and decisions, and exact evidence is estimated from "
                               "256-byte sketches of the texts; older records keep theirs)")


class Config(Frozen):
    fingerprint: FingerprintConfig = FingerprintConfig()
    verify: VerifyConfig = VerifyConfig()
    engine: EngineConfig = EngineConfig()
    input: InputConfig = InputConfig()
    state: StateConfig = StateConfig()
    kafka: KafkaConfig = KafkaConfig()

    @model_validator(mode="after")
    def _text_for_evidence(self) -> "Config":
        if not self.state.keep_text and self.verify.revisions != "off":
            raise ValueError("state.keep_text: false needs verify.revisions: off (a revision is told from a copy on "
                             "the earlier story's text, kept in the state)")
        if self.verify.revisions == "topic":
            _revisions_topic_alone(self.kafka)
        return self


def _revisions_topic_alone(k: KafkaConfig) -> None:
    """Under ``verify.revisions: topic`` the revisions topic is an output of its own: one shared
    with another topic of the processor would mix revisions into it (or feed them back in)."""
    others = [(t, "kafka.input_topics") for t in k.input_topics] + [
        (k.unique_topic, "kafka.unique_topic"), (k.duplicates_topic, "kafka.duplicates_topic"),
        (k.dead_letter_topic, "kafka.dead_letter_topic"), (k.staged.fingerprints_topic, "kafka.staged.fingerprints_topic"),
        (k.staged.decisions_topic, "kafka.staged.decisions_topic")]
    for topic, name in others:
        if topic == k.revisions_topic:
            raise ValueError(f"kafka.revisions_topic {topic!r} is also {name}: under verify.revisions: topic revisions "
                             f"go to a topic of their own (set kafka.revisions_topic to another topic, or verify.revisions "
                             f"to unique or duplicates)")


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
