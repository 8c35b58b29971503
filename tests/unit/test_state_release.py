"""A state names the release that wrote it; a release refuses a state it cannot continue with a
message naming both releases and their formats, and what to do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streamdedup import __version__
from streamdedup._kernels.records import ENGINE_VERSION
from streamdedup.engine.checkpoint import META_VERSION, StateMeta
from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.state.rocks import _META, RocksStore

ROOT = Path(__file__).resolve().parents[2]


def test_the_metadata_names_the_release_and_its_formats() -> None:
    m = json.loads(StateMeta(7, next_seq=3).dumps())
    assert (m["version"], m["release"], m["records"]) == (META_VERSION, __version__, ENGINE_VERSION)
    assert StateMeta.loads(StateMeta(7, next_seq=3).dumps()) == StateMeta(7, next_seq=3)


def _refusal(**fields) -> str:
    m = json.loads(StateMeta(7).dumps())
    m.update(fields)
    with pytest.raises(IncompatibleFingerprintError) as e:
        StateMeta.loads(json.dumps(m).encode())
    return str(e.value)


def test_a_state_of_a_newer_release_is_refused_naming_both_releases() -> None:
    msg = _refusal(version=META_VERSION + 1, release="9.9.0")
    assert "streamdedup 9.9.0" in msg and f"state metadata v{META_VERSION + 1}" in msg
    assert f"streamdedup {__version__} reads state metadata v{META_VERSION}" in msg
    assert "run the release that wrote it" in msg
    # newer records under the same metadata format are refused too, before any record is read
    msg = _refusal(records=ENGINE_VERSION + 1, release="9.9.0")
    assert "streamdedup 9.9.0" in msg and f"state records v{ENGINE_VERSION + 1}" in msg


def test_a_state_of_an_older_format_is_refused_with_what_to_do() -> None:
    m = json.loads(StateMeta(7).dumps())
    for key in ("release", "records"):
        del m[key]  # as releases before these fields wrote it
    m["version"] = META_VERSION - 1
    with pytest.raises(IncompatibleFingerprintError) as e:
        StateMeta.loads(json.dumps(m).encode())
    msg = str(e.value)
    assert "an older streamdedup release" in msg and f"state metadata v{META_VERSION - 1}" in msg
    assert __version__ in msg and "--rebuild-from-input" in msg
    # metadata of this format without the new fields (what 0.1.0 wrote) is read as before
    m["version"] = META_VERSION
    assert StateMeta.loads(json.dumps(m).encode()).params_key == 7


def test_run_refuses_a_state_a_newer_release_wrote(tmp_path: Path) -> None:
    feed = tmp_path / "in.jsonl"
    feed.write_bytes(b"".join(orjson.dumps({"id": f"s{k}", "text": f"story number {k} about grain exports"}) + b"\n"
                              for k in range(5)))
    state = tmp_path / "state"

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streamdedup.cli", "run", "--input", str(feed), "--output-dir",
                               str(tmp_path / "out"), "--state-dir", str(state)], capture_output=True, text=True,
                              timeout=300, cwd=ROOT)

    first = run()
    assert first.returncode == 0, first.stderr
    store = RocksStore(str(state))
    try:
        m = json.loads(store.get_meta())
        m.update(version=META_VERSION + 1, release="9.9.0")
        store._meta[_META] = json.dumps(m).encode()  # as a newer release would have left it
    finally:
        store.close()
    again = run()
    assert again.returncode != 0
    assert "streamdedup 9.9.0" in again.stderr and f"streamdedup {__version__}" in again.stderr, again.stderr
