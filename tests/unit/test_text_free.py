"""Text-free fingerprints (``streamdedup fingerprint``): records that leave no text behind,
decided by a decider that keeps none to the same decisions as the records with their texts,
refused by a decider that keeps texts, and named when made with other settings."""

from __future__ import annotations

import base64
import re

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

from streamdedup import load_config
from streamdedup.bench.feeds import mixed_records
from streamdedup.cli import main
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.pipeline.fingerprint_texts import TextFingerprinter
from streamdedup.pipeline.fingerprints import KIND_DEAD, KIND_FINGERPRINT, KIND_PARAMS, decide
from streamdedup.state import MemoryStore

TEXT_OFF = {"STREAMDEDUP_STATE__KEEP_TEXT": "false", "STREAMDEDUP_VERIFY__REVISIONS": "off"}
NOW = 1_700_000_000_000


def _feed(n: int = 1500) -> list[bytes]:
    values = [v for _, v in mixed_records(n, duplicate_share=0.3, seed=23)]
    values.insert(40, b"not json")
    values.insert(700, b'{"id": "no text"}')
    return values


def _phrases(values: list[bytes]) -> set[bytes]:
    """Four-word runs of every text, as they appear in the input and lower-cased (the canonical form)."""
    out = set()
    for v in values:
        try:
            words = re.findall(r"\w+", orjson.loads(v)["text"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            continue
        for k in range(0, max(0, len(words) - 3), 7):
            phrase = " ".join(words[k:k + 4])
            if len(phrase) >= 16:
                out.update({phrase.encode(), phrase.lower().encode()})
    return out


def _decided(cfg, records: list[bytes]) -> list:
    engine = Deduplicator(cfg, MemoryStore())
    out = []
    for lo in range(0, len(records), 256):
        dec = engine_codec(cfg).decode(records[lo:lo + 256])
        out += list(decide(engine, dec).decisions)
    return out


_CODECS: dict = {}


def engine_codec(cfg):
    key = id(cfg)
    if key not in _CODECS:
        _CODECS[key] = TextFingerprinter(cfg).codec
    return _CODECS[key]


@pytest.mark.parametrize("exact", ["true", "false"])
def test_text_free_records_carry_no_phrase_of_their_input_and_decide_as_records_with_text(exact: str) -> None:
    """Exact evidence on, the text-free records' sketches answer as the sketches the decider
    makes of the texts records with text carry: the same decisions either way."""
    cfg = load_config(environ={**TEXT_OFF, "STREAMDEDUP_VERIFY__EXACT_EVIDENCE": exact})
    values = _feed()
    free = TextFingerprinter(cfg, "partner-a").records(values, 0, NOW)
    full = TextFingerprinter(cfg, "partner-a", with_text=True).records(values, 0, NOW)
    assert len(free) == len(full) == len(values)
    assert [r[1] for r in free].count(KIND_DEAD) == 2 and free[40][1] == KIND_DEAD
    phrases = _phrases(values)
    assert len(phrases) > 1000
    blob = b"\n".join(free)
    assert not [p for p in phrases if p in blob]
    assert [p for p in phrases if p in b"\n".join(full)], "the check finds texts where they are"
    saved = sum(len(a) - len(b) for a, b in zip(full, free))
    assert saved > 0.4 * sum(map(len, full))  # measured 0.47: the text out, its 256-byte sketches in
    assert [str(d) for d in _decided(cfg, free)] == [str(d) for d in _decided(cfg, full)]
    dups = sum(d.status == "duplicate" for d in _decided(cfg, free))
    assert dups > 300


def test_a_decider_that_keeps_texts_refuses_text_free_records_naming_the_settings() -> None:
    cfg = load_config()
    engine = Deduplicator(cfg, MemoryStore())
    fp = TextFingerprinter(cfg)
    with pytest.raises(IncompatibleFingerprintError, match="carries no text.*state.keep_text: false"):
        decide(engine, fp.codec.decode(fp.records(_feed(20), 0, NOW)))
    assert engine.indexed_documents == 0


def test_records_made_with_other_settings_are_refused_naming_them() -> None:
    theirs = TextFingerprinter(load_config(environ={**TEXT_OFF, "STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM": "64"}))
    ours = TextFingerprinter(load_config(environ=TEXT_OFF))
    with pytest.raises(IncompatibleFingerprintError, match="num_perm"):
        ours.codec.decode([theirs.announcement(), *theirs.records(_feed(5), 0, NOW)])


def test_the_command_writes_the_announcement_then_one_record_per_line(tmp_path) -> None:
    values = _feed(300)
    inp = tmp_path / "feed.jsonl"
    inp.write_bytes(b"\n".join(values) + b"\n")
    out = tmp_path / "prints.b64"
    res = CliRunner().invoke(main, ["fingerprint", "--input", str(inp), "--output", str(out)], env=TEXT_OFF)
    assert res.exit_code == 0, res.output
    assert f"{len(values)} records: {len(values) - 2} fingerprints, 2 dead letters (without text)" in res.output
    records = [base64.b64decode(line) for line in out.read_bytes().splitlines()]
    assert len(records) == len(values) + 1 and records[0][1] == KIND_PARAMS
    dec = engine_codec(load_config(environ=TEXT_OFF)).decode(records)
    assert dec.kinds[1:].tolist().count(KIND_FINGERPRINT) == len(values) - 2 and dec.no_text.all()
    assert {dec.source_of(k)[0].topic for k in range(1, len(records))} == {"feed.jsonl"}
    assert [dec.source_of(k)[1] for k in range(1, len(records))] == list(range(len(values)))
    written = b"\n".join(base64.b64decode(line) for line in out.read_bytes().splitlines())
    assert not [p for p in _phrases(values) if p in written]
    res = CliRunner().invoke(main, ["fingerprint", "--input", str(inp), "--with-text"], env=TEXT_OFF)
    assert res.exit_code == 0
    lines = res.stdout_bytes.splitlines()
    assert len(lines) == len(values) + 1
    assert not engine_codec(load_config(environ=TEXT_OFF)).decode([base64.b64decode(x) for x in lines]).no_text.any()
    assert np.all(np.array([len(base64.b64decode(x)) for x in lines[1:]]) >=
                  np.array([len(r) for r in records[1:]]))


def test_records_a_broker_does_not_take_fail_the_command_with_one_line(tmp_path) -> None:
    """No broker at the address: every record's delivery fails within the client's message
    timeout, and the command says how many were not delivered, where, and why, and exits 1."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    values = _feed(30)
    inp = tmp_path / "feed.jsonl"
    inp.write_bytes(b"\n".join(values) + b"\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("kafka:\n  librdkafka:\n    message.timeout.ms: 2000\n")
    res = CliRunner().invoke(main, ["fingerprint", "--config", str(cfg), "--input", str(inp), "--to-topic", "prints",
                                    "--bootstrap-servers", f"127.0.0.1:{port}"], env=TEXT_OFF)
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "records not delivered to prints" in errors[0], res.output
    assert errors[0].startswith(f"Error: {len(values) + 1} records"), errors[0]  # the announcement too
