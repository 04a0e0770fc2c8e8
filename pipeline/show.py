"""Read what a run kept or dropped: ``assay show RUN_DIR --tier X --sample N``.

``show(run_dir, tier=..., source=..., excluded=False, sample=5, seed=0)`` returns sampled
documents as dicts (id, source, tier, language, reason, text, signals...) and ``print_documents``
prints them with rich. Sampling is deterministic: the documents matching the filters are ranked
by ``xxh3_64(f"{seed}:{id}")`` and the first ``sample`` are returned (same seed, same sample).

Kept documents come from the shards (``output/``); excluded ones from ``excluded/``, with their
text (and full signal row) looked up in the signal store (``signals/``) when the exclusion files
do not store text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.stages.output.shards import shuffle_key


def _files(run_dir: Path, excluded: bool) -> list[Path]:
    if excluded:
        return sorted((run_dir / "excluded").rglob("part-*.parquet"))
    return sorted((run_dir / "output").rglob("shard-*.parquet"))


def _signal_store_rows(run_dir: Path, ids: set[str]) -> dict[str, dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    found: dict[str, dict[str, Any]] = {}
    for part in sorted((run_dir / "signals").glob("part-*.parquet")):
        if len(found) == len(ids):
            break
        t = pq.read_table(part)
        if "id" not in t.column_names:
            continue
        mask = pc.is_in(t.column("id").cast("string"), value_set=pa.array(sorted(ids)))
        for row in t.filter(mask).to_pylist():
            found[str(row["id"])] = row
    return found


def show(
    run_dir: Path,
    *,
    tier: str | None = None,
    source: str | None = None,
    excluded: bool = False,
    reason: str | None = None,
    sample: int = 5,
    seed: int = 0,
) -> list[dict]:
    """Sampled documents of a run (kept by default; ``excluded=True`` for dropped ones)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    candidates: list[tuple[int, str, Path]] = []
    for f in _files(run_dir, excluded):
        cols = ["id", "source", "tier"] + (["reason"] if excluded else [])
        t = pq.read_table(f, columns=cols)
        mask = None
        for col, want in (("tier", tier), ("source", source), ("reason", reason if excluded else None)):
            if want is not None:
                m = pc.equal(t.column(col), want)
                mask = m if mask is None else pc.and_(mask, m)
        if mask is not None:
            t = t.filter(mask)
        for doc_id in t.column("id").to_pylist():
            candidates.append((shuffle_key(doc_id, seed), doc_id, f))
    candidates.sort()
    chosen = candidates[: max(0, sample)]
    if not chosen:
        return []
    by_file: dict[Path, set[str]] = {}
    for _, doc_id, f in chosen:
        by_file.setdefault(f, set()).add(doc_id)
    rows: dict[str, dict[str, Any]] = {}
    for f, ids in by_file.items():
        import pyarrow as pa

        t = pq.read_table(f)
        t = t.filter(pc.is_in(t.column("id"), value_set=pa.array(sorted(ids))))
        for r in t.to_pylist():
            sig = r.get("signals")
            r["signals"] = ({k: v for k, v in sig.items() if v is not None} if isinstance(sig, dict)
                            else json.loads(sig or "{}"))
            if "provenance" in r:
                r["provenance"] = json.loads(r.get("provenance") or "{}")
            r["file"] = str(f.relative_to(run_dir))
            if not excluded:
                r["reason"] = None
            rows[r["id"]] = r
    if excluded:
        missing = {i for i, r in rows.items() if r.get("text") is None}
        if missing:
            store = _signal_store_rows(run_dir, missing)
            for i in missing:
                if i in store:
                    rows[i]["text"] = store[i].get("text")
                    extra = {k: v for k, v in store[i].items()
                             if "__" in k and v is not None and k not in rows[i]["signals"]}
                    rows[i]["signals"].update(extra)
    return [rows[doc_id] for _, doc_id, _ in chosen if doc_id in rows]


def print_documents(docs: list[dict], *, max_chars: int = 1200, console=None) -> None:
    """Print documents with their signals (rich panels)."""
    from rich.console import Console, Group
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    console = console or Console()
    if not docs:
        console.print("[yellow]no documents match[/yellow]")
        return
    for d in docs:
        meta = Table.grid(padding=(0, 1))
        meta.add_column(style="bold")
        meta.add_column()
        for k in ("id", "source", "tier", "language", "reason", "stage", "duplicate_of", "url_or_path", "token_count", "n_chars", "file"):
            if d.get(k) is not None:
                meta.add_row(k, escape(str(d[k])))
        sig = Table(show_header=True, header_style="bold", box=None)
        sig.add_column("signal")
        sig.add_column("value", overflow="fold")
        for k, v in sorted((d.get("signals") or {}).items()):
            sig.add_row(escape(k), f"{v:.4g}" if isinstance(v, float) else escape(str(v)))
        text = d.get("text")
        if text is None:
            body = "[dim](text not stored)[/dim]"
        else:
            body = escape(text[:max_chars])
            if len(text) > max_chars:
                body += f"\n[dim]… {len(text) - max_chars:,} more characters[/dim]"
        title = f"{'EXCLUDED ' + str(d.get('reason')) if d.get('reason') else 'kept'} · {d.get('source')} · tier {d.get('tier')}"
        console.print(Panel(Group(meta, sig, Panel(body, title="text")), title=escape(title)))
