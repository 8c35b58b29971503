"""Hostile event times: never an exception, never a window that
expires the whole index.

A time beyond 64 bits stopped every runtime with OverflowError; one far-future time expired
every document (the window follows the latest event time) and kept detection off after a
restart. A record decided with the wall clock instead moved the window ten days ahead in a
replay of ten-day-old input, and every resend after it came out unique. Now such a record is
decided at the stream's time (the latest event time seen) and tagged ``time_invalid``, or with
its arrival time, or is a dead letter of stage ``time``, by policy, on both decode paths alike.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from streamdedup import ConfigError, load_config
from streamdedup.text.decode import STREAM_TIME, Decoded, RecordDecoder, Rejected, stream_times
from streamdedup.runtime.filemode import run_file
from streamdedup.pipeline import Preparer
from streamdedup.pipeline.tags import parse_file_tags, parse_headers
from tests.unit.test_engine import story

from .test_kafka_delivery import TOPICS, broker, decisions, run

#: raw JSON values of ``ts``: beyond 64 bits, not finite after conversion, before 1970, far future, no time at all
HOSTILE = [b"1e30", b"-1e30", b"18446744073709551615", b"9.3e18", b"999999999999999999", b"-1", b"1e308",
           b'"9999-12-31T23:59:59Z"', b'"0001-01-01T00:00:00+01:00"', b'"1969-12-31T23:59:59Z"', b'"soon"', b"true",
           b'{"at": 5}']
NOW = 1_700_000_000_000


def _env(**extra: str) -> dict:
    return {"STREAMDEDUP_INPUT__TIME_FIELD": "ts", **extra}


def _record(ts: bytes, k: int = 0) -> bytes:
    return b'{"id":"r%d","text":"a plain story about the harbour","ts":%s}' % (k, ts)


@pytest.mark.parametrize("ts", HOSTILE)
def test_the_decoder_leaves_the_time_to_the_stream_and_says_why(ts) -> None:
    cfg = load_config(environ=_env())
    res = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)(_record(ts), "f", NOW)
    assert isinstance(res, Decoded) and res.event_time_ms == STREAM_TIME
    assert res.time_invalid.startswith("ts ") and "the stream's time" in res.time_invalid
    cfg = load_config(environ=_env(STREAMDEDUP_INPUT__INVALID_TIME="arrival"))
    res = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)(_record(ts), "f", NOW)
    assert isinstance(res, Decoded) and res.event_time_ms == NOW and "arrival time" in res.time_invalid


def _stream_times_reference(times: list[int], watermark: int, wall: int) -> list[int]:
    out, seen = [], watermark
    for t in times:
        if t == STREAM_TIME:
            out.append(seen if seen > -(2 ** 62) else wall)
        else:
            seen = max(seen, t)
            out.append(t)
    return out


@pytest.mark.parametrize("watermark", [-(2 ** 62), 500, 5_000])
def test_stream_times_are_the_latest_time_seen_before(watermark) -> None:
    times = [STREAM_TIME, 1_000, 3_000, STREAM_TIME, 2_000, STREAM_TIME, 4_000, STREAM_TIME]
    got = stream_times(np.array(times, np.int64), watermark).tolist()
    wall = got[0] if watermark == -(2 ** 62) else 0
    assert got == _stream_times_reference(times, watermark, wall)
    if watermark == -(2 ** 62):
        assert abs(got[0] - int(time.time() * 1000)) < 60_000  # nothing seen yet: the wall clock
    assert stream_times(np.array([1, 2], np.int64), watermark).tolist() == [1, 2]


@pytest.mark.parametrize("ts", HOSTILE)
def test_the_dead_letter_policy_names_stage_time(ts) -> None:
    cfg = load_config(environ=_env(STREAMDEDUP_INPUT__INVALID_TIME="dead_letter"))
    res = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)(_record(ts), "f", NOW)
    assert isinstance(res, Rejected) and res.stage == "time" and res.reason.startswith("ts ")


def test_usable_times_are_kept() -> None:
    cfg = load_config(environ=_env())
    decode = RecordDecoder(cfg.input, cfg.fingerprint.max_text_bytes)
    for ts, want in ((b"0", 0), (b"1700000000000", 1_700_000_000_000), (b'"2023-11-14T22:13:20Z"', 1_700_000_000_000)):
        res = decode(_record(ts), "f", NOW)
        assert res.event_time_ms == want and res.time_invalid is None


def test_both_decode_paths_give_every_record_an_int64_time() -> None:
    """The batch step that raised OverflowError: a scan of fast and slow records, gathered."""
    cfg = load_config(environ=_env())
    prep = Preparer(cfg)
    values = [_record(ts, k) for k, ts in enumerate([b"1700000000000", *HOSTILE])]
    data, scan = prep.scan_values(values)
    assert int(scan.status[0]) == 0 and all(int(s) == 1 for s in scan.status[1:])  # only the usable one is fast
    p = prep.prepare(data, scan, 0, len(values), str, NOW)
    assert not p.dead
    ids, _, times = p.gather()
    assert times.dtype == np.int64 and times.tolist() == [1_700_000_000_000] + [STREAM_TIME] * len(HOSTILE)


@pytest.mark.parametrize("value", ["0", "-1", "87601", "soon"])
def test_the_skew_setting_is_validated_by_name(value) -> None:
    with pytest.raises(ConfigError, match="max_future_skew_hours"):
        load_config(environ=_env(STREAMDEDUP_INPUT__MAX_FUTURE_SKEW_HOURS=value))


def _recent() -> int:
    """An hour ago: a record decided with its arrival time stays inside the stories' window."""
    return int(time.time() * 1000) - 3_600_000


def _stories(n: int, k0: int = 0) -> list[bytes]:
    return [orjson.dumps({"id": f"s{k0 + k}", "text": story(3000 + k), "ts": _recent() + k}) for k in range(n)]


def _resends(n: int, tag: str) -> list[bytes]:
    return [orjson.dumps({"id": f"{tag}{k}", "text": story(3000 + k), "ts": _recent() + 60_000 + k}) for k in range(n)]


def _read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_file_mode_a_far_future_time_neither_stops_nor_blinds_detection(tmp_path) -> None:
    far = orjson.dumps({"id": "far", "text": story(9999), "ts": "9999-12-31T23:59:59Z"})
    huge = b'{"id":"huge","text":"' + story(9998).encode() + b'","ts":1e30}'
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(_stories(60) + [far, huge] + _resends(60, "a")) + b"\n")
    cfg = load_config(environ=_env(STREAMDEDUP_ENGINE__BATCH_SIZE="16"))
    s = run_file(cfg, str(inp), str(tmp_path / "out"))
    assert s.reconciles() and s.dead_letter == 0
    dups = _read(tmp_path / "out" / "duplicates.jsonl")
    assert len(dups) == 60
    unique = {d["id"]: d for d in _read(tmp_path / "out" / "unique.jsonl")}
    for rid in ("far", "huge"):
        assert parse_file_tags(unique[rid]).time_invalid.startswith("ts ")
    assert parse_file_tags(unique["s0"]).time_invalid is None
    # the state remembers no far-future time: a second run on more resends still finds them
    more = tmp_path / "more.jsonl"
    more.write_bytes(b"\n".join(_resends(30, "b")) + b"\n")
    s2 = run_file(cfg, str(more), str(tmp_path / "out"))
    assert s2.duplicates == 30


def test_kafka_a_time_beyond_64_bits_in_the_last_batch_is_decided_and_tagged(tmp_path) -> None:
    values = _stories(40) + [b'{"id":"huge","text":"' + story(9998).encode() + b'","ts":1e30}'] + _resends(40, "a")
    b = broker([(f"k{i}".encode(), v) for i, v in enumerate(values)])
    s = run(b, str(tmp_path / "s"), STREAMDEDUP_INPUT__TIME_FIELD="ts")
    assert s.reconciles() and s.records == len(values) and s.duplicates == 40 and s.dead_letter == 0
    got = {k: parse_headers(h) for _, k, _, h in b.read_committed(list(TOPICS.values()))}
    assert got[b"k40"].status == "unique" and got[b"k40"].time_invalid.startswith("ts 1e+30")
    assert got[b"k0"].time_invalid is None and len(decisions(b)) == len(values)


def test_kafka_a_producer_timestamp_far_in_the_future_does_not_blind_detection(tmp_path) -> None:
    """Without ``input.time_field`` the message timestamp is the event time, and a producer sets
    it: one in the year 9999 (or before 1970) is replaced by the arrival time like a record's own
    invalid time, so it does not expire the window (before: the resends after it came out unique)."""
    values = _stories(40) + [b'{"id":"far","text":"' + story(9997).encode() + b'"}'] + _resends(40, "a")
    b = broker([(f"k{i}".encode(), v) for i, v in enumerate(values)])
    log = b.logs[("in", 0)]
    for k, rec in enumerate(log):
        rec.ts = _recent() + k  # as a producer stamps them
    log[40].ts = 253_402_300_799_000  # 9999-12-31
    log[41].ts = -5
    s = run(b, str(tmp_path / "s"))
    assert s.reconciles() and s.duplicates == 40, s
    b.append("in", [(f"m{i}".encode(), v) for i, v in enumerate(_resends(20, "b"))])
    for rec in log[81:]:
        rec.ts = _recent()
    assert run(b, str(tmp_path / "s")).duplicates == 20  # after a restart too


@pytest.mark.parametrize("policy", ["stream", "arrival"])
def test_prepare_replaces_unusable_default_times(policy) -> None:
    cfg = load_config(environ={"STREAMDEDUP_INPUT__INVALID_TIME": policy})
    prep = Preparer(cfg)
    values = [_record(b"0", k).replace(b',"ts":0', b"") for k in range(4)]
    data, scan = prep.scan_values(values)
    now = int(time.time() * 1000)
    times = np.array([NOW, 2**62, -1, now + 3_600_000], np.int64)
    _, _, got = prep.prepare(data, scan, 0, 4, str, times).gather()
    assert got[0] == NOW and got[3] == now + 3_600_000  # within the skew (24 h) is kept
    if policy == "stream":
        assert got[1:3].tolist() == [STREAM_TIME, STREAM_TIME]  # the engine puts the stream's time there
    else:
        assert all(now <= t <= int(time.time() * 1000) for t in got[1:3].tolist())


def _replay(bad: bytes, n: int = 200) -> list[bytes]:
    """The replay of ten-day-old input: stories, one record with an unusable time, the stories again."""
    old = int(time.time() * 1000) - 10 * 86_400_000
    out = [orjson.dumps({"id": f"s{k}", "text": story(4000 + k), "ts": old + k * 1000}) for k in range(n)]
    out.append(b'{"id":"bad","text":"' + story(3999).encode() + b'","ts":' + bad + b"}")
    return out + [orjson.dumps({"id": f"r{k}", "text": story(4000 + k), "ts": old + 600_000 + k}) for k in range(n)]


@pytest.mark.parametrize("ts", HOSTILE)
def test_file_mode_a_replay_of_old_input_goes_on_detecting_past_a_bad_time(ts, tmp_path) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b"\n".join(_replay(ts, 60)) + b"\n")
    s = run_file(load_config(environ=_env(STREAMDEDUP_ENGINE__BATCH_SIZE="16")), str(inp), str(tmp_path / "out"))
    assert s.reconciles() and s.duplicates == 60, s
    bad = {d["id"]: d for d in _read(tmp_path / "out" / "unique.jsonl")}["bad"]
    assert "the stream's time" in parse_file_tags(bad).time_invalid


def test_kafka_a_replay_of_old_input_goes_on_detecting_past_a_bad_time_or_timestamp(tmp_path) -> None:
    """The processor on the same replay, with a record's own bad time, and (without
    ``input.time_field``) with a producer's bad message timestamp."""
    values = _replay(b"1e30", 40)
    b = broker([(f"k{i}".encode(), v) for i, v in enumerate(values)])
    s = run(b, str(tmp_path / "s"), STREAMDEDUP_INPUT__TIME_FIELD="ts")
    assert s.reconciles() and s.duplicates == 40, s
    old = int(time.time() * 1000) - 10 * 86_400_000
    b2 = broker([(f"k{i}".encode(), v) for i, v in enumerate(values)])
    log = b2.logs[("in", 0)]
    for k, rec in enumerate(log):
        rec.ts = old + k * 1000
    log[40].ts = -5
    s2 = run(b2, str(tmp_path / "s2"))
    assert s2.reconciles() and s2.duplicates == 40, s2
