"""``streamdedup explain A B``: every estimate for one pair, next to the exact values."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from streamdedup._optional import require
from streamdedup.errors import InputError
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.engine.revision_kernel import detect_bytes
from streamdedup.engine.verify import exact_grams, judge_pair
from streamdedup.text.scripts import word_shingles
from streamdedup.cli._common import config_option, get_config, make_console

#: true Levenshtein is O(n*m); beyond this many characters per text it is skipped
TRUE_LD_LIMIT = 100_000


def exact_shingles(canonical: bytes, kind: str, size: int, unspaced_size: int) -> set:
    """Exact shingle set of canonical text, the same units the kernels hash (in Chinese,
    Japanese and Thai text a token is one character, not the run between two spaces)."""
    if kind == "word":
        return word_shingles(canonical.decode("utf-8"), size, unspaced_size)
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
    # the engine's judgement of the stream A, B: the candidate step, then the verification
    # with A's MinHash as the engine stores it
    judged = judge_pair(batch, 0, 1, cfg)
    cmp = judged.comparison
    ca, cb = batch.canonical
    sh = cfg.fingerprint.shingle
    sa, sb = exact_shingles(ca, sh.kind, sh.size, sh.unspaced_size), exact_shingles(cb, sh.kind, sh.size, sh.unspaced_size)
    inter = len(sa & sb)
    union = len(sa | sb)
    true_ld = None
    if max(len(ca), len(cb)) <= TRUE_LD_LIMIT:
        Levenshtein = require("rapidfuzz.distance", "tools", "streamdedup explain").Levenshtein
        true_ld = Levenshtein.distance(ca, cb)
    grams = cmp.grams or exact_grams(ca, cb)
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
        "signature_lengths": [len(batch.signatures[0]), len(batch.signatures[1])],
        "signature_distance": cmp.ld.signature_distance,
        "ld_raw": cmp.ld.raw,
        "ld_calibrated": cmp.ld.calibrated,
        "ld_similarity_raw": cmp.ld.raw_similarity,
        "ld_similarity_calibrated": cmp.ld.similarity,
        "expected_unrelated_ld": cmp.ld.expected_unrelated,
        "signature_embedding_similarity": cmp.embedding_similarity,
        # exact character evidence: always shown here (the engine asks only below ld_min_jaccard)
        "exact_evidence": list(grams[:3]),
        # a short copy's exact evidence (the engine asks for a text at most half the other's)
        "exact_8gram_containment_b_in_a": list(grams[3:]),
        "band_keys_shared": [judged.shared_keys, int(batch.index_keys.shape[1])],
        "anchor_keys_shared": judged.shared_anchors,
        "proposed": judged.proposed,
        "relation": cmp.relation,
        "is_duplicate": judged.is_duplicate,
        "reasons": list(cmp.reasons) if judged.proposed else
        ["never a candidate: no band or anchor key in common", *(f"verification alone: {r}" for r in cmp.reasons)],
        # as the engine reads a pair it links: B revises A (verify.revisions; not looked for when off)
        "revision": _revision(ca, cb) if judged.is_duplicate and cfg.verify.revisions != "off" else None,
    }


def _revision(ca: bytes, cb: bytes) -> dict:
    r = detect_bytes(ca, cb)
    return {"revised": r.revised, "kinds": list(r.kinds), "changed": list(r.changed), "partial": r.partial}


@click.command()
@click.argument("file_a", type=click.Path(exists=True, dir_okay=False))
@click.argument("file_b", type=click.Path(exists=True, dir_okay=False))
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def explain(file_a: str, file_b: str, config_path: str | None, as_json: bool) -> None:
    """Explain how FILE_B (the newer text) relates to FILE_A.

    The verdict is the engine's for a stream of FILE_A then FILE_B: the pair must share a band
    key to be verified at all, and FILE_A is compared as the engine stores it."""
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
    row(f"MinHash Jaccard estimate (A's slots as stored: {cfg.fingerprint.minhash.storage_bits} bits)", out["minhash_jaccard"])
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
    row("exact 8-gram containment B in A / digits as 0", out["exact_8gram_containment_b_in_a"])
    row("band keys shared (main, lead, character) / of", out["band_keys_shared"])
    console = make_console()
    console.print(table)
    verdict = "DUPLICATE" if out["is_duplicate"] else "not a duplicate"
    rev = out["revision"]
    if rev and rev["revised"]:
        verdict = f"REVISION ({', '.join(rev['kinds'])}: {'; '.join(rev['changed'])})"
    relation = out["relation"] if out["proposed"] else "not a candidate"
    console.print(f"verdict: [bold]{relation}[/bold] -> {verdict} ({'; '.join(out['reasons'])})")
