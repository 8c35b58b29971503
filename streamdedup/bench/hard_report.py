"""Why copies of the hard suite were missed: each missed copy against its source, stage by stage.

For a pair (source, copy) :func:`diagnose` reports what each stage of the engine sees:

- the exact overlap of word shingles (the truth the sketches estimate);
- candidate generation: how many of the main LSH bands, the lead bands and the character bands have equal keys
  (the engine proposes the source only if at least one does, and the band is not hot with
  boilerplate; the index may also hold a later copy of the source instead);
- verification of that pair alone (:func:`streamdedup.engine.verify.compare`) with the source's MinHash
  cut to ``minhash.storage_bits`` as the engine stores it: the estimates, the relation and its
  reason; and the relation on full 32-bit slots, which is what ``streamdedup explain`` prints
  (the two differ for pairs near a threshold: b-bit slots add chance matches);
- the true Levenshtein distance of the canonical texts relative to the longer one.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from streamdedup._optional import require
from streamdedup.config import Config
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.engine.verify import Fingerprint, compare
from streamdedup.bench.truth import Item
from streamdedup.bench.hard_suite import overlap


def diagnose(cfg: Config, source_text: str, copy_text: str, fp: Fingerprinter | None = None) -> dict:
    Levenshtein = require("rapidfuzz.distance", "bench", "the miss diagnosis of streamdedup bench accuracy --suite hard").Levenshtein
    batch = (fp or Fingerprinter(cfg.fingerprint)).fingerprint_batch([source_text, copy_text])
    a, b = Fingerprint.from_batch(batch, 0), Fingerprint.from_batch(batch, 1)
    full = compare(a, b, cfg.verify, cfg.fingerprint.signature, full=True)
    bits = cfg.fingerprint.minhash.storage_bits
    if bits < 32:
        a = dataclasses.replace(a, minhash=a.minhash & np.uint32((1 << bits) - 1), minhash_bits=bits)
    cmp = compare(a, b, cfg.verify, cfg.fingerprint.signature, full=True)
    jac, c_copy, _ = overlap(copy_text, source_text, cfg.fingerprint.shingle.size)
    ca, cb = batch.canonical
    return {
        "exact_jaccard": round(jac, 3),
        "exact_containment": round(c_copy, 3),
        "shared_bands": int((batch.band_keys[0] == batch.band_keys[1]).sum()),
        "bands": int(batch.band_keys.shape[1]),
        "shared_lead_bands": int((batch.lead_keys[0] == batch.lead_keys[1]).sum()),
        "lead_bands": int(batch.lead_keys.shape[1]),
        "shared_char_bands": int((batch.char_keys[0] == batch.char_keys[1]).sum()),
        "char_bands": int(batch.char_keys.shape[1]),
        "minhash_jaccard": round(cmp.jaccard, 3),
        "containment_estimate": round(cmp.containment_b_in_a, 3),
        "ld_similarity": None if cmp.ld_similarity is None else round(cmp.ld_similarity, 3),
        "relation": cmp.relation,
        "reasons": list(cmp.reasons),
        "relation_full_slots": full.relation,
        "true_ld_ratio": round(Levenshtein.distance(ca, cb) / max(len(ca), len(cb), 1), 4),
        "copy_words": len(copy_text.split()),
        "source_words": len(source_text.split()),
    }


def _stage(d: dict, cfg: Config) -> str:
    """The first stage that lost the pair (as far as the pair alone shows it)."""
    if d["shared_bands"] == 0 and d["shared_lead_bands"] == 0 and d["shared_char_bands"] == 0:
        return "not proposed (no shared band)"
    by = "main bands" if d["shared_bands"] else "lead bands" if d["shared_lead_bands"] else "character bands only"
    if d["relation"] in cfg.verify.duplicate_relations:
        return f"proposed ({by}), verified alone: lost in the stream (hot band, candidate limits, cluster)"
    v = cfg.verify
    if d["ld_similarity"] is not None and d["ld_similarity"] >= v.ld_similarity_threshold and d["minhash_jaccard"] < v.ld_min_jaccard:
        why = f"LD similarity >= {v.ld_similarity_threshold} but Jaccard < ld_min_jaccard {v.ld_min_jaccard}"
    elif d["exact_containment"] >= v.containment_threshold and d["containment_estimate"] < v.contained_min_estimate:
        why = f"containment estimate < {v.contained_min_estimate} (exact >= {v.containment_threshold})"
    else:
        why = f"{d['relation']}, no estimate at a threshold"  # the examples carry the reasons with their numbers
    return f"proposed ({by}), rejected: {why}"


def misses(cfg: Config, stream: list[Item], flagged: list[bool], examples: int = 3) -> dict[str, dict]:
    """Per copy kind: how many missed copies fall at each stage, and a few diagnosed examples."""
    texts = {it.id: it.text for it in stream}
    fp = Fingerprinter(cfg.fingerprint)
    out: dict[str, dict] = defaultdict(lambda: {"stages": defaultdict(int), "examples": []})
    for it, f in zip(stream, flagged):
        if f or not it.truth or it.kind == "natural":
            continue
        d = diagnose(cfg, texts[it.source], it.text, fp)
        entry = out[it.kind]
        entry["stages"][_stage(d, cfg)] += 1
        if len(entry["examples"]) < examples:
            entry["examples"].append({"id": it.id, "source": it.source, **d})
    return {k: {"stages": dict(v["stages"]), "examples": v["examples"]} for k, v in out.items()}


def false_positives(stream: list[Item], flagged: list[bool], decisions: dict, examples: int = 3) -> dict[str, list]:
    """Per negative kind: a few flagged negatives, with what they were matched to."""
    out: dict[str, list] = defaultdict(list)
    for it, f in zip(stream, flagged):
        if f and it.truth is False and it.kind != "natural" and len(out[it.kind]) < examples:
            d = decisions[it.id]
            out[it.kind].append({"id": it.id, "borrowed_from": it.source, "duplicate_of": d.duplicate_of,
                                 "matched": d.matched, "relation": d.relation, "reason": d.reason})
    return dict(out)
