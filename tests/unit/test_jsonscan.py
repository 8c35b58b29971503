"""The JSON-lines fast path against orjson and the Python decoder, on generated and broken lines."""

from __future__ import annotations

import json
import random

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdedup import load_config
from streamdedup.text.canonical import _might_be_html, prepare_batch
from streamdedup.text.decode import Decoded, RecordDecoder
from streamdedup.text.scan import BLANK, FAST, LineScanner, gather_documents

CFG = load_config(environ={"STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]", "STREAMDEDUP_INPUT__TIME_FIELD": "ts",
                           "STREAMDEDUP_INPUT__MAX_RECORD_BYTES": "400", "STREAMDEDUP_FINGERPRINT__MAX_TEXT_BYTES": "120"})
DECODER = RecordDecoder(CFG.input, CFG.fingerprint.max_text_bytes)
SCANNER = LineScanner(CFG.input, CFG.fingerprint.max_text_bytes, CFG.fingerprint.canonical.strip_html)

strings = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.text(alphabet=st.sampled_from(list('ab "\\/\n\t\r\x08\x0c<>&!brBR\x1c é\u2028\U0001f600')), max_size=12),
    st.sampled_from(["", " ", "\n\t", "\x1c", "<br>", "a&b", "</p>", "<IBM>", "x" * 130]),
)
scalars = st.one_of(strings, st.integers(-10**20, 10**20), st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
                    st.none())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(strings, inner, max_size=3)),
                      max_leaves=6)
keys = st.sampled_from(["id", "text", "title", "ts", "_dedup", "x", "Id", "text "])
objects = st.dictionaries(keys, values, max_size=6)


def _serialise(obj, style: int) -> bytes:
    if style == 0:
        try:
            return orjson.dumps(obj)
        except TypeError:  # integers beyond 64 bits: json writes them
            return json.dumps(obj).encode()
    if style == 1:
        return json.dumps(obj).encode()  # ensure_ascii: \u escapes
    return json.dumps(obj, ensure_ascii=False, separators=(" , ", " : ")).encode()


def _check(line: bytes) -> str:
    buf = np.frombuffer(line + b"\n", dtype=np.uint8)
    s, _ = SCANNER.scan(buf, final=True)
    assert s.n == 1
    status = int(s.status[0])
    if status == BLANK:
        assert not line or line.isspace()
        return "blank"
    assert line and not line.isspace()
    res = DECODER(line, "fallback", 7)
    if status == FAST:
        assert isinstance(res, Decoded), (line, res)
        assert bytes(buf[s.id_lo[0]:s.id_hi[0]]).decode() == res.id
        text = bytes(s.text_buf[s.text_off[0]:s.text_off[1]]).decode()
        assert text == res.text and "&" not in text and not _might_be_html(text)
        assert (res.event_time_ms if s.times[0] >= 0 else 7) == res.event_time_ms
        assert s.times[0] == -1 or s.times[0] == res.event_time_ms
        assert line.rstrip()[-1:] == b"}" and s.close_at[0] == len(line.rstrip()) - 1
        assert "_dedup" not in res.obj and res.time_invalid is None
        return "fast"
    return "slow"


@settings(max_examples=3000, deadline=None)
@given(objects, st.integers(0, 2))
def test_fast_lines_decode_exactly_as_the_python_decoder(obj, style) -> None:
    _check(_serialise(obj, style))


def test_mutated_lines_are_never_wrongly_fast() -> None:
    rng = random.Random(4)
    base = [b'{"id": "a1", "title": "T", "text": "Hello \\"world\\"\\n again", "ts": 1700000000000, "x": [1, {"y": null}]}',
            b'{"id":"b","text":"plain story text here"}', b'  {"text": "t", "id": "z"}  ']
    outcomes = {"fast": 0, "slow": 0, "blank": 0}
    for _ in range(20000):
        line = bytearray(rng.choice(base))
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            pos = rng.randrange(len(line) + 1)
            if op < 0.4 and line:
                del line[min(pos, len(line) - 1)]
            elif op < 0.8:
                line.insert(pos, rng.choice(b'{}[]",:\\ \t\r0123456789-.eEtrufalsn\x00\x1f\x7f\xc3\xa9x'))
            elif line:
                line[min(pos, len(line) - 1)] = rng.randrange(256)
        outcomes[_check(bytes(line).replace(b"\n", b" "))] += 1
    assert outcomes["fast"] > 1000 and outcomes["slow"] > 1000


def test_edge_cases() -> None:
    cases = {
        b'{"id":"a","text":"ok story"}': "fast",
        b'{"id":"a","text":"ok story","_dedup":1}': "slow",
        b'{"id":"a","text":"x","text":"y"}': "slow",  # repeated field: orjson keeps the last
        b'{"id":7,"text":"ok"}': "slow",
        b'{"text":"ok"}': "slow",  # no id: the fallback id is made in Python
        b'{"id":"a","text":"   "}': "slow",
        b'{"id":"a","text":"\\u0041 story\\u0003"}': "fast",
        b'{"id":"a","text":"\\u00e9t\\u00e9"}': "slow",
        b'{"id":"a","text":"x","y":"\\ud800"}': "slow",
        b'{"id":"a","text":"x\\u00"}': "slow",
        b'{"id":"a","text":"AT&T"}': "slow",
        b'{"id":"a","text":"<IBM> up"}': "fast",
        b'{"id":"a","text":"a<br>b"}': "slow",
        b'{"id":"a","text":"a<\\/p>b"}': "slow",
        b'{"id":"a","title":"x <","text":"/p> y"}': "slow",  # joined: "x <\n/p> y" keeps a tag-like "<"? no, but the end "<" is left to Python
        b'{"id":"a","text":"x \\u003cbr>"}': "slow",
        b'{"id":"a","text":"ok","ts":"2024-01-01"}': "slow",
        b'{"id":"a","text":"ok","ts":1.5}': "slow",
        # event times the decoder does not use: never fast, whatever their form
        b'{"id":"a","text":"ok","ts":1700000000000}': "fast",
        b'{"id":"a","text":"ok","ts":999999999999999999}': "slow",  # 18 digits: parsed, too far in the future
        b'{"id":"a","text":"ok","ts":18446744073709551615}': "slow",
        b'{"id":"a","text":"ok","ts":1e30}': "slow",
        b'{"id":"a","text":"ok","ts":-1e30}': "slow",
        b'{"id":"a","text":"ok","ts":9.3e18}': "slow",
        b'{"id":"a","text":"ok","ts":-1}': "slow",
        b'{"id":"a","text":"ok","ts":"9999-12-31T23:59:59Z"}': "slow",
        b'{"id":"a","text":"ok","n":1e5}': "slow",
        b'{"id":"a","text":"ok"} x': "slow",
        b'{"id":"a","text":"ok"}\x0c': "slow",
        b'[{"id":"a","text":"ok"}]': "slow",
        b'': "blank",
        b'  \t': "blank",
        b'{"id":"a","title":null,"text":"ok","ts":null}': "fast",
        b'{"id":"a","text":"ok","deep":' + b"[" * 200 + b"]" * 200 + b"}": "slow",
        b'{"id":"a","text":"ok","deep":' + b"[" * 20 + b"]" * 20 + b"}": "fast",
    }
    for line, want in cases.items():
        assert _check(line) == want, line


def test_chunks_split_lines_like_the_file_reader() -> None:
    data = b'{"id":"a","text":"one"}\r\n\n{"id":"b","text":"two"}\n{"id":"c","text":"th'
    s, rest = SCANNER.scan(np.frombuffer(data, np.uint8), final=False)
    assert s.n == 3 and data[rest:] == b'{"id":"c","text":"th'
    assert [int(x) for x in s.status] == [FAST, BLANK, FAST]
    assert data[s.starts[0]:s.ends[0]] == b'{"id":"a","text":"one"}'  # CR dropped
    s, rest = SCANNER.scan(np.frombuffer(b'{"id":"c","text":"three"}\r', np.uint8), final=True)
    assert s.n == 1 and rest == 26 and int(s.status[0]) == FAST


def test_gathered_texts_are_each_documents_own_when_records_are_skipped() -> None:
    # Kafka leaves replayed records out of the engine's documents: a fast record between two
    # documents has its text in the scan buffer, which must not join the one before it
    values = [orjson.dumps({"id": i, "text": t}) for i, t in (("a", "alpha story"), ("r", "replayed"), ("b", "beta"))]
    data, s = SCANNER.scan_records(values)
    assert [int(x) for x in s.status] == [FAST, FAST, FAST]
    canonical = CFG.fingerprint.canonical
    for docs in ([0, 2], [0, 1, 2], [1, 2], [0, 1]):
        ids, texts, _ = gather_documents(data, s, np.array(docs, np.int64), {}, canonical, 0)
        got = [texts.raw[texts.offsets[j]:texts.offsets[j + 1]].tobytes() for j in range(len(docs))]
        want = [prepare_batch([orjson.loads(values[k])["text"]], canonical)[0].tobytes() for k in docs]
        assert got == want, docs
        assert [ids[j] for j in range(len(docs))] == [orjson.loads(values[k])["id"] for k in docs]
