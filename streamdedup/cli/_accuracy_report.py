"""The tables ``streamdedup bench accuracy`` prints (both suites)."""

from __future__ import annotations

from rich.table import Table


def print_accuracy(console, res: dict) -> None:
    console.print(
        f"{res['suite']} suite, stream {res['stream']:,} docs: {res['natural_duplicates']} natural duplicates, "
        f"{res['synthetic']} synthetic copies, {res['hard_negatives']} hard negatives; "
        f"{res['ambiguous']} ambiguous natural docs left out of the scores"
    )
    ds = res.get("datasketch", {})
    table = Table("system", "precision", "recall", "F1", "hard negatives flagged", "natural recall")
    s = res["streamdedup"]
    counts = s["count_per_kind"]
    if ds:
        console.print(f"datasketch MinHashLSH on {res['datasketch_shingles']} of the canonical text")
    for name, d in (("streamdedup (config)", s), *((f"datasketch MinHashLSH t={t}", d) for t, d in ds.items())):
        flagged = sum(r * counts[k] for k, r in d["flagged_per_negative_kind"].items())
        share = flagged / res["hard_negatives"] if res["hard_negatives"] else 0.0
        table.add_row(name, f"{d['precision']:.4f}", f"{d['recall']:.4f}", f"{d['f1']:.4f}", f"{share * 100:.1f}%",
                      f"{d['recall_natural']:.3f}")
    console.print(table)
    revised = res.get("revisions_per_kind", {})
    kinds = Table("copy kind", "n", "recall (streamdedup)", "of it revisions", *(f"datasketch {t}" for t in ds))
    for kind, r in sorted(s["recall_per_kind"].items()):
        kinds.add_row(kind, str(counts[kind]), f"{r:.3f}", f"{revised.get(kind, 0):.3f}",
                      *(f"{d['recall_per_kind'].get(kind, 0):.3f}" for d in ds.values()))
    console.print(kinds)
    console.print("recall counts a copy linked to its source as a duplicate or as a revision (a copy whose figures, "
                  "negations, names or markers changed, or with new paragraphs); duplicates only: recall minus revisions")
    negatives = Table("negative kind", "n", "flagged (streamdedup)", *(f"datasketch {t}" for t in ds))
    for kind, r in sorted(s["flagged_per_negative_kind"].items()):
        negatives.add_row(kind, str(counts[kind]), f"{r * 100:.1f}%",
                          *(f"{d['flagged_per_negative_kind'].get(kind, 0) * 100:.1f}%" for d in ds.values()))
    console.print(negatives)
    console.print(f"duplicate_of names the source's cluster root for {res['duplicate_of_correct'] * 100:.1f}% of caught copies")
    if res["suite"] != "standard":
        _print_misses(console, res)


def _print_misses(console, res: dict) -> None:
    overlap = res["overlap_per_kind"]
    unit = "character 5-gram" if res["suite"] in ("zh", "ja", "th") else "word 5-shingle"
    table = Table("copy kind", "missed", f"exact {unit} J (median, all copies)", "where the missed copies were lost")
    for kind, m in sorted(res["missed_per_kind"].items()):
        j = overlap[kind]["median_jaccard"]
        table.add_row(kind, str(sum(m["stages"].values())), "-" if j is None else f"{j:.3f}",
                      "; ".join(f"{n} {stage}" for stage, n in sorted(m["stages"].items(), key=lambda x: -x[1])))
    console.print("missed copies against their source, each pair alone (see streamdedup.bench.hard_report):")
    console.print(table)
    for kind, fps in sorted(res["false_positives_per_kind"].items()):
        for fp in fps:
            console.print(f"  false positive ({kind}): {fp}")


def print_revisions(console, res: dict) -> None:
    """``--suite revisions``: per kind, the share the engine links and, among those, the share
    whose status is its label; then Reuters' own corrections."""
    console.print(f"revisions suite, seed {res['seed']}: Reuters stream {res['reuters_stream']:,} docs, "
                  f"People's Daily stream {res['zh_stream']:,} docs")
    table = Table("kind", "type", "n", "linked by the engine", "status as labelled (linked)", "test alone as labelled")
    for kind, k in res["kinds"].items():
        table.add_row(kind, k["type"], str(k["n"]), f"{k['linked']:.3f}", f"{k['as_wanted']:.3f}", f"{k['pair_as_wanted']:.3f}")
    console.print(table)
    console.print("as labelled: a revision has status revision, a cosmetic copy status duplicate; test alone: every "
                  "(source, item) pair with its headline's length, linked or not")
    cost = res["cost_us_per_linked_pair"]
    console.print("revision test per linked pair: " + ", ".join(f"{name} {us:.0f} us" for name, us in cost.items()))
    corrected = Table("Reuters CORRECTED story", "engine", "matched", "changed")
    for row in res["corrected_stories"]:
        corrected.add_row(f"{row['id']} {row['headline']}", row["engine"], row["matched"] or "-", "; ".join(row["changed"])[:80])
    console.print(corrected)


def print_short(console, res: dict) -> None:
    """``--suite short``: per kind, the share flagged and where the missed copies were lost."""
    console.print(f"short suite, seed {res['seed']}: Reuters stream {res['reuters_stream']:,} docs, "
                  f"People's Daily stream {res['zh_stream']:,} docs")
    table = Table("kind", "n", "flagged", "source's cluster", "missed copies: where lost (the pair alone)")
    for kind, k in res["kinds"].items():
        lost = "; ".join(f"{n} {stage}" for stage, n in sorted(k["missed_at"].items(), key=lambda x: -x[1]))
        table.add_row(kind, str(k["n"]), f"{k['flagged_share']:.3f}", f"{k['source_cluster'] / k['n']:.3f}" if k["n"] else "-",
                      lost or "-")
    console.print(table)
    console.print(f"near misses flagged: {res['near_misses_flagged'] * 100:.1f}%")
