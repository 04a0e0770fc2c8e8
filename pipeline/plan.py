"""Repetition plan (`assay plan RUN --tokens 1T`): epochs per source x tier x language slice.

Inputs: the run's manifest (tokens per shard, partitioned by source/tier/language; tier weights in
``mixture.tiers``) and the recipe's ``plan`` section (``max_repeats``, ``source_weights``, ``seed``).

Epochs. A slice's weight is ``tier weight x source weight``. With a token budget ``T`` the plan
finds one factor ``k`` so that ``sum(tokens_s * min(k * weight_s, max_repeats)) = T`` (water
filling: slices that hit the cap stay there and the rest of the budget goes to the others). Without
a budget a slice's epochs are its weight (the manifest's mixture semantics), capped. A warning is
raised for each slice whose uncapped epochs would exceed ``max_repeats`` ("Scaling
Data-Constrained Language Models": up to about 4 epochs cost little, beyond that returns fall
fast), and when the budget cannot be reached at the cap.

Near-duplicates across repeats. Dedup keeps one member per fuzzy-duplicate cluster, but a cluster
can still have several kept members (exact/near passes that disagree, earlier-run indexes,
increments, sources deduplicated apart). Repeating each member's slice would then repeat the same
content ``sum(member epochs)`` times. The plan reads ``dedup__cluster_id`` from the kept shards'
signals, and for every cluster with more than one kept member caps the cluster's exposures at the
largest member epoch count (the content is seen as often as its most-repeated slice asks, not once
more per near-duplicate), spreading them over the members in a deterministic order. Those
per-document copy counts are written to ``plan.json`` (``clusters.repeats``); the packer applies them.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from datatrove.pipeline.base import PipelineStep

from assay.pipeline.manifest import load_manifest, write_json_atomically
from assay.stages.output.pack import repeats_for

PLAN_FILE = "plan.json"
PLAN_VERSION = 1
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_tokens(value: str | int | float | None) -> int | None:
    """``1T``, ``500B``, ``20M``, ``3.5k``, ``1e9`` or an int -> tokens."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", str(value))
    if not m:
        raise ValueError(f"not a token count: {value!r} (use e.g. 1T, 500B, 20M)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def slices_from_manifest(manifest: dict) -> list[dict[str, Any]]:
    acc: dict[tuple[str, str, str], dict[str, int]] = {}
    shards = [*manifest.get("shards", []), *(sh for inc in manifest.get("increments", []) for sh in inc.get("shards", []))]
    for sh in shards:
        key = (str(sh["source"]), str(sh["tier"]), str(sh["language"]))
        a = acc.setdefault(key, {"documents": 0, "tokens": 0})
        a["documents"] += int(sh["rows"])
        a["tokens"] += int(sh["tokens"])
    return [{"source": s, "tier": t, "language": lang, **v} for (s, t, lang), v in sorted(acc.items())]


def solve_epochs(tokens: list[int], weights: list[float], *, budget: int | None, max_repeats: float) -> tuple[list[float], float | None]:
    """Epochs per slice (see module docstring) and the factor ``k`` (None without a budget)."""
    cap = float(max_repeats)
    if budget is None:
        return [min(w, cap) for w in weights], None
    live = [i for i, (t, w) in enumerate(zip(tokens, weights)) if t > 0 and w > 0]
    if not live:
        return [0.0] * len(tokens), 0.0
    capped: set[int] = set()
    k = 0.0
    while True:
        rest = budget - sum(tokens[i] * cap for i in capped)
        denom = sum(tokens[i] * weights[i] for i in live if i not in capped)
        if denom <= 0:
            break
        k = max(rest, 0) / denom
        newly = {i for i in live if i not in capped and k * weights[i] > cap}
        if not newly:
            break
        capped |= newly
    epochs = [0.0] * len(tokens)
    for i in live:
        epochs[i] = cap if i in capped else k * weights[i]
    return epochs, k


def output_folders(run_dir: Path) -> list[Path]:
    """``<run>/output`` and the output folders of the run's increments (``increments/NNNN/output``)."""
    run_dir = Path(run_dir)
    return [run_dir / "output", *sorted(p / "output" for p in (run_dir / "increments").glob("[0-9]*"))]


def run_shards(run_dir: Path) -> list[Path]:
    return [p for folder in output_folders(run_dir) if folder.exists() for p in sorted(folder.rglob("shard-*.parquet"))]


def _kept_clusters(run_dir: Path) -> dict[str, list[tuple[str, str, int]]]:
    """cluster id -> [(doc id, slice key, tokens)] for clusters with more than one kept member."""
    import pyarrow.parquet as pq

    members: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for p in run_shards(run_dir):
        t = pq.read_table(p, columns=["id", "source", "tier", "language", "token_count", "signals"]).to_pydict()
        for i, sig in enumerate(t["signals"]):
            # a typed struct (dict) in current shards; a JSON string in shards written before it
            sig = sig if isinstance(sig, dict) else json.loads(sig or "{}")
            cid = (sig or {}).get("dedup__cluster_id")
            if cid is None:
                continue
            key = f"{t['source'][i]}/{t['tier'][i]}/{t['language'][i]}"
            members[str(cid)].append((t["id"][i], key, int(t["token_count"][i])))
    return {c: m for c, m in members.items() if len(m) > 1}


def cluster_caps(clusters: dict[str, list[tuple[str, str, int]]], epochs: dict[str, float], seed: int) -> dict[str, Any]:
    """Per-document copies for clusters whose kept members would repeat the same content more often
    than its most-repeated slice: the cluster gets ``max(member copies)`` exposures in all."""
    import xxhash

    repeats: dict[str, int] = {}
    before = after = tokens_before = tokens_after = capped = 0
    for cid in sorted(clusters):
        mem = clusters[cid]
        want = [repeats_for(d, epochs.get(k, 1.0), seed) for d, k, _ in mem]
        total, allowed = sum(want), max(want)
        before += total
        tokens_before += sum(w * n for w, (_, _, n) in zip(want, mem))
        if total <= allowed:
            after += total
            tokens_after += sum(w * n for w, (_, _, n) in zip(want, mem))
            continue
        capped += 1
        # highest-epoch members first, then a seeded hash of the id (deterministic)
        order = sorted(range(len(mem)), key=lambda j: (-want[j], xxhash.xxh3_64_intdigest(f"{seed}:{mem[j][0]}".encode())))
        got = [0] * len(mem)
        left = allowed
        while left > 0:
            for j in order:
                if left and got[j] < want[j]:
                    got[j] += 1
                    left -= 1
        for j, (d, _, n) in enumerate(mem):
            repeats[d] = got[j]
            after += got[j]
            tokens_after += got[j] * n
    return {
        "definition": "clusters with more than one kept member: exposures capped at the largest member's copies",
        "clusters_with_several_kept_members": len(clusters),
        "clusters_capped": capped,
        "copies_before": before,
        "copies_after": after,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "repeats": repeats,
    }


def build_plan(run_dir: Path, *, tokens: str | int | None = None, max_repeats: float | None = None,
               source_weights: dict[str, float] | None = None, seed: int | None = None, write: bool = True) -> dict:
    """Compute (and write ``<run>/plan.json``) the repetition plan of a finished run."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    if manifest is None:
        raise FileNotFoundError(f"no manifest.json in {run_dir}: run the recipe first")
    spec = (manifest.get("recipe") or {}).get("plan") or {}
    max_repeats = float(max_repeats if max_repeats is not None else spec.get("max_repeats", 4.0))
    if max_repeats <= 0:
        raise ValueError("max_repeats must be > 0")
    source_weights = {**(spec.get("source_weights") or {}), **(source_weights or {})}
    seed = int(seed if seed is not None else spec.get("seed", 0))
    budget = parse_tokens(tokens if tokens is not None else spec.get("tokens"))
    tier_w = {t: float(v.get("weight", 1.0)) for t, v in (manifest.get("mixture", {}).get("tiers") or {}).items()}

    slices = slices_from_manifest(manifest)
    weights = [tier_w.get(s["tier"], 1.0) * float(source_weights.get(s["source"], 1.0)) for s in slices]
    uncapped, k = solve_epochs([s["tokens"] for s in slices], weights, budget=budget, max_repeats=math.inf)
    epochs, k = solve_epochs([s["tokens"] for s in slices], weights, budget=budget, max_repeats=max_repeats)
    warnings: list[str] = []
    for s, w, e, u in zip(slices, weights, epochs, uncapped):
        s.update(weight=w, epochs=round(e, 6), wanted_epochs=round(u, 6) if math.isfinite(u) else None,
                 planned_tokens=int(round(s["tokens"] * e)), capped=u > max_repeats + 1e-9)
    capped_groups: dict[tuple[str, str, float], list[str]] = {}
    for s in slices:
        if s["capped"]:
            capped_groups.setdefault((s["source"], s["tier"], round(s["wanted_epochs"], 2)), []).append(s["language"])
    for (src, tier, u), langs in sorted(capped_groups.items()):
        shown = ", ".join(langs[:6]) + (f" and {len(langs) - 6} more" if len(langs) > 6 else "")
        warnings.append(f"{src}/{tier} ({shown}) would repeat {u:.2f}x (> max_repeats {max_repeats:g}); "
                        f"capped at {max_repeats:g}x")
    planned = sum(s["planned_tokens"] for s in slices)
    unique = sum(s["tokens"] for s in slices)
    if budget is not None and planned < budget * 0.999:
        warnings.append(f"token budget {budget:,} not reachable at max_repeats {max_repeats:g}: "
                        f"{planned:,} planned from {unique:,} unique tokens")
    by_key = {f"{s['source']}/{s['tier']}/{s['language']}": s["epochs"] for s in slices}
    clusters = cluster_caps(_kept_clusters(run_dir), by_key, seed)
    if clusters["clusters_capped"]:
        warnings.append(f"{clusters['clusters_capped']} fuzzy-duplicate cluster(s) with several kept members: "
                        f"copies capped {clusters['copies_before']} -> {clusters['copies_after']}")

    def rollup(key: str) -> dict[str, dict[str, Any]]:
        acc: dict[str, dict[str, Any]] = {}
        for s in slices:
            a = acc.setdefault(s[key], {"tokens": 0, "planned_tokens": 0})
            a["tokens"] += s["tokens"]
            a["planned_tokens"] += s["planned_tokens"]
        for a in acc.values():
            a["epochs"] = round(a["planned_tokens"] / a["tokens"], 6) if a["tokens"] else 0.0
        return dict(sorted(acc.items()))

    plan = {
        "plan_version": PLAN_VERSION,
        "recipe_sha256": manifest.get("recipe_sha256"),
        "token_count_method": manifest.get("output", {}).get("token_count_method"),
        "budget_tokens": budget,
        "max_repeats": max_repeats,
        "source_weights": source_weights,
        "seed": seed,
        "factor": k,
        "definition": "weight = tier weight x source weight; epochs = min(factor x weight, max_repeats), the factor "
                      "chosen so planned tokens meet the budget (without a budget: epochs = weight, capped); "
                      "a document gets floor(epochs) copies plus one for a seeded share frac(epochs)",
        "unique_tokens": unique,
        "planned_tokens": planned,
        "slices": slices,
        "by_source": rollup("source"),
        "by_tier": rollup("tier"),
        "by_language": rollup("language"),
        "clusters": clusters,
        "warnings": warnings,
    }
    if write:
        write_json_atomically(plan, run_dir / PLAN_FILE)
    return plan


def load_plan(run_dir: Path) -> dict | None:
    p = Path(run_dir) / PLAN_FILE
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def plan_table(plan: dict):
    """The plan as a rich table (for the terminal)."""
    from rich.table import Table

    t = Table(title=f"repetition plan (budget {plan['budget_tokens'] or 'none'}, max repeats {plan['max_repeats']:g})",
              title_justify="left")
    for col in ("source", "tier", "language", "weight", "tokens", "epochs", "planned tokens"):
        t.add_column(col, justify="left" if col in ("source", "tier", "language") else "right")
    for s in plan["slices"]:
        t.add_row(s["source"], s["tier"], s["language"], f"{s['weight']:g}", f"{s['tokens']:,}",
                  f"{s['epochs']:.2f}" + (" capped" if s["capped"] else ""), f"{s['planned_tokens']:,}")
    t.add_row("total", "", "", "", f"{plan['unique_tokens']:,}", "", f"{plan['planned_tokens']:,}")
    return t


class PlanStep(PipelineStep):
    """One-task phase of a recipe with ``pack.enabled``: the plan from the recipe's ``plan`` section."""

    name = "📐 assay plan"
    type = "🔢 - TOKENIZER"

    def __init__(self, run_dir: str):
        super().__init__()
        self.run_dir = run_dir

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        from assay.pipeline.report import render_report

        plan = build_plan(Path(self.run_dir))
        for _ in plan["warnings"]:
            self.stat_update("plan_warnings")
        render_report(Path(self.run_dir))
        return
        yield
