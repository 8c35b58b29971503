"""Fingerprint parameters (pure): what decides a fingerprint's value, the key that tags records
made with them, and the keyed mode's key (``fingerprint.secret``)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from streamdedup.config import FingerprintConfig
from streamdedup.errors import IncompatibleFingerprintError
from streamdedup.sketch.lsh import choose

#: differences named at most (settings sent by another party can be anything)
MAX_DIFFERENCES = 12
#: Bumped whenever a kernel's output changes for the same settings; stored in every record.
FORMAT_VERSION = 3

@dataclass(frozen=True)
class FingerprintParams:
    """Everything that decides a fingerprint's value. Equal params <=> comparable fingerprints."""

    format_version: int
    settings: str  # canonical JSON of the fingerprint config
    bands: int
    rows: int

    @staticmethod
    def of(cfg: FingerprintConfig) -> "FingerprintParams":
        """The params of fingerprints made with ``cfg`` (what an engine checks a batch against)."""
        lsh = choose(cfg.lsh, cfg.minhash.num_perm)
        dumped = cfg.model_dump(mode="json")
        # never the secret (the settings travel with every params announcement): an id of it, so
        # fingerprints of another key are refused; unkeyed settings read as they always did
        del dumped["secret"]
        if cfg.secret.get_secret_value():
            dumped["secret_id"] = secret_id(cfg)
        settings = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
        return FingerprintParams(FORMAT_VERSION, settings, lsh.bands, lsh.rows)

    @cached_property
    def key(self) -> int:
        """A 32-bit tag of these params, stored in each record to refuse mixed comparisons."""
        h = hashlib.blake2b(f"{self.format_version}|{self.settings}|{self.bands}x{self.rows}".encode(), digest_size=4)
        return int.from_bytes(h.digest(), "little")

    def differences(self, other: "FingerprintParams") -> list[str]:
        """What differs between two params, as ``setting: this vs other`` (settings by dotted path).

        >>> from streamdedup import Fingerprinter, load_config
        >>> a = Fingerprinter(load_config().fingerprint).params
        >>> b = Fingerprinter(load_config(environ={"STREAMDEDUP_FINGERPRINT__SHINGLE__SIZE": "4"}).fingerprint).params
        >>> a.differences(b)
        ['fingerprint.shingle.size: 5 vs 4']
        """
        out = []
        if self.format_version != other.format_version:
            out.append(f"format version: {self.format_version} vs {other.format_version}")
        if (self.bands, self.rows) != (other.bands, other.rows):
            out.append(f"LSH bands x rows: {self.bands}x{self.rows} vs {other.bands}x{other.rows}")
        # the settings are the fingerprint section of the config: name them as the config does
        mine = _flat(json.loads(self.settings), "fingerprint.")
        theirs = _flat(json.loads(other.settings), "fingerprint.")
        for name in sorted(mine.keys() | theirs.keys()):
            if mine.get(name) != theirs.get(name):
                # another sender's settings are its text: each named in a line, the list cut short
                out.append(f"{name[:80]}: {str(mine.get(name, '(unset)'))[:60]} vs {str(theirs.get(name, '(unset)'))[:60]}")
                if len(out) >= MAX_DIFFERENCES:
                    out.append("...")
                    break
        return out

    def require_same(self, other: "FingerprintParams") -> None:
        """Raise :class:`IncompatibleFingerprintError` naming what differs, unless ``other`` equals these."""
        if self is other or self == other:
            return
        raise IncompatibleFingerprintError(
            "fingerprints were built with different parameters "
            f"(key {self.key:08x} vs {other.key:08x}: {'; '.join(self.differences(other))}); "
            "rebuild the state with one configuration"
        )


def _flat(tree: dict, prefix: str = "") -> dict[str, object]:
    """A nested settings dict as ``{"a.b.c": value}``.

    Raises:
        TypeError: ``tree`` is not a dict of settings.
    """
    if not isinstance(tree, dict):
        raise TypeError(f"settings are a JSON object, not {type(tree).__name__}")
    out: dict[str, object] = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def secret_id(cfg: FingerprintConfig) -> str:
    """A public name of ``fingerprint.secret`` (8 bytes of a hash of it): two deployments with
    one secret have the same id. It reveals the secret only to a search of every secret, hence
    the 16-character minimum; give a long random one."""
    return hashlib.blake2b(cfg.secret.get_secret_value().encode(), digest_size=8, person=b"sdd-secret-id").hexdigest()


def signature_seed(cfg: FingerprintConfig) -> np.uint64:
    """The seed of the signature's window mixer: ``signature.seed``, and keyed, a value of the
    secret's own (not a half of the SipHash key: the mixer is invertible)."""
    seed = np.uint64(cfg.signature.seed)
    secret = cfg.secret.get_secret_value()
    if not secret:
        return seed
    raw = hashlib.blake2b(secret.encode(), digest_size=8, person=b"sdd-sig-seed").digest()
    return seed ^ np.uint64(int.from_bytes(raw, "little"))


def hash_key(cfg: FingerprintConfig) -> tuple[np.uint64, np.uint64, bool]:
    """The SipHash key the kernels mix into every hash under ``fingerprint.secret``, and whether
    there is one."""
    secret = cfg.secret.get_secret_value()
    if not secret:
        return np.uint64(0), np.uint64(0), False
    raw = hashlib.blake2b(secret.encode(), digest_size=16, person=b"sdd-hash-key").digest()
    return np.uint64(int.from_bytes(raw[:8], "little")), np.uint64(int.from_bytes(raw[8:], "little")), True
