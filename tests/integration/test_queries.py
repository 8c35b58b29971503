"""A text-free deployment with queries, on the real broker.

A source fingerprints its stories itself (``TextFingerprinter``, no text) and sends the
records to the staged decider's fingerprints topic; the decider keeps no text. A second party
asks, with text-free query records, whether its stories are in the index. What must hold:
copies and parts of indexed stories are found with the right ids, new stories are not, a
bad record and a client past its rate get an error answer, queries are not decided or indexed,
and no phrase of any story is in any topic, the decider's state or its log.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streamdedup import load_config
from streamdedup.bench.feeds import news_records
from streamdedup.engine.deduplicator import Deduplicator
from streamdedup.pipeline.fingerprint_texts import TextFingerprinter
from streamdedup.pipeline.fingerprints import decide
from streamdedup.state import MemoryStore
from streamdedup.runtime.kafka.decision_record import decode
from tests.unit.test_engine import story

from .kafka_helpers import Topics, consume_all, finish, free_ports, produce, run_processor, stop_processors, wait_for
from .test_staged import Staged

#: a deployment without texts: exact evidence on (the default), estimated from the evidence sketches
TEXT_OFF = {"STREAMDEDUP_STATE__KEEP_TEXT": "false", "STREAMDEDUP_VERIFY__REVISIONS": "off",
            "STREAMDEDUP_INPUT__TEXT_FIELDS": "[title, text]"}


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


def _phrases(texts: list[str]) -> set[bytes]:
    out = set()
    for text in texts:
        words = re.findall(r"\w+", text)
        for k in range(0, max(0, len(words) - 3), 5):
            phrase = " ".join(words[k:k + 4])
            if len(phrase) >= 16:
                out.update({phrase.encode(), phrase.lower().encode()})
    return out


def _query_topics(t: Topics) -> tuple[str, str]:
    """The query and reply topics of a run, created: their names."""
    queries, answers = f"q-{t.run_id}", f"a-{t.run_id}"
    admin = AdminClient({"bootstrap.servers": t.bootstrap})
    for fut in admin.create_topics([NewTopic(queries, 1, 1), NewTopic(answers, 1, 1)], request_timeout=30).values():
        fut.result(60)
    return queries, answers


def test_a_text_free_index_answers_text_free_queries(kafka_bootstrap, tmp_path) -> None:
    t = Staged(kafka_bootstrap, partitions=1)
    t.create()
    queries, answers = _query_topics(t)
    env = {**t.staged_env(), **TEXT_OFF, "STREAMDEDUP_KAFKA__QUERIES__TOPIC": queries,
           "STREAMDEDUP_KAFKA__QUERIES__REPLY_TOPIC": answers, "STREAMDEDUP_KAFKA__QUERIES__RATE_PER_CLIENT": "1"}
    cfg = load_config(environ=env)
    stories = [orjson.loads(v) for _, v in news_records(400, seed=31, variant_every=10**9)]
    # the partner, with the command a user runs: its records name the input partition it read
    feed = tmp_path / "partner.jsonl"
    feed.write_bytes(b"\n".join(orjson.dumps(s) for s in stories) + b"\n")
    subprocess.run([sys.executable, "-m", "streamdedup.cli", "fingerprint", "--input", str(feed), "--source", t.input,
                    "--to-topic", t.fingerprints], env=env, check=True, capture_output=True)
    log = tmp_path / "decider.log"
    dec = run_processor(env, str(tmp_path / "decider"), 12.0, log, ("--topology", "staged", "--role", "decider"))
    # a query sees the index as it is when answered: ask once every story is decided
    decided = consume_all(kafka_bootstrap, [t.decisions], len(stories), timeout=180)
    assert len(decided) == len(stories)

    asker = TextFingerprinter(cfg, "asker")
    asked = []
    for k in range(40):  # copies with an edit, of stories 0..39
        words = stories[k]["text"].split()
        words[len(words) // 2] = "quite"
        asked.append((f"copy{k}", {**stories[k], "id": f"copy{k}", "text": " ".join(words)}))
    for k in range(40, 50):  # parts: the second half of the story
        words = stories[k]["text"].split()
        asked.append((f"part{k}", {"id": f"part{k}", "title": "", "text": " ".join(words[len(words) // 2:])}))
    fresh = [{"id": f"fresh{k}", "title": "", "text": story(9000 + k, 200)} for k in range(20)]  # another vocabulary
    asked += [(f"new{k}", {**s, "id": f"new{k}"}) for k, s in enumerate(fresh)]
    records = asker.records([orjson.dumps(q) for _, q in asked])
    p = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for k, ((key, _), r) in enumerate(zip(asked, records)):
        p.produce(queries, r, key.encode(), headers=[("client", b"agency-%d" % (k % 8))])
    p.produce(queries, b"\x04garbage", b"garbage", headers=[("client", b"agency-0")])
    for k in range(25):  # one client past its rate: ten at once, then one a second
        p.produce(queries, records[0], b"greedy-%d" % k, headers=[("client", b"greedy")])
    assert p.flush(30) == 0
    got = consume_all(kafka_bootstrap, [answers], len(asked) + 26, timeout=180)
    assert dec.wait(300) == 0
    reply = {k: orjson.loads(v) for _, k, v, _ in got}
    assert len(reply) == len(asked) + 26
    assert len(consume_all(kafka_bootstrap, [t.decisions], len(stories))) == len(stories), "queries are not decided"
    # the feed has a few copies of its own: a query may match the latest copy of its story
    root = {s["id"]: s["id"] for s in stories}
    for _, _, v, _ in decided:
        d = decode(v)
        if d.tags is not None:
            root[stories[d.offset]["id"]] = d.tags.duplicate_of
    for k in range(40):
        a = reply[b"copy%d" % k]
        assert a["found"] and root[a["matched"]] == root[stories[k]["id"]], a
        assert a["relation"] in ("near_duplicate", "exact"), a
    for k in range(40, 50):
        a = reply[b"part%d" % k]
        assert a["found"] and root[a["matched"]] == root[stories[k]["id"]] and a["relation"] == "contained_in", a
    assert not any(reply[b"new%d" % k]["found"] for k in range(20))
    assert reply[b"garbage"] == {"error": "the query (8 bytes) has an unknown kind"}
    refused = [reply[b"greedy-%d" % k] for k in range(25) if "error" in reply[b"greedy-%d" % k]]
    assert 10 <= len(refused) <= 15 and all("past its rate" in r["error"] for r in refused)

    phrases = _phrases([f"{s['title']} {s['text']}" for s in stories + fresh])
    leftovers = [v or b"" for _, _, v, _ in got + decided + consume_all(kafka_bootstrap, [t.fingerprints], len(stories) + 1)]
    files = [f.read_bytes() for f in Path(tmp_path / "decider").rglob("*") if f.is_file()] + [log.read_bytes()]
    blob = b"\n".join(leftovers + files)
    assert not [ph for ph in phrases if ph in blob]


def _text_run(env: dict, values: list[bytes]) -> list:
    """The decisions a deployment that keeps texts makes of ``values`` (in process: every
    topology decides alike), revisions counted as the copies a text-free run calls them."""
    cfg = load_config(environ={k: v for k, v in env.items() if k not in TEXT_OFF or k.startswith("STREAMDEDUP_INPUT")})
    assert cfg.state.keep_text and cfg.verify.exact_evidence
    engine = Deduplicator(cfg, MemoryStore())
    fp = TextFingerprinter(cfg, "partner", with_text=True)
    out = []
    for lo in range(0, len(values), 256):
        out += decide(engine, fp.codec.decode(fp.records(values[lo:lo + 256], lo))).decisions
    return out


def test_a_partners_fingerprints_decided_without_texts_as_a_text_run_decides_them(kafka_bootstrap, tmp_path) -> None:
    """A partner's text-free records through the broker to a decider that keeps no text: it
    links what a deployment with texts links, less what only texts tell (the benchmarks page
    measures 0.9957 -> 0.9930 recall on the standard suite), and nothing more, to the same
    stories; and no phrase of the feed is anywhere the run leaves."""
    t = Staged(kafka_bootstrap, partitions=1)
    t.create()
    env = {**t.staged_env(), **TEXT_OFF}
    values = [v for _, v in news_records(600, seed=43, variant_every=5)]
    feed = tmp_path / "partner.jsonl"
    feed.write_bytes(b"\n".join(values) + b"\n")
    subprocess.run([sys.executable, "-m", "streamdedup.cli", "fingerprint", "--input", str(feed), "--source", t.input,
                    "--to-topic", t.fingerprints], env=env, check=True, capture_output=True)
    log = tmp_path / "decider.log"
    dec = run_processor(env, str(tmp_path / "decider"), 8.0, log, ("--topology", "staged", "--role", "decider"))
    decided = consume_all(kafka_bootstrap, [t.decisions], len(values), timeout=180)
    assert dec.wait(300) == 0
    assert len(decided) == len(values)
    free = {}
    for _, _, v, _ in decided:
        d = decode(v)
        free[d.offset] = d.tags.duplicate_of if d.tags is not None else None
    assert sorted(free) == list(range(len(values)))
    with_text = _text_run(env, values)
    linked = {k: d.duplicate_of for k, d in enumerate(with_text) if d.status in ("duplicate", "revision")}
    assert 100 < len(linked) < len(values) // 2
    assert not [k for k, m in free.items() if m is not None and k not in linked], "a copy only the text-free run sees"
    lost = [k for k in linked if free[k] is None]
    assert len(lost) <= 0.03 * len(linked), lost
    same = sum(free[k] == m for k, m in linked.items() if free[k] is not None)
    assert same >= 0.97 * (len(linked) - len(lost))

    phrases = _phrases([f"{s['title']} {s['text']}" for s in map(orjson.loads, values)])
    leftovers = [v or b"" for _, _, v, _ in decided + consume_all(kafka_bootstrap, [t.fingerprints], len(values) + 1)]
    files = [f.read_bytes() for f in Path(tmp_path / "decider").rglob("*") if f.is_file()] + [log.read_bytes()]
    blob = b"\n".join(leftovers + files)
    assert len(phrases) > 1000 and not [ph for ph in phrases if ph in blob]


def test_the_single_processor_answers_queries_between_its_batches(kafka_bootstrap, tmp_path) -> None:
    """The processor keeps its texts and decides its own input; a partner's text-free queries
    are answered on the decide thread between batches, and change nothing it decides."""
    t = Topics(kafka_bootstrap, partitions=1)
    t.create()
    queries, answers = _query_topics(t)
    env = t.env(STREAMDEDUP_INPUT__TEXT_FIELDS="[title, text]", STREAMDEDUP_ENGINE__MAX_DOCUMENTS="200000",
                STREAMDEDUP_KAFKA__QUERIES__TOPIC=queries, STREAMDEDUP_KAFKA__QUERIES__REPLY_TOPIC=answers,
                STREAMDEDUP_KAFKA__QUERIES__REVEAL="yes_no")
    stories = [orjson.loads(v) for _, v in news_records(300, seed=37, variant_every=10**9)]
    produce(kafka_bootstrap, t.input, [(s["id"].encode(), orjson.dumps(s)) for s in stories])
    proc = run_processor(env, str(tmp_path / "state"), 10.0)
    out = consume_all(kafka_bootstrap, list(t.outputs.values()), len(stories), timeout=180)
    assert len(out) == len(stories)
    asker = TextFingerprinter(load_config(environ=env), "asker")
    asked = [{**s, "id": f"copy-{s['id']}"} for s in stories[:30]]
    asked += [{"id": f"fresh{k}", "title": "", "text": story(7000 + k, 200)} for k in range(10)]
    records = asker.records([orjson.dumps(q) for q in asked])
    produce(kafka_bootstrap, queries, [(q["id"].encode(), r) for q, r in zip(asked, records)])
    got = consume_all(kafka_bootstrap, [answers], len(asked), timeout=120)
    assert proc.wait(300) == 0
    reply = {k.decode(): orjson.loads(v) for _, k, v, _ in got}
    assert all(reply[f"copy-{s['id']}"] == {"id": f"copy-{s['id']}", "found": True} for s in stories[:30])
    assert all(reply[f"fresh{k}"] == {"id": f"fresh{k}", "found": False} for k in range(10))
    assert len(consume_all(kafka_bootstrap, list(t.outputs.values()), len(stories) + 1, timeout=10)) == len(stories)


def _post(url: str, body: bytes, headers: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, orjson.loads(body)
        except orjson.JSONDecodeError:  # the Host check answers in plain text
            return exc.code, {"text": body.decode(errors="replace")}


def _up(url: str) -> bool:
    try:
        return _post(url, b"", {})[0] == 401
    except urllib.error.URLError:
        return False


def test_queries_over_http_through_the_inspector(kafka_bootstrap, tmp_path) -> None:
    """A client posts what `streamdedup fingerprint` wrote to the inspector's /api/query with
    the bearer token; the inspector relays it to the query topic and returns the processor's
    answers. Without the token, or with a line that is not base64, or under a Host name the
    inspector was not started for, it is refused."""
    t = Topics(kafka_bootstrap, partitions=1)
    t.create()
    queries, answers = _query_topics(t)
    token = "t0ken-" + t.run_id
    env = t.env(STREAMDEDUP_INPUT__TEXT_FIELDS="[title, text]", STREAMDEDUP_ENGINE__MAX_DOCUMENTS="200000",
                STREAMDEDUP_KAFKA__QUERIES__TOPIC=queries, STREAMDEDUP_KAFKA__QUERIES__REPLY_TOPIC=answers,
                STREAMDEDUP_KAFKA__QUERIES__HTTP_TOKEN=token)
    stories = [orjson.loads(v) for _, v in news_records(200, seed=41, variant_every=10**9)]
    produce(kafka_bootstrap, t.input, [(s["id"].encode(), orjson.dumps(s)) for s in stories])
    proc = run_processor(env, str(tmp_path / "state"), 120.0)
    assert len(consume_all(kafka_bootstrap, list(t.outputs.values()), len(stories), timeout=180)) == len(stories)
    port = free_ports(1)[0]
    with open(tmp_path / "ui.log", "wb") as out:  # the child keeps its own copy of the descriptor
        ui = subprocess.Popen([sys.executable, "-m", "streamdedup.cli", "ui", "--port", str(port)], env=env,
                              stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/api/query"
        wait_for(lambda: _up(url), 120, "the inspector's /api/query", proc=ui, interval=0.5)
        feed = tmp_path / "ours.jsonl"
        asked = [{**s, "id": f"copy-{s['id']}"} for s in stories[:20]] + [{"id": "fresh", "title": "", "text": story(4242, 200)}]
        feed.write_bytes(b"\n".join(orjson.dumps(q) for q in asked) + b"\n")
        prints = subprocess.run([sys.executable, "-m", "streamdedup.cli", "fingerprint", "--input", str(feed)], env=env,
                                capture_output=True, check=True).stdout
        auth = {"Authorization": f"Bearer {token}", "X-Streamdedup-Client": "agency"}
        status, got = _post(url, prints, auth)
        assert status == 200, got
        assert [a["id"] for a in got["answers"]] == [q["id"] for q in asked]
        assert all(a["found"] and a["matched"] == s["id"] for a, s in zip(got["answers"], stories[:20]))
        assert got["answers"][-1] == {"id": "fresh", "found": False}
        assert _post(url, prints, {"Authorization": "Bearer wrong"})[0] == 401
        assert _post(url, b"not base64 !!\n", auth) == (400, {"error": "line 1 is not base64"})
        assert _post(url, prints, {**auth, "Host": "evil.example"})[0] == 400
    finally:
        ui.terminate()
        ui.wait(30)
    assert finish(proc) == 0
