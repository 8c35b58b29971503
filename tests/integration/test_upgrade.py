"""An upgrade on a real broker: the previous release's processor, installed from its own
checkout, stopped mid-stream (SIGTERM, as a rolling upgrade stops it), and this release started
on the same state directory and topics: nothing lost, nothing doubled, and every decision the
one an uninterrupted run of the release that made it makes."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from streamdedup.bench.feeds import news_records

from .kafka_helpers import (REPO, Topics, committed_offsets, consume_all, decisions, produce, run_processor,
                            stop_processors, wait_for)

#: the release upgraded from, and its commit (CHANGELOG.md names it: a clone without tags has it)
PREVIOUS = ("0.1.0", "af4ca13")


@pytest.fixture(autouse=True)
def _no_processor_left_running():
    yield
    stop_processors()


@pytest.fixture(scope="module")
def previous_release(tmp_path_factory) -> Path:
    """The previous release installed from its checkout in a virtualenv of its own, its kernels
    compiled: its ``streamdedup`` executable."""
    version, commit = PREVIOUS
    if subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO, capture_output=True).returncode:
        pytest.skip(f"this clone has no history back to {version} ({commit}): nothing to upgrade from")
    base = tmp_path_factory.mktemp(f"streamdedup-{version}")
    archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(base / "src", filter="data")
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True)
    subprocess.run([str(base / "venv/bin/python"), "-m", "pip", "install", "-q", str(base / "src")], check=True,
                   timeout=900)
    exe = base / "venv/bin/streamdedup"
    subprocess.run([str(exe), "warm-up"], check=True, capture_output=True, timeout=900, cwd=base)
    return exe


def _env(topics: Topics) -> dict:
    return topics.env(STREAMDEDUP_INPUT__TEXT_FIELDS="[title, text]", STREAMDEDUP_INPUT__MAX_RECORD_BYTES="100000",
                      STREAMDEDUP_ENGINE__MAX_DOCUMENTS="200000")


def _run_previous(exe: Path, topics: Topics, state: Path, cwd: Path) -> subprocess.Popen:
    # run outside the source tree: the previous release imports its own package only
    return subprocess.Popen([str(exe), "run", "--stop-when-idle", "5", "--state-dir", str(state)], env=_env(topics),
                            cwd=cwd)


def _committed(topics: Topics) -> int:
    return committed_offsets(topics.bootstrap, f"group-{topics.run_id}", topics.input)


def test_the_previous_release_stopped_mid_stream_is_continued_by_this_one(kafka_bootstrap, previous_release,
                                                                          tmp_path) -> None:
    n = 20_000
    records = news_records(n, seed=5)
    # one partition: decisions follow the input's order, so runs can be compared record by record
    old_ref, new_ref, upgraded = (Topics(kafka_bootstrap, partitions=1) for _ in range(3))
    for t in (old_ref, new_ref, upgraded):
        t.create()
        produce(kafka_bootstrap, t.input, records)

    assert _run_previous(previous_release, old_ref, tmp_path / "old-ref", tmp_path).wait(600) == 0
    assert run_processor(_env(new_ref), str(tmp_path / "new-ref"), stop_when_idle=5).wait(600) == 0

    state = tmp_path / "upgraded"
    first = _run_previous(previous_release, upgraded, state, tmp_path)
    wait_for(lambda: _committed(upgraded) >= n // 3, 300, f"the previous release committed {n // 3} records",
             proc=first)
    first.send_signal(signal.SIGTERM)
    assert first.wait(120) == 0
    switch = _committed(upgraded)
    assert n // 3 <= switch < n, switch
    assert run_processor(_env(upgraded), str(state), stop_when_idle=5).wait(600) == 0

    got = decisions(consume_all(kafka_bootstrap, list(upgraded.outputs.values()), n), upgraded.outputs)
    old = decisions(consume_all(kafka_bootstrap, list(old_ref.outputs.values()), n), old_ref.outputs)
    new = decisions(consume_all(kafka_bootstrap, list(new_ref.outputs.values()), n), new_ref.outputs)
    keys = [k for k, _ in records]
    assert len(got) == n and set(got) == set(keys), "records lost or emitted twice across the upgrade"
    before = [k for k in keys[:switch] if got[k] != old[k]]
    after = [k for k in keys[switch:] if got[k] != new[k]]
    print(f"switched after {switch} of {n}; the releases differ on {sum(old[k] != new[k] for k in keys)} records; "
          f"before the switch {len(before)} differ from the previous release's run, after it {len(after)} from this "
          f"release's")
    assert before == [], [(k, got[k], old[k]) for k in before[:10]]
    assert after == [], [(k, got[k], new[k], old[k]) for k in after[:10]]
