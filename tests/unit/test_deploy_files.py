"""docker-compose.yml, the Dockerfile and most Makefile targets cannot run here (no Docker engine, no broker): check what can be checked."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.specifiers import SpecifierSet

from streamdedup import load_config

ROOT = Path(__file__).resolve().parents[2]


def _compose(environ: dict[str, str] | None = None) -> dict:
    """docker-compose.yml with ``${VAR:-default}`` interpolated as compose does (``environ``)."""
    environ = environ or {}
    text = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: environ.get(m[1], m[2]), (ROOT / "docker-compose.yml").read_text())
    return yaml.safe_load(text)


def test_compose_parses_and_matches_the_local_setup() -> None:
    compose = _compose()
    services = compose["services"]
    assert {"kafka", "topics", "processor"} <= set(services)
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:4.")
    assert "127.0.0.1:9092:9092" in kafka["ports"]
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == 1  # exactly-once on one broker
    assert "9093" in env["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    for name in ("topics", "processor", "processor-standby", "topics-staged", "decider", "decider-standby", "fingerprint"):
        svc = services[name]
        assert svc["build"] == "."
        # every override the compose file sets must be a real setting
        cfg = load_config(ROOT / "config" / "default.yaml", environ={k: str(v) for k, v in svc["environment"].items()})
        assert cfg.kafka.bootstrap_servers == "kafka:19092"
        assert "config/default.yaml" in svc["command"]


def test_compose_profiles_keep_the_topologies_apart() -> None:
    """Both topologies write the same output topics: one profile each, never both at once; the
    staged commands are ones the CLI accepts, and decider and standby share one state volume."""
    import click

    from streamdedup.cli import main

    services = _compose()["services"]
    assert services["processor"]["profiles"] == services["processor-standby"]["profiles"] == ["single"]
    assert services["processor"]["volumes"] == services["processor-standby"]["volumes"]
    staged = [n for n, s in services.items() if s.get("profiles") == ["staged"]]
    assert set(staged) == {"topics-staged", "decider", "decider-standby", "fingerprint"}
    assert services["decider"]["volumes"] == services["decider-standby"]["volumes"]
    for name in staged:
        # parse (not run) the command: unknown options and bad choices raise click.UsageError
        cmd, args = main, list(services[name]["command"])
        while isinstance(cmd, click.Group):
            cmd, args = cmd.commands[args[0]], args[1:]
        cmd.make_context(name, args)
    assert "--topology" in services["topics-staged"]["command"]


def _host_ports(svc: dict) -> list[str]:
    """The fixed host addresses a service publishes (``127.0.0.1:9464`` of ``127.0.0.1:9464:9464``)."""
    out = []
    for entry in svc.get("ports", []):
        parts = str(entry).split(":")
        if len(parts) >= 2 and parts[-2]:
            out.append(":".join(parts[:-1]))
    return out


def test_the_scale_advice_works_with_the_published_ports() -> None:
    """A service the header says to scale publishes no fixed host port (a second replica could
    not bind it), and no two services of one profile publish the same one."""
    header = (ROOT / "docker-compose.yml").read_text().split("services:")[0]
    services = _compose()["services"]
    advice = [line for line in header.splitlines() if re.search(r"\bscale", line)]
    assert any("--scale" in line for line in advice), "the header gives scale advice"
    for line in advice:
        for name in set(re.findall(r"[\w-]+", line)) & set(services):  # the services a line about scaling names
            assert not _host_ports(services[name]), f"{name}: {line.strip()!r}, but it publishes {_host_ports(services[name])}"
    for profile in ("single", "staged"):
        up = [s for s in services.values() if s.get("profiles", [profile]) == [profile]]
        published = [p for s in up for p in _host_ports(s)]
        assert len(published) == len(set(published)), (profile, published)


def test_compose_runs_the_config_a_user_mounts() -> None:
    """Every streamdedup service reads ``STREAMDEDUP_CONFIG_FILE`` from the mounted ./config."""
    for name, svc in _compose({"STREAMDEDUP_CONFIG_FILE": "config/feed.yaml"})["services"].items():
        if svc.get("build") != ".":
            continue
        assert "./config:/app/config:ro" in svc["volumes"], name
        assert svc["command"][svc["command"].index("--config") + 1] == "config/feed.yaml", name


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile instruction, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_dockerfile_installs_the_package_and_runs_the_processor() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.startswith("# ")
    # every stage's Python is one pyproject.toml supports
    supported = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"])
    bases = [args.split()[0] for op, args in _instructions() if op == "FROM"]
    for base in bases:
        version = re.fullmatch(r"python:(3\.\d+)-slim(?:-\w+)?", base)
        assert version, f"the base image is not an official slim Python one: {base}"
        assert version.group(1) in supported, f"{base} is not within requires-python {supported}"
    copied = {src for op, args in _instructions() if op == "COPY" for src in args.split()[:-1]}
    for path in ("streamdedup", "topologies", "config", "pyproject.toml", "README.md"):
        assert path in copied, f"the Dockerfile does not COPY {path}"
    assert 'ENTRYPOINT ["streamdedup"]' in text and '"run"' in text


def test_the_image_installs_the_wheel_the_release_builds() -> None:
    """The image is the release: a first stage builds the wheel as `make dist` does (python -m
    build), the image pip-installs that wheel, not the source tree."""
    steps = _instructions()
    stages = [i for i, (op, _) in enumerate(steps) if op == "FROM"]
    assert len(stages) == 2, "a wheel-building stage and the image"
    build = [args for op, args in steps[stages[0]:stages[1]] if op == "RUN"]
    assert any("python -m build --wheel" in args for args in build), build
    image = steps[stages[1]:]
    assert any(op == "COPY" and args.startswith("--from=") for op, args in image), "the image copies the built wheel"
    installs = [args for op, args in image if op == "RUN" and "pip install" in args]
    assert installs and all(".whl" in args and "pip install --no-cache-dir ." not in args for args in installs), installs
    make = (ROOT / "Makefile").read_text()
    assert "-m build --outdir dist ." in make, "make dist builds the wheel with the same tool"


def test_dockerfile_bakes_the_kernel_cache_for_the_app_user() -> None:
    """A fresh container must not compile the kernels: the image runs warm-up at build, with
    NUMBA_CACHE_DIR set before it, as the user the container runs as, into a directory it owns."""
    steps = _instructions()
    ops = [op for op, _ in steps]
    env = next(i for i, (op, args) in enumerate(steps) if op == "ENV" and args.startswith("NUMBA_CACHE_DIR="))
    cache_dir = steps[env][1].split("=", 1)[1].split()[0]
    assert not cache_dir.startswith("/tmp"), "a cache under /tmp is not where a warm image should keep it"
    warm = next(i for i, (op, args) in enumerate(steps) if op == "RUN" and "streamdedup warm-up" in args)
    user = ops.index("USER")
    assert env < warm and user < warm, "warm-up must see NUMBA_CACHE_DIR and run as the app user"
    assert ops.count("USER") == 1 and steps[user][1] == "streamdedup"
    chown = [args for op, args in steps[:user] if op == "RUN" and "chown streamdedup" in args]
    assert chown and '"$NUMBA_CACHE_DIR"' in chown[0], "the app user must own the cache directory"
    assert not any(op == "ENV" and "NUMBA_CACHE_DIR" in args for op, args in steps[env + 1:]), "the cache dir changes after warm-up"


def test_makefile_targets_exist_and_run_what_exists() -> None:
    """Every .PHONY name has a rule, and every repository path a recipe runs exists (`make
    calibrate` once ran a benchmarks/calibrate_ld.py that never existed)."""
    text = (ROOT / "Makefile").read_text()
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split()
    rules = set(re.findall(r"^([A-Za-z0-9_.-]+):(?!=)", text, re.M))
    assert set(phony) <= rules, f"in .PHONY without a rule: {sorted(set(phony) - rules)}"
    recipes = "\n".join(line for line in text.splitlines() if line.startswith("\t"))
    paths = set(re.findall(r"(?<![\w/.])((?:benchmarks|scripts|tests|streamdedup|config)/[\w./-]*)", recipes))
    assert paths, "the path pattern found nothing: the check would be vacuous"
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"the Makefile runs paths that do not exist: {missing}"
