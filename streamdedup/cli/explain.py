"""``streamdedup explain A B``: every estimate for one pair, next to the exact values."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from streamdedup._optional import require
from streamdedup.bench.edits import word_shingles
from streamdedup.errors import InputError
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.engine.revisions import detect
from streamdedup.engine.verify import Fingerprint, compare, exact_grams
from streamdedup.cli._common import config_option, get_config, make_console

#: true Levenshtein is O(n*m); beyond this many characters per text it is skipped
TRUE_LD_LIMIT = 100_000


def exact_shingles(canonical: bytes, kind: str, size: int) -> set:
    """Exact shingle set of canonical text, the same units the kernels hash."""
    if kind == "word":
        return word_shingles(canonical, size)
    k = min(size, len(canonical))
    return {canonical[i:i + k] for i in range(len(canonical) - k + 1)} if canonical else set()


def _read(path: str) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"{path} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def explain_pair(text_a: str, text_b: str, cfg) -> dict:
    if max(len(text_a), len(text_b)) <= TRUE_LD_LIMIT:
        # the extra before the kernels: on a cold cache a refusal comes before any compile (one
        # line, no compile notice); canonical texts are rarely longer than their raw text
        require("rapidfuzz.distance", "tools", "streamdedup explain")
    fp = Fingerprinter(cfg.fingerprint)
    batch = fp.fingerprint_batch([text_a, text_b])
    a, b = Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1)
    cmp = compare(a, b, cfg.verify, cfg.fingerprint.signature, full=True)
    ca, cb = batch.canonical
    sh = cfg.fingerprint.shingle
    sa, sb = exact_shingles(ca, sh.kind, sh.size), exact_shingles(cb, sh.kind, sh.size)
    inter = len(sa & sb)
    union = len(sa | sb)
    true_ld = None
    if max(len(ca), len(cb)) <= TRUE_LD_LIMIT:
        Levenshtein = require("rapidfuzz.distance", "tools", "streamdedup explain").Levenshtein
        true_ld = Levenshtein.distance(ca, cb)
    return {
        "canonical_length": [len(ca), len(cb)],
        "shingles": [len(sa), len(sb)],
        "exact_jaccard": inter / union if union else 0.0,
        "exact_containment_a_in_b": inter / len(sa) if sa else 0.0,
        "exact_containment_b_in_a": inter / len(sb) if sb else 0.0,
        "minhash_jaccard": cmp.jaccard,
        "estimated_containment_a_in_b": cmp.containment_a_in_b,
        "estimated_containment_b_in_a": cmp.containment_b_in_a,
        "true_levenshtein": true_ld,
        "signature_lengths": [len(a.signature), len(b.signature)],
        "signature_distance": cmp.ld.signature_distance,
        "ld_raw": cmp.ld.raw,
        "ld_calibrated": cmp.ld.calibrated,
        "ld_similarity_raw": cmp.ld.raw_similarity,
        "ld_similarity_calibrated": cmp.ld.similarity,
        "expected_unrelated_ld": cmp.ld.expected_unrelated,
        "signature_embedding_similarity": cmp.embedding_similarity,
        # exact character evidence: always shown here (the engine asks only below ld_min_jaccard)
        "exact_evidence": list(cmp.grams or exact_grams(ca, cb)),
        "relation": cmp.relation,
        "is_duplicate": cmp.is_duplicate,
        "reasons": list(cmp.reasons),
        # as the engine reads a pair it links: B revises A (verify.revisions; not looked for when off)
        "revision": _revision(ca, cb) if cmp.is_duplicate and cfg.verify.revisions != "off" else None,
    }


def _revision(ca: bytes, cb: bytes) -> dict:
    r = detect(ca.decode("utf-8"), cb.decode("utf-8"))
    return {"revised": r.revised, "kinds": list(r.kinds), "changed": list(r.changed)}


@click.command()
@click.argument("file_a", type=click.Path(exists=True, dir_okay=False))
@click.argument("file_b", type=click.Path(exists=True, dir_okay=False))
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def explain(file_a: str, file_b: str, config_path: str | None, as_json: bool) -> None:
    """Explain how FILE_B (the newer text) relates to FILE_A."""
    cfg = get_config(config_path)
    try:
        out = explain_pair(_read(file_a), _read(file_b), cfg)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    table = Table(title=f"{file_a}  vs  {file_b}", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")

    def row(name: str, value) -> None:
        if isinstance(value, float):
            value = f"{value:.3f}"
        elif isinstance(value, list):
            value = " / ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in value)
        table.add_row(name, "n/a (text over size limit)" if value is None else str(value))

    row("canonical length (bytes) A / B", out["canonical_length"])
    row("distinct shingles A / B", out["shingles"])
    row("exact Jaccard", out["exact_jaccard"])
    row("exact containment A in B / B in A", [out["exact_containment_a_in_b"], out["exact_containment_b_in_a"]])
    row("MinHash Jaccard estimate", out["minhash_jaccard"])
    row("estimated containment A in B / B in A", [out["estimated_containment_a_in_b"], out["estimated_containment_b_in_a"]])
    row("true Levenshtein distance", out["true_levenshtein"])
    row("signature lengths A / B", out["signature_lengths"])
    row("signature edit distance", out["signature_distance"])
    row("LD estimate raw (Coates: distance x C)", out["ld_raw"])
    row("LD estimate calibrated", out["ld_calibrated"])
    row("LD similarity raw / calibrated", [out["ld_similarity_raw"], out["ld_similarity_calibrated"]])
    row("expected LD if unrelated", out["expected_unrelated_ld"])
    row("signature embedding similarity", out["signature_embedding_similarity"])
    row("exact 8-gram Jaccard / digits as 0 / own words one edit away", out["exact_evidence"])
    console = make_console()
    console.print(table)
    verdict = "DUPLICATE" if out["is_duplicate"] else "not a duplicate"
    rev = out["revision"]
    if rev and rev["revised"]:
        verdict = f"REVISION ({', '.join(rev['kinds'])}: {'; '.join(rev['changed'])})"
    console.print(f"verdict: [bold]{out['relation']}[/bold] -> {verdict} ({'; '.join(out['reasons'])})")
