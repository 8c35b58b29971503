"""Where settings come from: the YAML file and ``STREAMDEDUP_*`` environment overrides.

Environment overrides use ``__`` between levels, e.g.
``STREAMDEDUP_FINGERPRINT__MINHASH__NUM_PERM=64`` or ``STREAMDEDUP_VERIFY__JACCARD_THRESHOLD=0.6``.
A value is a string unless the setting's type says otherwise; it is never parsed as YAML (a
password ``0123`` stays ``"0123"``, ``yes`` stays ``"yes"``). Numbers (decimal only: ``0x1F`` is
an error) and booleans (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``) are
converted by the setting's type. Lists take ``[a, b]`` (a YAML flow list whose items stay strings),
``a,b`` or a single ``a``. A setting that may be null is null when the value is empty or ``null``.
``kafka.librdkafka`` properties are named after ``LIBRDKAFKA__`` with ``_`` standing for ``.``
(``STREAMDEDUP_KAFKA__LIBRDKAFKA__SASL_PASSWORD`` sets ``sasl.password``; ``log_level`` and
``enabled_events`` keep their underscore), their values stay strings; or the whole mapping goes in
``STREAMDEDUP_KAFKA__LIBRDKAFKA='{security.protocol: SASL_SSL}'`` (YAML/JSON, values stay
strings), merged over the file's and overridden by single-property variables. librdkafka
properties whose name says password, passphrase, secret, key, token or credential are held as
``SecretStr``: no error message, repr or log shows their value.
"""

from __future__ import annotations

import difflib
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, BeforeValidator, SecretStr, ValidationError

from streamdedup.errors import ConfigError

ENV_PREFIX = "STREAMDEDUP_"

#: a setting spelled auto | on | off. YAML 1.1 reads a bare on/off as a boolean, so a boolean
#: counts as the word the user wrote (and the fingerprint settings hold one spelling)
AutoOnOff = Annotated[Literal["auto", "on", "off"], BeforeValidator(lambda v: ("off", "on")[v] if type(v) is bool else v)]


def set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``tree[a][b]...`` for ``path`` [a, b, ...], making the levels that are missing."""
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


#: the librdkafka properties (settable by value) whose names have an underscore: the rest use dots
_UNDERSCORED = {"log.level": "log_level", "enabled.events": "enabled_events"}
_PROPERTY_NAME = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*")
_DECIMAL = re.compile(r"\s*[+-]?\d+\s*")
_NULLS = ("", "null")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where YAML failed and why, without the offending text (it may be a secret)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or ""
    # keep token names ('<stream end>'), drop quoted input ("found undefined alias 'S3cr3t'")
    problem = re.sub(r"'(?!<[a-z ]+>')[^']*'", "'...'", problem)
    return where + (f": {problem}" if problem else "")


def _env_list(name: str, dotted: str, raw: str) -> list[Any]:
    text = raw.strip()
    if text.startswith("["):
        problem = None
        try:
            # BaseLoader: items stay strings ([0123] is "0123"); the setting's type converts them
            items = yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader builds only str/list/dict
        except yaml.YAMLError as exc:
            problem = _yaml_problem(exc)
        if problem is not None:
            raise ConfigError(f"{name} ({dotted}): not a list [a, b]{problem}")
        return items
    if not text:
        return []
    items = [item.strip() for item in text.split(",")]
    if "" in items:
        raise ConfigError(f"{name} ({dotted}): empty item in the comma-separated list")
    return items


def _env_value(name: str, dotted: str, annotation: Any, raw: str) -> Any:
    """The raw string, shaped only as far as the setting's type needs; pydantic converts the rest."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = get_args(annotation)
        if type(None) in args and raw in _NULLS:
            return None
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    origin = get_origin(annotation)
    if origin in (tuple, list):
        return _env_list(name, dotted, raw)
    if origin is Literal and all(type(a) is int for a in get_args(annotation)) and _DECIMAL.fullmatch(raw):
        return int(raw)  # pydantic matches int literals against ints only
    return raw


def _env_mapping(name: str, dotted: str, raw: str) -> dict[str, Any]:
    problem = None
    try:
        value = yaml.load(raw, Loader=yaml.BaseLoader) if raw.strip() else {}  # BaseLoader: values stay strings
    except yaml.YAMLError as exc:
        problem = _yaml_problem(exc)
    if problem is not None:
        raise ConfigError(f"{name} ({dotted}): not a YAML/JSON mapping{problem}")
    if not isinstance(value, dict):
        raise ConfigError(f"{name} ({dotted}): must be a mapping such as {{security.protocol: SASL_SSL}}")
    return value


def _not_a_setting(name: str, dotted: str, part: str, choices: Mapping[str, Any]) -> ConfigError:
    what = "a setting" if "." in dotted else "a configuration section"
    close = difflib.get_close_matches(part, list(choices), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; one of: {', '.join(choices)}"
    return ConfigError(f"{name}: {dotted} is not {what}{hint}")


def _override(name: str, parts: list[str], raw: str, root: type[BaseModel], env: bool = True) -> list[tuple[tuple[str, ...], Any]]:
    """The (path, value) pairs one override sets, typed by walking the models; ``name`` is
    what error messages call it (the variable, or ``--set``). ``env``: a librdkafka property
    is spelt with ``_`` for ``.`` (a variable name cannot hold a dot)."""
    model = root
    for i, part in enumerate(parts):
        path, dotted = tuple(parts[: i + 1]), ".".join(parts[: i + 1])
        field = model.model_fields.get(part)
        if field is None:
            raise _not_a_setting(name, dotted, part, model.model_fields)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
            continue
        tail = parts[i + 1:]
        if get_origin(annotation) is dict:  # kafka.librdkafka: property names are not ours to check
            if not tail:
                return [((*path, str(k)), v) for k, v in _env_mapping(name, dotted, raw).items()]
            prop = ".".join(tail)
            if not _PROPERTY_NAME.fullmatch(prop):
                how = " (write sasl.password as SASL_PASSWORD)" if env else ""
                raise ConfigError(f"{name}: {prop!r} is not a librdkafka property name{how}")
            if env:
                prop = prop.replace("_", ".")
                prop = _UNDERSCORED.get(prop, prop)
            return [((*path, prop), raw)]
        if tail:
            raise ConfigError(f"{name}: {dotted} is a setting, not a section")
        return [(path, _env_value(name, dotted, annotation, raw))]
    raise ConfigError(f"{name}: {'.'.join(parts)} is a section; set its settings one by one")


def _env_override(name: str, raw: str, root: type[BaseModel]) -> list[tuple[tuple[str, ...], Any]]:
    """The (path, value) pairs one ``STREAMDEDUP_*`` variable sets."""
    return _override(name, [p.lower() for p in name[len(ENV_PREFIX):].split("__")], raw, root)


def set_overrides(items: list[str], root: type[BaseModel]) -> list[tuple[tuple[str, ...], Any, str]]:
    """(path, value, label) for each ``dotted.setting=value`` (a command's ``--set``), typed
    exactly as an environment override of the same setting.

    >>> from streamdedup.config import Config
    >>> set_overrides(["verify.jaccard_threshold=0.5"], Config)
    [(('verify', 'jaccard_threshold'), '0.5', '--set verify.jaccard_threshold')]
    """
    out = []
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"--set {item!r}: write SETTING=VALUE, e.g. verify.jaccard_threshold=0.6")
        # the librdkafka tail keeps its dots: they are part of the property's name
        out.extend((path, value, f"--set {key}") for path, value in _override("--set", key.split("."), raw, root, env=False))
    return out


def env_overrides(environ: Mapping[str, str], root: type[BaseModel]) -> list[tuple[tuple[str, ...], Any, str]]:
    """(path, value, variable) for every ``STREAMDEDUP_*`` setting in ``environ``, typed by ``root``'s fields."""
    out = []
    # sorted: STREAMDEDUP_KAFKA__LIBRDKAFKA (a whole mapping) comes before its single properties
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            # STREAMDEDUP_CACHE and the like are not settings: a setting always has a section.
            continue
        out.extend((path, value, name) for path, value in _env_override(name, raw, root))
    return out


def format_error(exc: ValidationError, sources: Mapping[tuple[str, ...], str]) -> str:
    """One line per error: the dotted setting, pydantic's message (never the input: secrets),
    and the environment variables that set anything there."""
    lines = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        where = ".".join(loc) or "(top level)"
        names = sorted({n for path, n in sources.items() if path[: len(loc)] == loc or loc[: len(path)] == path})
        msg = err["msg"]
        if err["type"] == "string_type" and not names:
            msg += "; quote it in YAML (0123, yes, 12:30 are not strings there)"
        lines.append(f"{where}: {msg}" + (f" (set by {', '.join(names)})" if names else ""))
    return "invalid configuration: " + "; ".join(lines)


def read_file(p: Path) -> dict[str, Any]:
    """The YAML mapping in ``p`` (empty file: ``{}``); ConfigError naming the file otherwise."""
    # Errors are raised outside the except blocks: a YAML error's text quotes the offending
    # line, which may hold a secret, and a chained exception would print it in tracebacks.
    problem = None
    try:
        loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        problem = exc.strerror
    except yaml.YAMLError as exc:
        problem = "not valid YAML" + _yaml_problem(exc)
    if problem is not None:
        raise ConfigError(f"config file {p}: {problem}")
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {p}: top level must be a mapping, got {type(loaded).__name__}")
    return loaded


#: parts of a librdkafka property name that mark its value as a secret (over-matching a file
#: path such as ssl.key.location only hides it from logs)
_SECRET_PARTS = re.compile(r"password|passphrase|secret|key|token|credential")
#: secrets whose name does not say so (its implementation-defined text may carry credentials)
_SECRET_NAMES = frozenset({"sasl.oauthbearer.config"})


def is_secret_property(name: str) -> bool:
    """Whether a librdkafka property holds a secret (its value is never shown).

    >>> is_secret_property("sasl.password"), is_secret_property("ssl.key.pem"), is_secret_property("security.protocol")
    (True, True, False)
    """
    name = name.lower()
    return name in _SECRET_NAMES or _SECRET_PARTS.search(name) is not None


def librdkafka_properties(v: Any) -> Any:
    """``kafka.librdkafka`` as validated: secret values held as ``SecretStr``, the brokers refused
    (they have their own setting); anything but a mapping is left for pydantic to report."""
    if not isinstance(v, Mapping):
        return v
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
