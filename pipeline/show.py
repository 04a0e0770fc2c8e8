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


def document_signals(row: dict[str, Any]) -> dict[str, Any]:
    """The signals of one shard/exclusion row as {name: value}. The one place that knows how rows
    store signals (today a JSON string column ``signals``; typed columns or a struct work too)."""
    raw = row.get("signals")
    if isinstance(raw, dict):
        return {k: v for k, v in raw.items() if v is not None}
    if isinstance(raw, str):
        return json.loads(raw or "{}")
    return {k: v for k, v in row.items() if "__" in k and v is not None}


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
            r["signals"] = document_signals(r)
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


def nothing_found(run_dir: Path, *, tier=None, source=None, excluded=False, reason=None) -> str:
    """Why nothing matched, with the values that would match something."""
    import pyarrow.parquet as pq

    cols = ["tier", "source"] + (["reason"] if excluded else [])
    seen: dict[str, dict[str, int]] = {c: {} for c in cols}
    for f in _files(Path(run_dir), excluded):
        t = pq.read_table(f, columns=[c for c in cols if c in pq.read_schema(f).names])
        for c in t.column_names:
            for v in t.column(c).to_pylist():
                seen[c][str(v)] = seen[c].get(str(v), 0) + 1
    what = "excluded" if excluded else "kept"
    asked = ", ".join(f"{k}={v}" for k, v in (("tier", tier), ("source", source), ("reason", reason)) if v)
    avail = "; ".join(
        f"{c}: " + ", ".join(f"{k} ({n})" for k, n in sorted(vals.items(), key=lambda kv: -kv[1]))
        for c, vals in seen.items() if vals
    )
    if not avail:
        return f"no {what} documents in {run_dir}"
    return f"no {what} documents match {asked or 'the filters'}; this run has {avail}"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def signal_groups(signals: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Signals grouped by their prefix (``prose__gopher__n_words`` -> group ``prose__gopher``)."""
    groups: dict[str, dict[str, Any]] = {}
    for k, v in sorted(signals.items()):
        group, _, name = k.rpartition("__")
        groups.setdefault(group or "other", {})[name] = v
    return groups


def signal_summary(signals: dict[str, Any], *, per_group: int = 4, width: int = 110) -> list[str]:
    """One line per signal group: its first values and how many more there are."""
    lines = []
    for group, vals in signal_groups(signals).items():
        shown, more = [], len(vals)
        for name, v in vals.items():
            item = f"{name}={_fmt(v)}"
            if len(shown) >= per_group or sum(len(x) + 2 for x in shown) + len(item) > width:
                break
            shown.append(item)
            more -= 1
        lines.append(f"{group} ({len(vals)}): " + "  ".join(shown) + (f"  +{more} more" if more else ""))
    return lines


def print_documents(docs: list[dict], *, max_chars: int = 1200, console=None, all_signals: bool = False) -> None:
    """Each document: a header line, its text, then its signals (grouped and compact unless
    ``all_signals``)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    if not docs:
        console.print("[yellow]no documents match[/yellow]")
        return
    for n, d in enumerate(docs, 1):
        state = f"EXCLUDED ({d.get('reason')})" if d.get("reason") else "kept"
        head = f"[{n}/{len(docs)}] {state} · {d.get('source')} · tier {d.get('tier')} · {d.get('language') or '?'}"
        console.print(escape(head), style="bold")
        meta = [f"{k}={d[k]}" for k in ("id", "url_or_path", "token_count", "n_chars", "duplicate_of", "stage", "file")
                if d.get(k) is not None]
        console.print(escape("  ".join(meta)), style="dim", soft_wrap=True)
        text = d.get("text")
        if text is None:
            body = "[dim](text not stored)[/dim]"
        else:
            body = escape(text[:max_chars])
            if len(text) > max_chars:
                body += f"\n[dim]… {len(text) - max_chars:,} more characters (--chars N)[/dim]"
        console.print("[dim]── text ──[/dim]")
        console.print(body, soft_wrap=True)
        console.print("[dim]── signals ──[/dim]")
        sig = d.get("signals") or {}
        if all_signals:
            t = Table(show_header=True, header_style="bold", box=None)
            t.add_column("signal")
            t.add_column("value", overflow="fold")
            for k, v in sorted(sig.items()):
                t.add_row(escape(k), escape(_fmt(v) if isinstance(v, float) else str(v)))
            console.print(t)
        else:
            console.print(f"{len(sig)} signals in {len(signal_groups(sig))} groups (--signals for all)", style="dim")
            for line in signal_summary(sig):
                console.print("  " + escape(line), soft_wrap=True)
        console.print()
