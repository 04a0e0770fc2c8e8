"""The run manifest (`<run>/manifest.json`): what a training team needs to consume a run.

``build_manifest(run_dir, recipe=..., recipe_hash=..., inputs=[...], tier_weights={...})`` lists
every shard (rows, bytes, tokens, sha256, partition), totals by source / tier / language, the
mixture plan (tier repetition factors and the tokens each tier contributes), the resolved recipe
and its hash, the input files with checksums, and excluded counts by reason. It only reads
finished files (``shard-*.parquet``, ``excluded/part-*.parquet``); temporary files are ignored.
The manifest is written atomically and is deterministic (no timestamps), so two runs of the same
recipe on the same inputs produce the same manifest.

Mixture plan: a tier's ``weight`` is its repetition factor (epochs over that tier's tokens);
``effective_tokens = tokens * weight`` and ``share = effective_tokens / sum(effective_tokens)``.
Tiers present in the shards but absent from ``tier_weights`` get weight 1.0 (flagged ``default``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

MANIFEST_VERSION = 1
OUTPUT_DIR = "output"
EXCLUDED_DIR = "excluded"
from assay.stages.decisions.spec import STAGES as STAGE_ORDER  # noqa: E402 (the decision order)


def file_sha256(path: Path, *, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _partition_of(rel: Path) -> dict[str, str]:
    out = {}
    for part in rel.parent.parts:
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


def _kv_metadata(pf) -> dict[str, str]:
    md = pf.schema_arrow.metadata or {}
    return {k.decode(): v.decode() for k, v in md.items() if k.startswith(b"assay.")}


def shard_entries(run_dir: Path, *, checksums: bool = True) -> list[dict[str, Any]]:
    """One entry per finished shard under ``<run>/output`` (sorted by path)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = Path(run_dir) / OUTPUT_DIR
    entries = []
    for path in sorted(root.rglob("shard-*.parquet")) if root.exists() else []:
        rel = path.relative_to(root)
        pf = pq.ParquetFile(path)
        cols = pf.read(columns=["token_count", "n_chars", "n_bytes", "source", "tier", "language"])
        part = _partition_of(rel)
        kv = _kv_metadata(pf)
        one = lambda c: (cols.column(c)[0].as_py() if cols.num_rows else None)  # noqa: E731
        stem = path.stem.split("-")  # shard-<rank>-<k>
        entries.append(
            {
                "path": f"{OUTPUT_DIR}/{rel.as_posix()}",
                "source": part.get("source", one("source")),
                "tier": part.get("tier", one("tier")),
                "language": part.get("language", one("language")),
                "rank": int(stem[1]) if len(stem) == 3 and stem[1].isdigit() else None,
                "rows": pf.metadata.num_rows,
                "row_groups": pf.metadata.num_row_groups,
                "bytes": path.stat().st_size,
                "text_bytes": int(pc.sum(cols.column("n_bytes")).as_py() or 0),
                "row_bytes": int(kv["assay.row_bytes"]) if "assay.row_bytes" in kv else None,
                "chars": int(pc.sum(cols.column("n_chars")).as_py() or 0),
                "tokens": int(pc.sum(cols.column("token_count")).as_py() or 0),
                "token_count_method": kv.get("assay.token_count_method"),
                "sha256": file_sha256(path) if checksums else None,
            }
        )
    return entries


def exclusion_summary(run_dir: Path) -> dict[str, Any]:
    """Excluded documents and tokens by reason, stage and source (from ``<run>/excluded``)."""
    import pyarrow.parquet as pq

    root = Path(run_dir) / EXCLUDED_DIR
    files = sorted(root.rglob("part-*.parquet")) if root.exists() else []
    by_reason: dict[str, dict[str, Any]] = {}
    by_source: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    by_stage: dict[str, dict[str, int]] = {}
    methods = set()
    docs = toks = 0
    for f in files:
        pf = pq.ParquetFile(f)
        methods.add(_kv_metadata(pf).get("assay.token_count_method"))
        t = pf.read(columns=["source", "reason", "stage", "token_count"])
        for src, reason, stage, tc in zip(*(t.column(c).to_pylist() for c in ("source", "reason", "stage", "token_count"))):
            r = by_reason.setdefault(reason, {"documents": 0, "tokens": 0, "stage": stage})
            r["documents"] += 1
            r["tokens"] += tc
            s = by_source[src].setdefault(reason, {"documents": 0, "tokens": 0})
            s["documents"] += 1
            s["tokens"] += tc
            g = by_stage.setdefault(stage, {"documents": 0, "tokens": 0})
            g["documents"] += 1
            g["tokens"] += tc
            docs += 1
            toks += tc
    methods.discard(None)
    return {
        "documents": docs,
        "tokens": toks,
        "token_count_method": (methods.pop() if len(methods) == 1 else ("mixed" if methods else None)),
        "by_reason": dict(sorted(by_reason.items(), key=lambda kv: (-kv[1]["documents"], kv[0]))),
        "by_stage": {k: by_stage[k] for k in sorted(by_stage, key=lambda s: (STAGE_ORDER.index(s) if s in STAGE_ORDER else 99, s))},
        "by_source": {k: dict(sorted(v.items())) for k, v in sorted(by_source.items())},
        "files": [f"{EXCLUDED_DIR}/{p.relative_to(root).as_posix()}" for p in files],
    }


def _totals(entries: Iterable[dict], key: str | None) -> dict:
    acc: dict[str, dict[str, int]] = {}
    for e in entries:
        k = "all" if key is None else str(e[key])
        a = acc.setdefault(k, {"documents": 0, "tokens": 0, "bytes": 0, "chars": 0, "shards": 0})
        a["documents"] += e["rows"]
        a["tokens"] += e["tokens"]
        a["bytes"] += e["bytes"]
        a["chars"] += e["chars"]
        a["shards"] += 1
    return dict(sorted(acc.items()))


def mixture_plan(entries: list[dict], tier_weights: dict[str, float]) -> dict[str, Any]:
    """Tokens per tier and what each contributes under its repetition factor."""
    tiers = _totals(entries, "tier")
    names = list(dict.fromkeys([*tier_weights.keys(), *tiers.keys()]))
    plan: dict[str, dict[str, Any]] = {}
    for t in names:
        tokens = tiers.get(t, {}).get("tokens", 0)
        weight = float(tier_weights.get(t, 1.0))
        plan[t] = {
            "tokens": tokens,
            "documents": tiers.get(t, {}).get("documents", 0),
            "weight": weight,
            "weight_source": "recipe" if t in tier_weights else "default",
            "effective_tokens": int(round(tokens * weight)),
        }
    total_eff = sum(p["effective_tokens"] for p in plan.values())
    for p in plan.values():
        p["share"] = (p["effective_tokens"] / total_eff) if total_eff else 0.0
    by_source_tier: dict[str, dict[str, int]] = defaultdict(dict)
    for e in entries:
        w = float(tier_weights.get(e["tier"], 1.0))
        d = by_source_tier[e["source"]]
        d[e["tier"]] = d.get(e["tier"], 0) + int(round(e["tokens"] * w))
    return {
        "definition": "weight = repetition factor of the tier; effective_tokens = tokens * weight; "
        "share = effective_tokens / total_effective_tokens",
        "tiers": plan,
        "total_tokens": sum(p["tokens"] for p in plan.values()),
        "total_effective_tokens": total_eff,
        "effective_tokens_by_source_tier": {k: dict(sorted(v.items())) for k, v in sorted(by_source_tier.items())},
    }


# fsspec file systems whose files are hashed for the manifest (reading them costs no network transfer)
CHEAP_PROTOCOLS = ("file", "local", "memory")


def input_entries(inputs: Iterable[Path | str]) -> list[dict[str, Any]]:
    """Every input file (directories expanded recursively) with size and sha256. fsspec URLs are listed as
    URLs: with size and sha256 on cheap file systems (``file://``, ``memory://``), with size only (``remote:
    true``, ``sha256: null``) on remote ones (``s3://``, ``hf://`` ...), where hashing would download the data."""
    from assay.pipeline.inputs import expand_inputs, input_exists, is_url

    files = []
    for p in inputs:
        got = expand_inputs([p])
        files.extend(got if got or input_exists(p) else [p])  # a path that is not there is recorded as missing
    from assay.stages.common.readers import escape_text

    out, seen = [], set()
    for f in files:
        if is_url(f):
            if f not in seen:
                seen.add(f)
                out.append(_url_entry(f))
            continue
        f = Path(f)
        key = str(f.resolve()) if f.exists() else str(f)
        if key in seen:
            continue
        seen.add(key)
        name, raw = escape_text(str(f))  # a non-UTF-8 file name: escaped, raw bytes kept (hex)
        extra = {"path_raw": raw.hex()} if raw is not None else {}
        if f.is_file():
            out.append({"path": name, **extra, "bytes": f.stat().st_size, "sha256": file_sha256(f)})
        else:
            out.append({"path": name, **extra, "bytes": None, "sha256": None, "missing": True})
    return out


def _url_entry(url: str) -> dict[str, Any]:
    from assay.pipeline.inputs import url_fs

    try:
        fs, inner = url_fs(url)
        info = fs.info(inner)
    except Exception:  # noqa: BLE001 - gone or unreachable since the run read it
        return {"path": url, "bytes": None, "sha256": None, "missing": True}
    size = info.get("size")
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if not set(protocols) & set(CHEAP_PROTOCOLS):
        return {"path": url, "bytes": size, "sha256": None, "remote": True}
    h = hashlib.sha256()
    with fs.open(inner, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return {"path": url, "bytes": size, "sha256": h.hexdigest()}


def shard_schema_description(run_dir: Path | None = None) -> list[dict[str, Any]]:
    """The shards' schema (read from a shard of the run: the typed `signals` struct is the run's own)."""
    import pyarrow.parquet as pq

    from assay.stages.output.shards import shard_schema

    shards = sorted((Path(run_dir) / OUTPUT_DIR).rglob("shard-*.parquet")) if run_dir is not None else []
    schema = pq.read_schema(shards[0]) if shards else shard_schema()
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]


def summarize_outputs(run_dir: Path, *, tier_weights: dict[str, float] | None = None, checksums: bool = True) -> dict:
    """The data part of the manifest (shards, totals, mixture, exclusions), without recipe/inputs."""
    entries = shard_entries(run_dir, checksums=checksums)
    methods = {e["token_count_method"] for e in entries} - {None}
    return {
        "output": {
            "root": OUTPUT_DIR,
            "format": "parquet",
            "compression": "zstd",
            "layout": "hive: source=<source>/tier=<tier>/language=<language>/shard-<rank>-<k>.parquet",
            "schema_version": 1,
            "schema": shard_schema_description(run_dir),
            "token_count_method": methods.pop() if len(methods) == 1 else ("mixed" if methods else None),
        },
        "shards": entries,
        "totals": _totals(entries, None).get("all", {"documents": 0, "tokens": 0, "bytes": 0, "chars": 0, "shards": 0}),
        "by_source": _totals(entries, "source"),
        "by_tier": _totals(entries, "tier"),
        "by_language": _totals(entries, "language"),
        "by_source_tier": {
            s: _totals([e for e in entries if e["source"] == s], "tier") for s in sorted({e["source"] for e in entries})
        },
        "mixture": mixture_plan(entries, tier_weights or {}),
        "excluded": exclusion_summary(run_dir),
    }


def write_json_atomically(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=False, ensure_ascii=False, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def build_manifest(
    run_dir: Path,
    *,
    recipe: dict,
    recipe_hash: str,
    inputs: list[Path],
    tier_weights: dict[str, float],
) -> dict:
    """Build ``<run_dir>/manifest.json`` from the finished shards and exclusions; returns the dict."""
    run_dir = Path(run_dir)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "recipe_sha256": recipe_hash,
        "recipe": recipe,
        "inputs": input_entries(inputs),
        **summarize_outputs(run_dir, tier_weights=tier_weights),
    }
    write_json_atomically(manifest, run_dir / "manifest.json")
    return manifest


def load_manifest(run_dir: Path) -> dict | None:
    p = Path(run_dir) / "manifest.json"
    if not p.exists():
        return None
    return json.loads(p.read_text(encoding="utf-8"))
