"""The command line's contract: a missing extra or a StreamdedupError is one line and exit code 1;
a command that compiles Numba kernels says so once, when it starts compiling (not for a refusal,
not when the kernels are cached); ``warm-up`` leaves every kernel of the pipeline cached."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import streamdedup.cli as cli_package
from streamdedup._kernels import cache
from streamdedup.cli import COMPILE_NOTICE, main
from streamdedup.errors import IncompatibleFingerprintError

ROOT = Path(__file__).resolve().parents[2]


def _invoke(args: list[str]):
    return CliRunner().invoke(main, args, prog_name="streamdedup")


@pytest.fixture
def kernels_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """No compile notice and no compiling processes in the tests that are not about them (a
    kernel the cache lacks compiles in this process, quietly)."""
    monkeypatch.setattr(cache, "missing_kernels", lambda names=cache.PIPELINE_KERNELS: [])
    monkeypatch.setattr(cli_package, "on_first_compile", lambda callback: (lambda: None))


@pytest.fixture
def texts(tmp_path: Path) -> tuple[str, str]:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("the central bank left interest rates unchanged at its monthly meeting")
    b.write_text("the central bank left rates unchanged at its meeting on tuesday")
    return str(a), str(b)


@pytest.mark.parametrize(("args", "module", "extra"), [
    (["tune", "--threshold", "0.45", "--plot", "{tmp}/s.png"], "matplotlib", "tools"),
    (["tune", "--replay", "{a}", "--set", "verify.jaccard_threshold=0.5", "--plot", "{tmp}/s.png"], "matplotlib", "tools"),
    (["explain", "{a}", "{b}"], "rapidfuzz", "tools"),
    (["bench", "fingerprint"], "datasketch", "bench"),
    (["bench", "fingerprint"], "rensa", "bench"),
    (["bench", "estimates"], "rapidfuzz", "bench"),
    (["bench", "accuracy"], "datasketch", "bench"),
    (["bench", "accuracy", "--suite", "hard", "--no-datasketch"], "rapidfuzz", "bench"),
    (["bench", "engine"], "datasketch", "bench"),
    (["ui", "--dir", "{tmp}"], "starlette", "ui"),
    (["ui", "--dir", "{tmp}"], "jinja2", "ui"),
    (["ui", "--dir", "{tmp}"], "uvicorn", "ui"),
])
def test_a_missing_extra_is_one_line_naming_it(args, module, extra, monkeypatch, tmp_path, texts) -> None:
    # `import module` (and of any submodule an earlier test loaded) now raises ImportError
    for name in {module, *(m for m in sys.modules if m.startswith(module + "."))}:
        monkeypatch.setitem(sys.modules, name, None)
    result = _invoke([a.format(tmp=tmp_path, a=texts[0], b=texts[1]) for a in args])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"pip install 'streamdedup[{extra}]'" in lines[0] and module in lines[0]
    assert not (tmp_path / "s.png").exists()


def test_bench_accuracy_without_its_baseline_needs_no_extra(monkeypatch, kernels_cached) -> None:
    """``--no-datasketch`` skips the one baseline ``bench accuracy`` needs, so it is not required."""
    import streamdedup.bench.accuracy as accuracy

    monkeypatch.setitem(sys.modules, "datasketch", None)
    monkeypatch.setattr(accuracy, "run", lambda cfg, with_datasketch, **kw: {"with_datasketch": with_datasketch})
    result = _invoke(["bench", "accuracy", "--no-datasketch", "--json"])
    assert result.exit_code == 0, result.output
    assert '"with_datasketch": false' in result.stdout


@pytest.mark.parametrize("args", [["--suite", "hard", "--hard-negatives", "10"], ["--stories", "1000"]])
def test_bench_accuracy_refuses_an_option_of_the_other_suite(args, kernels_cached) -> None:
    result = _invoke(["bench", "accuracy", "--no-datasketch", *args])
    assert result.exit_code == 2 and "suite" in result.output


def test_bench_accuracy_hard_suite_prints_every_kind(kernels_cached) -> None:
    """A small real run of the hard suite through the command: every copy and negative kind has a row."""
    from streamdedup.bench.hard_suite import COPY_KINDS, NEGATIVE_KINDS

    result = _invoke(["bench", "accuracy", "--suite", "hard", "--per-kind", "10", "--stories", "2000", "--no-datasketch"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip() for line in result.stdout.splitlines() if line.count("│") > 3}
    assert set(COPY_KINDS) | set(NEGATIVE_KINDS) <= rows
    assert "hard suite, stream" in result.stdout and "where the missed copies were lost" in result.stdout


def test_bench_accuracy_zh_suite_runs_through_the_command(kernels_cached) -> None:
    """A small real run of the Chinese suite: both systems score every kind, datasketch on character 3-grams."""
    import json

    from streamdedup.bench.lang_suite import FOOTER_NEGATIVE, copy_kinds, related_negatives

    result = _invoke(["bench", "accuracy", "--suite", "zh", "--per-kind", "3", "--stories", "200", "--json"])
    assert result.exit_code == 0, result.output
    res = json.loads(result.stdout)
    assert res["suite"] == "zh" and res["datasketch_shingles"] == "character 3-grams"
    for scores in (res["streamdedup"], *res["datasketch"].values()):
        assert set(scores["recall_per_kind"]) == set(copy_kinds("zh"))
        assert set(scores["flagged_per_negative_kind"]) == {*related_negatives("zh"), FOOTER_NEGATIVE}


def test_bench_accuracy_revisions_suite_runs_through_the_command(kernels_cached) -> None:
    """A small real run of the revisions suite: every kind has a row, and the table of
    Reuters' CORRECTED stories is there."""
    from streamdedup.bench.revision_edits import COSMETIC_KINDS, REVISION_KINDS
    from streamdedup.bench.revision_suite import ZH_KINDS

    result = _invoke(["bench", "accuracy", "--suite", "revisions", "--per-kind", "3", "--stories", "3000"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip() for line in result.stdout.splitlines() if line.count("│") > 3}
    assert {*REVISION_KINDS, *COSMETIC_KINDS, *ZH_KINDS} <= rows
    assert "Reuters CORRECTED story" in result.stdout and "r505" in result.stdout


def test_bench_decider_decides_every_record(kernels_cached) -> None:
    """A small real run: every record of the stream is decided once per round, at some rate."""
    import json

    result = _invoke(["bench", "decider", "--documents", "1000", "--long-documents", "0", "--rounds", "1", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)["reuters"]
    assert sum(r["counts"].values()) == r["documents"] == 1000 and r["counts"]["duplicate"] > 50
    # a fingerprint record carries the canonical text (the decider's exact evidence):
    # about the input's text plus ~370 bytes of fingerprint
    assert r["decider_fingerprints_per_s"] > 0 and r["value_bytes_mean"] < r["record_bytes_mean"] < r["value_bytes_mean"] + 600


def test_a_streamdedup_error_is_one_line_and_exit_code_1(monkeypatch, kernels_cached) -> None:
    @click.command()
    def boom() -> None:
        raise IncompatibleFingerprintError("state record 7 is not an engine record of this version")

    monkeypatch.setitem(main.commands, "boom", boom)
    result = _invoke(["boom"])
    assert result.exit_code == 1
    assert result.stderr == "Error: state record 7 is not an engine record of this version\n"


def test_an_unexpected_error_is_one_line_unless_debug(monkeypatch, kernels_cached) -> None:
    @click.command()
    def boom() -> None:
        raise RuntimeError("the thing that never happens")

    monkeypatch.setitem(main.commands, "boom", boom)
    result = _invoke(["boom"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("Error: RuntimeError: the thing that never happens (unexpected: --debug")
    debug = _invoke(["--debug", "boom"])
    assert debug.exit_code == 1 and isinstance(debug.exception, RuntimeError)  # raised: Python prints the traceback


@pytest.mark.parametrize("args,message", [
    (["--rebuild-from-input", "yesterday"], "--rebuild-from-input 'yesterday': give earliest, an offset, -N"),
    (["--rebuild-from-input", "earliest", "--accept-empty-state"], "not both"),
    (["--input", "x.jsonl", "--output-dir", "o", "--accept-empty-state"], "are for Kafka mode"),
])
def test_lost_state_options_are_checked_before_anything_starts(args, message, kernels_cached) -> None:
    result = _invoke(["run", *args])
    assert result.exit_code == 2 and message in result.stderr


def test_a_plain_install_runs_the_pipeline_without_any_extra() -> None:
    """`streamdedup run` (file mode and Kafka) and `bench kafka` import nothing from an extra,
    and the Kafka client and the metrics library are core dependencies."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in project["dependencies"]}
    assert {"confluent-kafka", "prometheus-client", "rapidfuzz"} <= core  # rapidfuzz: the revision test
    blocked = ["matplotlib", "datasketch", "rensa", "faust"]
    code = ("import sys\n"
            f"for m in {blocked!r}: sys.modules[m] = None\n"
            "import streamdedup.cli, streamdedup.runtime.filemode, streamdedup.runtime.single.processor, streamdedup.runtime.kafka.metrics\n"
            "import streamdedup.bench.kafka, streamdedup.bench.staged, topologies.single_index, topologies.staged\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------- the compile notice


def _cold_env(cache_dir: Path) -> dict[str, str]:
    """This environment with an empty Numba cache (Numba reads NUMBA_CACHE_DIR at import)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "STREAMDEDUP_"))}
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def test_a_refusal_on_a_cold_cache_is_one_line(tmp_path: Path) -> None:
    """A missing extra refuses before anything compiles: no notice, one line (a fresh interpreter
    and an empty cache, where every kernel would compile)."""
    code = ("import sys\nsys.modules['datasketch'] = None\nfrom streamdedup.cli import main\n"
            "main(['bench', 'fingerprint'], prog_name='streamdedup')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env=_cold_env(tmp_path / "numba"))
    assert out.returncode == 1, out.stderr
    assert out.stderr.count("\n") == 1 and "pip install 'streamdedup[bench]'" in out.stderr, out.stderr


#: a feed of the default shape, and one of the shape most news feeds have (a headline and a body,
#: an event time): the kernel cache's sample lines must reach the kernels in either
_FEEDS = {
    "text": ("", [b'{"id": "a", "text": "the central bank left interest rates unchanged"}',
                  b'{"id": "b", "text": "the central bank left interest rates unchanged"}']),
    "headline-body": ("input:\n  text_fields: [headline, body]\n  time_field: ts\n",
                      [b'{"id": "a", "headline": "Rates", "body": "the central bank left interest rates unchanged", "ts": 1}',
                       b'{"id": "b", "headline": "Rates", "body": "the central bank left interest rates unchanged", "ts": 2}']),
}


@pytest.mark.cold_cache
@pytest.mark.parametrize("feed", sorted(_FEEDS))
def test_the_notice_comes_once_on_a_cold_run_and_never_on_a_warm_one(feed: str, tmp_path: Path) -> None:
    """A file-mode run on an empty cache says it compiles (first line of stderr, once), fills the
    cache (in parallel processes) and decides; the next run compiles nothing, so says nothing."""
    yaml_text, lines = _FEEDS[feed]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join([*lines, b"not json"]) + b"\n")
    (tmp_path / "feed.yaml").write_text(yaml_text or "{}\n")
    env = _cold_env(tmp_path / "numba")
    runs = []
    for out_dir in ("out1", "out2"):
        args = ["run", "--input", str(tmp_path / "in.jsonl"), "--output-dir", str(tmp_path / out_dir),
                "--config", str(tmp_path / "feed.yaml")]
        runs.append(subprocess.run([sys.executable, "-m", "streamdedup.cli", *args], capture_output=True, text=True,
                                   timeout=600, cwd=ROOT, env=env))
    cold, warm = runs
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    assert cold.stderr.splitlines()[0] == COMPILE_NOTICE and cold.stderr.count(COMPILE_NOTICE) == 1, cold.stderr
    assert COMPILE_NOTICE not in warm.stderr, warm.stderr
    for out in (cold, warm):
        assert "unique 1, duplicates 1, dead-letter 1" in out.stdout, out.stdout
        assert "docs/s" not in out.stdout  # three lines' rate would be the start-up's


@pytest.mark.parametrize("args", [
    ["run", "--input", "x.jsonl"],  # stops at the missing --output-dir
    ["run", "--help"],
    ["bench"],
    ["--help"],
])
def test_no_notice_for_a_command_that_compiles_nothing(args, monkeypatch) -> None:
    """Even with every kernel missing from the cache (the notice used to come from that guess)."""
    monkeypatch.setattr(cache, "missing_kernels", lambda names=cache.PIPELINE_KERNELS: list(names))
    result = _invoke(args)
    assert COMPILE_NOTICE not in result.stderr, result.stderr


@pytest.mark.parametrize(("args", "need"), [
    (["--role", "worker"], "worker"),
    (["--role", "decider", "--state-dir", "new"], "decider"),
    (["--role", "decider", "--state-dir", "."], "decider+restore"),  # a state to restore
])
def test_a_staged_role_fills_the_kernel_cache_for_its_role_first(args, need, monkeypatch, tmp_path) -> None:
    """Before it builds its role (nothing here reaches a broker: the fill stops the command)."""
    from streamdedup.cli import run_staged

    filled = []

    def fill(cfg, need):
        filled.append(need)
        raise click.ClickException("stopped after the fill")

    monkeypatch.setattr(run_staged, "fill_kernel_cache", fill)
    monkeypatch.chdir(tmp_path)
    result = _invoke(["run", "--topology", "staged", *args])
    assert result.exit_code == 1 and "stopped after the fill" in result.stderr, result.output
    assert filled == [need]


def test_the_notice_is_said_when_a_kernel_starts_compiling(monkeypatch) -> None:
    """The CLI listens for compiles while a command runs: the first one says the notice, once."""
    listening = []

    def fake_listener(callback):
        listening.append(callback)
        return lambda: listening.remove(callback)

    @click.command()
    def compiles() -> None:
        listening[0]()  # what the listener does when Numba starts compiling a kernel
        listening[0]()

    monkeypatch.setattr(cli_package, "on_first_compile", fake_listener)
    monkeypatch.setitem(main.commands, "compiles", compiles)
    result = _invoke(["compiles"])
    assert result.exit_code == 0, result.output
    assert result.stderr == COMPILE_NOTICE + "\n"
    assert listening == []  # stopped listening after the command


# ---------------------------------------------------------------- the kernel cache


def test_an_empty_numba_cache_dir_means_every_kernel_compiles(tmp_path: Path) -> None:
    """The real check, not a stub (a fresh interpreter: Numba reads NUMBA_CACHE_DIR at import)."""
    code = "from streamdedup._kernels.cache import missing_kernels, PIPELINE_KERNELS as P; assert missing_kernels() == list(P)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr


def test_warm_up_leaves_every_pipeline_kernel_cached() -> None:
    """Compiles what the other tests did not (restore, growth, the Kafka and raw-text scans)."""
    result = _invoke(["warm-up"])
    assert result.exit_code == 0, result.output
    assert cache.missing_kernels() == []
    assert "kernels" in result.stdout and " s" in result.stdout


@pytest.mark.parametrize("feed", sorted(_FEEDS))
def test_warm_up_runs_with_the_feeds_own_fields(feed: str, tmp_path: Path) -> None:
    """Its sample records have the configured id, text and time fields (with samples of another
    shape, every one was a dead letter and the warm-up crashed on an empty batch)."""
    (tmp_path / "feed.yaml").write_text(_FEEDS[feed][0] or "{}\n")
    result = _invoke(["warm-up", "--config", str(tmp_path / "feed.yaml")])
    assert result.exit_code == 0, result.output
    assert cache.missing_kernels() == []


def test_a_config_error_is_a_fatal_error_of_one_line(tmp_path) -> None:
    """Exit 1 and one ``Error:`` line naming the setting, not a usage error with its preamble."""
    (tmp_path / "bad.yaml").write_text("verify:\n  jaccard_threshold: 2\n")
    result = _invoke(["run", "--input", "x.jsonl", "--output-dir", str(tmp_path / "o"), "--config", str(tmp_path / "bad.yaml")])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("Error: ") and "verify.jaccard_threshold" in result.stderr


def test_version_names_the_release_and_the_formats() -> None:
    import tomllib

    from streamdedup import __version__
    from streamdedup._kernels.records import ENGINE_VERSION

    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == __version__
    out = CliRunner().invoke(main, ["--version"], prog_name="streamdedup")
    assert out.exit_code == 0 and out.output.startswith(f"streamdedup {__version__}: state records v{ENGINE_VERSION} ")
    assert "fingerprint records v" in out.output
