"""The funnel report of a run: ``<run>/report.html`` (self-contained) and a terminal summary.

Sources of truth, both written by the run itself:
  * ``<run>/manifest.json`` (or, when absent, the same summary computed from ``output/`` and
    ``excluded/``): documents and tokens kept per source / tier / language, excluded per reason
    and stage, the mixture plan;
  * ``<run>/logs/<phase>/stats.json``: datatrove's merged per-step stats of every phase
    (a list of ``{"name", "time_stats", "stats"}``), for the per-step table.

The document funnel of a source starts with every document that reached the decision step
(kept + excluded, which the signal store must match) and removes, in order, the documents
excluded at each stage: ``reject`` (an earlier step's ``reject_reason``: unreadable, binary, ...),
``dedup``, ``rules`` (recipe thresholds), ``rebalance``, ``tier`` (dropped tiers); what is left is
written to the shards. Tokens follow the same path (excluded documents carry the exclusion
writer's token count, kept ones the shard's ``token_count``).

The HTML has no scripts, no external resources and no fonts to fetch: charts are inline SVG.
Every number shown carries ``data-metric`` / ``data-value`` attributes, which the tests compare
with the stats after rendering the page in headless Chromium.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

from assay.pipeline.manifest import STAGE_ORDER, load_manifest, summarize_outputs

from assay.pipeline.phases import PHASE_ORDER  # run order of every phase kind  # noqa: E402
REASON_PREFIXES = ("dropped_", "reject/", "excluded/")
STAGE_LABELS = {
    "reject": "unreadable / rejected by a step",
    "dedup": "duplicates",
    "rules": "quality & filter rules",
    "rebalance": "rebalancing",
    "tier": "dropped tiers",
}
PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"]


# ---------------------------------------------------------------------------------------- data


def stat_total(value: Any) -> float:
    """The total of a datatrove stat as saved in stats.json (a number or a dict with ``total``)."""
    if isinstance(value, dict):
        return value.get("total", 0) or 0
    return value or 0


_SYMBOLS = re.compile("[\U00010000-\U0010ffff\u2600-\u27bf\ufe0f\u200d]")


def step_label(name: str) -> str:
    """A datatrove step name without its emoji (``"📖 - READER: x"`` -> ``"READER: x"``)."""
    out = re.sub(r"\s+", " ", _SYMBOLS.sub("", name)).strip()
    return out[2:].strip() if out.startswith("- ") else out


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def load_phase_stats(run_dir: Path) -> list[dict[str, Any]]:
    """Per phase (in run order) and per step: documents in/out, dropped, reasons, tokens, time."""
    logs = Path(run_dir) / "logs"
    if not logs.exists():
        return []
    phases = [p for p in logs.iterdir() if (p / "stats.json").is_file()]
    phases.sort(key=lambda p: (PHASE_ORDER.index(p.name) if p.name in PHASE_ORDER else len(PHASE_ORDER), p.name))
    out = []
    for phase in phases:
        try:
            steps_raw = json.loads((phase / "stats.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            out.append({"phase": phase.name, "error": f"unreadable stats.json: {e}", "steps": [], "tasks": 0})
            continue
        tasks = len(list((phase / "stats").glob("*.json"))) if (phase / "stats").is_dir() else 0
        steps = []
        for i, s in enumerate(steps_raw if isinstance(steps_raw, list) else []):
            st = s.get("stats", {}) or {}
            docs_in = st.get("total", st.get("documents"))
            docs_in = None if docs_in is None else _num(stat_total(docs_in))
            dropped = _num(stat_total(st.get("dropped", 0)))
            if "forwarded" in st:
                docs_out = _num(stat_total(st["forwarded"]))
            elif docs_in is not None:
                docs_out = docs_in - dropped
            else:
                docs_out = None
            reasons = {}
            for k, v in st.items():
                for pre in REASON_PREFIXES:
                    if k.startswith(pre):
                        reasons[k[len(pre):]] = reasons.get(k[len(pre):], 0) + _num(stat_total(v))
            ts = s.get("time_stats", {})
            seconds = ts.get("global_mean", ts.get("total", 0)) if isinstance(ts, dict) else (ts or 0)
            steps.append(
                {
                    "index": i,
                    "name": step_label(s.get("name", f"step {i}")),
                    "documents_in": docs_in,
                    "documents_out": docs_out,
                    "dropped": dropped,
                    "reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
                    "tokens": _num(stat_total(st["tokens"])) if "tokens" in st else None,
                    "seconds": float(seconds or 0.0),
                }
            )
        out.append({"phase": phase.name, "steps": steps, "tasks": tasks})
    return out


def signal_store_count(run_dir: Path) -> int | None:
    import pyarrow.parquet as pq

    parts = sorted((Path(run_dir) / "signals").glob("part-*.parquet"))
    if not parts:
        return None
    return sum(pq.ParquetFile(p).metadata.num_rows for p in parts)


def _completed_tasks(phase_logs: Path) -> int:
    comp = phase_logs / "completions"
    return sum(1 for _ in comp.iterdir()) if comp.is_dir() else 0


def unfinished_phases(run_dir: Path) -> list[str]:
    """Phases of a run whose tasks are not all complete (empty: the run finished). The phases and their
    task counts come from the run's `phases.json` (written before any work); without one, from the phase
    folders under logs/."""
    run_dir = Path(run_dir)
    expected: list[tuple[str, int]] = []
    try:
        state = json.loads((run_dir / "phases.json").read_text())
        tasks = state.get("tasks") or {}
        expected = [(name, int(tasks.get(name, 1 << 30))) for name in state["phases"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        for ex in sorted((run_dir / "logs").glob("*/executor.json")):
            try:
                expected.append((ex.parent.name, int(json.loads(ex.read_text()).get("world_size", 1))))
            except (OSError, ValueError):
                expected.append((ex.parent.name, 1 << 30))
        expected.sort(key=lambda p: PHASE_ORDER.index(p[0]) if p[0] in PHASE_ORDER else len(PHASE_ORDER))
    return [name for name, tasks in expected if _completed_tasks(run_dir / "logs" / name) < tasks]


def reader_counts(run_dir: Path) -> dict[str, int] | None:
    """What the readers of the signals phase counted (their datatrove stats, merged over tasks): input
    files read, files a directory listing left out (name filter / glob), WARC records parsed, documents
    produced. None when the run has no signals-phase stats (a re-tier run, an unfinished phase)."""
    path = Path(run_dir) / "logs" / "signals" / "stats.json"
    try:
        steps = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    keys = {"input_files": "input_files", "files_ignored": "files/ignored", "records": "records",
            "documents": "documents"}
    out = dict.fromkeys(keys, 0)
    found = False
    for s in steps if isinstance(steps, list) else []:
        if "READER" not in str(s.get("name", "")).upper():
            continue
        found = True
        st = s.get("stats", {}) or {}
        for k, stat in keys.items():
            out[k] += int(stat_total(st.get(stat, 0)))
    return out if found else None


def document_funnel(summary: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per source (and ``all``): a list of stages with documents/tokens in, removed and out."""
    excl = summary.get("excluded", {})
    by_source_kept = summary.get("by_source", {})
    sources = sorted(set(by_source_kept) | set(excl.get("by_source", {})))
    reasons_stage = {r: v.get("stage", "rules") for r, v in excl.get("by_reason", {}).items()}
    present = {reasons_stage.get(r, "rules") for r in excl.get("by_reason", {})}
    stage_list = [st for st in STAGE_ORDER if st in present] + sorted(present - set(STAGE_ORDER))
    funnels: dict[str, list[dict[str, Any]]] = {}
    for src in ["all", *sources]:
        if src == "all":
            kept_docs = summary.get("totals", {}).get("documents", 0)
            kept_toks = summary.get("totals", {}).get("tokens", 0)
            removed_by_reason: dict[str, dict[str, int]] = {}
            for s in sources:
                for r, v in excl.get("by_source", {}).get(s, {}).items():
                    a = removed_by_reason.setdefault(r, {"documents": 0, "tokens": 0})
                    a["documents"] += v["documents"]
                    a["tokens"] += v["tokens"]
        else:
            kept_docs = by_source_kept.get(src, {}).get("documents", 0)
            kept_toks = by_source_kept.get(src, {}).get("tokens", 0)
            removed_by_reason = excl.get("by_source", {}).get(src, {})
        stages = stage_list
        removed = {st: {"documents": 0, "tokens": 0, "reasons": {}} for st in stages}
        for r, v in removed_by_reason.items():
            st = reasons_stage.get(r, "rules")
            removed[st]["documents"] += v["documents"]
            removed[st]["tokens"] += v["tokens"]
            removed[st]["reasons"][r] = v["documents"]
        docs = kept_docs + sum(v["documents"] for v in removed.values())
        toks = kept_toks + sum(v["tokens"] for v in removed.values())
        rows = [{"stage": "input", "documents_in": docs, "tokens_in": toks, "documents_removed": 0,
                 "tokens_removed": 0, "documents_out": docs, "tokens_out": toks, "reasons": {}}]
        for st in stages:
            rm = removed[st]
            rows.append(
                {
                    "stage": st,
                    "documents_in": docs,
                    "tokens_in": toks,
                    "documents_removed": rm["documents"],
                    "tokens_removed": rm["tokens"],
                    "documents_out": docs - rm["documents"],
                    "tokens_out": toks - rm["tokens"],
                    "reasons": dict(sorted(rm["reasons"].items(), key=lambda kv: (-kv[1], kv[0]))),
                }
            )
            docs -= rm["documents"]
            toks -= rm["tokens"]
        rows.append({"stage": "written", "documents_in": docs, "tokens_in": toks, "documents_removed": 0,
                     "tokens_removed": 0, "documents_out": kept_docs, "tokens_out": kept_toks, "reasons": {}})
        funnels[src] = rows
    return funnels


def raw_token_funnel(run_dir: Path) -> list[dict[str, Any]] | None:
    """Web pages from raw HTML to written text, in whitespace tokens (one unit all the way): raw HTML
    (``html__raw_tokens``), removed by parsing (raw minus ``extract__tokens``), removed at each
    decision stage (the ``extract__tokens`` of the excluded pages), written. None when the signal
    store has no ``html__raw_tokens`` (no web source, or a run from before the signal existed)."""
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    parts = sorted((run_dir / "signals").glob("part-*.parquet"))
    tokens: dict[str, int] = {}
    raw = 0
    for p in parts:
        cols = set(pq.ParquetFile(p).schema_arrow.names)
        if not {"html__raw_tokens", "extract__tokens"} <= cols:
            continue
        t = pq.ParquetFile(p).read(columns=["id", "html__raw_tokens", "extract__tokens"]).to_pylist()
        for r in t:
            if r["html__raw_tokens"] is None:
                continue
            raw += int(r["html__raw_tokens"])
            tokens[r["id"]] = int(r["extract__tokens"] or 0)
    if not tokens:
        return None
    removed: dict[str, int] = {}
    for p in sorted((run_dir / "excluded").glob("*.parquet")):
        for r in pq.ParquetFile(p).read(columns=["id", "stage"]).to_pylist():
            if r["id"] in tokens:
                removed[r["stage"] or "rules"] = removed.get(r["stage"] or "rules", 0) + tokens[r["id"]]
    extracted = sum(tokens.values())
    rows = [{"stage": "raw HTML", "tokens_removed": 0, "tokens_out": raw},
            {"stage": "parsing", "tokens_removed": raw - extracted, "tokens_out": extracted}]
    left = extracted
    order = [st for st in STAGE_ORDER if st in removed] + sorted(set(removed) - set(STAGE_ORDER))
    for st in order:
        left -= removed[st]
        rows.append({"stage": st, "tokens_removed": removed[st], "tokens_out": left})
    rows.append({"stage": "written", "tokens_removed": 0, "tokens_out": left})
    for r in rows:
        r["share_removed"] = r["tokens_removed"] / raw if raw else 0.0
    return rows


def _load(run_dir: Path) -> dict[str, Any]:
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    summary = manifest if manifest is not None else summarize_outputs(run_dir, checksums=False)
    return {
        "run_dir": run_dir,
        "manifest": manifest,
        "summary": summary,
        "phases": load_phase_stats(run_dir),
        "funnel": document_funnel(summary),
        "signal_store_documents": signal_store_count(run_dir),
        "unfinished": unfinished_phases(run_dir),
        "readers": reader_counts(run_dir),
        "raw_funnel": raw_token_funnel(run_dir),
    }


# ---------------------------------------------------------------------------------------- html


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.2f}" if abs(v) >= 1 else f"{v:.3f}"
    return f"{int(v):,}"


def _human(v: float) -> str:
    for unit, div in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.1f}{unit}"
    return f"{int(v)}"


def _m(metric: str, value: Any, text: str | None = None, tag: str = "td") -> str:
    dv = "" if value is None else (repr(float(value)) if isinstance(value, float) and not float(value).is_integer() else str(int(value)))
    return f'<{tag} class="num" data-metric="{html.escape(metric)}" data-value="{dv}">{html.escape(text if text is not None else _fmt(value))}</{tag}>'


def _svg_hbars(items: list[tuple[str, float]], *, title: str, unit: str = "", width: int = 540, color: str = PALETTE[0]) -> str:
    if not items:
        return ""
    bar_h, gap, label_w = 18, 6, 180
    h = len(items) * (bar_h + gap) + 30
    vmax = max(v for _, v in items) or 1
    parts = [f'<svg class="chart" role="img" width="{width}" height="{h}" viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{html.escape(title)}</title>",
             f'<text x="0" y="14" class="ct">{html.escape(title)}</text>']
    for i, (label, v) in enumerate(items):
        y = 24 + i * (bar_h + gap)
        w = 0 if vmax == 0 else max(1.0, (width - label_w - 80) * v / vmax) if v else 0
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" class="cl">{html.escape(label[:34])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"><title>{html.escape(label)}: {_fmt(v)} {unit}</title></rect>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 13}" class="cv">{_human(v)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_funnel(rows: list[dict[str, Any]], *, key: str, title: str, width: int = 540) -> str:
    """Bars of what remains after each stage, with the removed part drawn hatched in red."""
    items = [r for r in rows if r["stage"] not in ("written",)]
    bar_h, gap, label_w = 20, 6, 110
    h = len(items) * (bar_h + gap) + 30
    vmax = max((r[key + "_in"] for r in items), default=0) or 1
    scale = (width - label_w - 105) / vmax
    parts = [f'<svg class="chart" role="img" width="{width}" height="{h}" viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{html.escape(title)}</title>", f'<text x="0" y="14" class="ct">{html.escape(title)}</text>']
    for i, r in enumerate(items):
        y = 24 + i * (bar_h + gap)
        out_w = r[key + "_out"] * scale
        rm_w = r[key + "_removed"] * scale
        label = "input" if r["stage"] == "input" else f"after {r['stage']}"
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" class="cl">{html.escape(label)}</text>')
        v_out, v_rm = r[key + "_out"], r[key + "_removed"]
        parts.append(f'<rect x="{label_w}" y="{y}" width="{out_w:.1f}" height="{bar_h}" fill="{PALETTE[0]}"><title>{label}: {_fmt(v_out)}</title></rect>')
        if rm_w > 0:
            parts.append(f'<rect x="{label_w + out_w:.1f}" y="{y}" width="{max(rm_w, 1):.1f}" height="{bar_h}" fill="{PALETTE[2]}" opacity="0.55"><title>removed at {r["stage"]}: {_fmt(v_rm)}</title></rect>')
        pct = (100.0 * v_out / vmax) if vmax else 0
        parts.append(f'<text x="{label_w + out_w + max(rm_w, 0) + 4:.1f}" y="{y + 14}" class="cv">{_human(v_out)} ({pct:.1f}%)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_stacked(matrix: dict[str, dict[str, float]], *, title: str, width: int = 540) -> str:
    """One horizontal stacked bar per row key (e.g. source), segments per column key (e.g. tier)."""
    if not matrix:
        return ""
    cols = sorted({c for row in matrix.values() for c in row})
    color = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(cols)}
    bar_h, gap, label_w = 22, 8, 120
    h = len(matrix) * (bar_h + gap) + 54
    vmax = max(sum(r.values()) for r in matrix.values()) or 1
    scale = (width - label_w - 80) / vmax
    parts = [f'<svg class="chart" role="img" width="{width}" height="{h}" viewBox="0 0 {width} {h}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{html.escape(title)}</title>", f'<text x="0" y="14" class="ct">{html.escape(title)}</text>']
    for i, (rk, row) in enumerate(sorted(matrix.items())):
        y = 24 + i * (bar_h + gap)
        x = float(label_w)
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" class="cl">{html.escape(rk)}</text>')
        for c in cols:
            v = row.get(c, 0)
            if v <= 0:
                continue
            w = v * scale
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color[c]}"><title>{html.escape(rk)} / {html.escape(c)}: {_fmt(v)}</title></rect>')
            x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 15}" class="cv">{_human(sum(row.values()))}</text>')
    ly = 24 + len(matrix) * (bar_h + gap) + 8
    lx = label_w
    for c in cols:
        parts.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{color[c]}"/><text x="{lx + 16}" y="{ly + 11}" class="cl">{html.escape(c)}</text>')
        lx += 24 + 8 * len(c)
    parts.append("</svg>")
    return "".join(parts)


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:1.6em;margin-bottom:4px} h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:36px}
h3{margin-bottom:6px} .sub{color:#59636e} table{border-collapse:collapse;margin:8px 0 16px;font-size:0.92em}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top} th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums} .cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;min-width:150px} .card .v{font-size:1.5em;font-weight:600}
.card .l{color:#59636e;font-size:0.85em} .chart{display:block;margin:6px 0 14px;max-width:100%;height:auto} .ct{font-weight:600;font-size:13px}
.cl{font-size:12px;fill:#1f2328} .cv{font-size:11px;fill:#59636e} .warn{color:#b35900} .ok{color:#1a7f37}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:8px} code{font-size:0.9em}
details{margin:6px 0} .reasons{color:#59636e;font-size:0.85em}
"""


def plan_html(run_dir: Path, metric) -> str:  # the repetition plan written by `assay plan` (pipeline/plan.py)
    """The report's "Repetition plan" section (``metric`` is the report's ``_m`` cell helper); '' without a plan."""
    import html

    p = Path(run_dir) / "plan.json"
    plan = json.loads(p.read_text(encoding="utf-8")) if p.exists() else None
    if not plan:
        return ""
    out = ["<h2>Repetition plan</h2><p class=\"sub\">" + html.escape(plan.get("definition", "")) + "</p>"]
    budget = plan.get("budget_tokens")
    out.append("<table><tr><th>budget</th><th>unique tokens</th><th>planned tokens</th><th>max repeats</th></tr><tr>"
               + metric("plan/budget_tokens", budget) + metric("plan/unique_tokens", plan["unique_tokens"])
               + metric("plan/planned_tokens", plan["planned_tokens"])
               + metric("plan/max_repeats", float(plan["max_repeats"]), f"{plan['max_repeats']:g}") + "</tr></table>")
    for w in plan.get("warnings", []):
        out.append(f"<p class=\"warn\">warning: {html.escape(w)}</p>")
    out.append("<table><tr><th>source</th><th>tier</th><th>language</th><th>weight</th><th>tokens</th>"
               "<th>epochs</th><th>planned tokens</th></tr>")
    for s in plan["slices"]:
        pre = f"plan/{s['source']}/{s['tier']}/{s['language']}"
        ep = f"{s['epochs']:.2f}" + (" (capped)" if s.get("capped") else "")
        wt = f"{s['weight']:g}"
        out.append(f"<tr><td>{html.escape(s['source'])}</td><td>{html.escape(s['tier'])}</td>"
                   f"<td>{html.escape(s['language'])}</td>{metric(pre + '/weight', float(s['weight']), wt)}"
                   f"{metric(pre + '/tokens', s['tokens'])}{metric(pre + '/epochs', float(s['epochs']), ep)}"
                   f"{metric(pre + '/planned_tokens', s['planned_tokens'])}</tr>")
    out.append("</table>")
    c = plan.get("clusters", {})
    out.append("<p class=\"sub\">fuzzy-duplicate clusters with several kept members: "
               f"{c.get('clusters_with_several_kept_members', 0)}, capped: {c.get('clusters_capped', 0)} "
               f"(copies {c.get('copies_before', 0)} -> {c.get('copies_after', 0)})</p>")
    return "".join(out)


def render_html(run_dir: Path) -> str:
    """The report page as a string (see ``render_report``)."""
    d = _load(run_dir)
    s, m, funnel, phases = d["summary"], d["manifest"], d["funnel"], d["phases"]
    excl = s.get("excluded", {})
    totals = s.get("totals", {})
    out: list[str] = []
    w = out.append
    title = f"assay run report: {Path(run_dir).name}"
    w(f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>")
    w(f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{_CSS}</style></head><body>")
    w(f"<h1>{html.escape(title)}</h1>")
    recipe_name = (m or {}).get("recipe", {}).get("name") if isinstance((m or {}).get("recipe"), dict) else None
    w('<p class="sub">')
    if recipe_name:
        w(f"recipe <b>{html.escape(str(recipe_name))}</b> · ")
    if m:
        w(f"recipe sha256 <code data-metric=\"recipe_sha256\">{html.escape(str(m.get('recipe_sha256', ''))[:16])}</code> · ")
        w(f"{len(m.get('inputs', []))} input files · ")
    else:
        w('<span class="warn">no manifest.json yet: numbers computed from the output files</span> · ')
    w(f"token counts: <code>{html.escape(str(s.get('output', {}).get('token_count_method')))}</code></p>")
    m_out, m_ex = s.get("output", {}).get("token_count_method"), excl.get("token_count_method")
    if m_out and m_ex and m_out != m_ex:
        w(f'<p class="warn">Excluded documents were counted with <code>{html.escape(str(m_ex))}</code>, written ones with '
          f"<code>{html.escape(str(m_out))}</code>: token totals across the funnel mix the two.</p>")

    all_f = funnel.get("all", [])
    docs_in = all_f[0]["documents_in"] if all_f else 0
    toks_in = all_f[0]["tokens_in"] if all_f else 0
    w('<div class="cards">')
    for metric, label, value in (
        ("totals/documents_in", "documents in", docs_in),
        ("totals/documents", "documents written", totals.get("documents", 0)),
        ("totals/excluded", "documents excluded", excl.get("documents", 0)),
        ("totals/tokens_in", "tokens in", toks_in),
        ("totals/tokens", "tokens written", totals.get("tokens", 0)),
        ("totals/shards", "shards", totals.get("shards", 0)),
        ("totals/bytes", "shard bytes", totals.get("bytes", 0)),
    ):
        cell = _m(metric, value, tag="div").replace('class="num"', 'class="v"')
        w(f'<div class="card">{cell}<div class="l">{label}</div></div>')
    w("</div>")
    ss = d["signal_store_documents"]
    rd = d.get("readers")
    if d["unfinished"]:
        w(f'<p class="warn" data-metric="incomplete">incomplete: phases {html.escape(", ".join(d["unfinished"]))} '
          "not finished; the numbers below cover what the finished phases wrote (rerun the same command to resume)</p>")
    elif ss is not None:
        ok = ss == docs_in and (rd is None or rd["documents"] == ss)
        read = ""
        if rd is not None:
            read = (f'readers read {_m("conservation/input_files", rd["input_files"], tag="span")} input files '
                    f'({_m("conservation/files_ignored", rd["files_ignored"], tag="span")} left out by name, '
                    f'{_m("conservation/records", rd["records"], tag="span")} WARC records) into '
                    f'{_m("conservation/reader_documents", rd["documents"], tag="span")} documents; ')
        w(f'<p class="{"ok" if ok else "warn"}">Conservation: {read}signal store holds {_m("conservation/signal_store", ss, tag="span")} documents; '
          f'written + excluded = {_m("conservation/written_plus_excluded", docs_in, tag="span")} '
          f'({"match" if ok else "MISMATCH"}).</p>')

    # funnel from raw HTML (web) ----------------------------------------------------------------
    raw_f = d.get("raw_funnel")
    if raw_f:
        total = raw_f[0]["tokens_out"]
        kept = raw_f[-1]["tokens_out"]
        share = round(1 - kept / total, 4) if total else 0.0
        share_txt = f"{100 * share:.1f}%"
        w("<h2>Web: from raw HTML</h2><p class=\"sub\">Whitespace tokens of the raw HTML of every web page, the share "
          "removed by parsing (extraction), by each decision stage (the extracted tokens of the pages excluded there), "
          f"and what is written: {_m('raw_funnel/removed_share', share, share_txt, tag='span')} "
          "of raw tokens removed in all.</p>")
        w("<table><tr><th>stage</th><th>tokens removed</th><th>share of raw</th><th>tokens left</th></tr>")
        for r in raw_f:
            pre = f"raw_funnel/{r['stage']}"
            pct_txt = f"{100 * r['share_removed']:.1f}%"
            w(f"<tr><td>{html.escape(STAGE_LABELS.get(r['stage'], r['stage']))}</td>"
              f"{_m(pre + '/tokens_removed', r['tokens_removed'])}{_m(pre + '/share_removed', round(r['share_removed'], 4), pct_txt)}"
              f"{_m(pre + '/tokens_out', r['tokens_out'])}</tr>")
        w("</table>")

    # funnel --------------------------------------------------------------------------------
    w("<h2>Funnel</h2><p class=\"sub\">Documents and tokens entering and leaving every stage of the decision, "
      "per source. Removed = excluded at that stage (the exclusion files say which documents and why).</p>")
    for src, rows in funnel.items():
        w(f"<h3 id=\"funnel-{html.escape(src)}\">{'all sources' if src == 'all' else 'source: ' + html.escape(src)}</h3><div class=\"grid\">")
        w(_svg_funnel(rows, key="documents", title=f"{src}: documents remaining"))
        w(_svg_funnel(rows, key="tokens", title=f"{src}: tokens remaining"))
        w("</div><table><tr><th>stage</th><th>documents in</th><th>removed</th><th>documents out</th>"
          "<th>tokens in</th><th>removed</th><th>tokens out</th><th>reasons</th></tr>")
        for r in rows:
            st = r["stage"]
            pre = f"funnel/{src}/{st}"
            reasons = ", ".join(f"{html.escape(k)}: {v:,}" for k, v in r["reasons"].items())
            w(f"<tr><td>{html.escape(st)}<br><span class=\"reasons\">{html.escape(STAGE_LABELS.get(st, ''))}</span></td>"
              f"{_m(pre + '/documents_in', r['documents_in'])}{_m(pre + '/documents_removed', r['documents_removed'])}"
              f"{_m(pre + '/documents_out', r['documents_out'])}{_m(pre + '/tokens_in', r['tokens_in'])}"
              f"{_m(pre + '/tokens_removed', r['tokens_removed'])}{_m(pre + '/tokens_out', r['tokens_out'])}"
              f"<td class=\"reasons\">{reasons}</td></tr>")
        w("</table>")

    # exclusions ----------------------------------------------------------------------------
    w("<h2>Exclusions by reason</h2>")
    by_reason = excl.get("by_reason", {})
    if by_reason:
        w(_svg_hbars([(r, v["documents"]) for r, v in by_reason.items()], title="excluded documents by reason", color=PALETTE[2]))
        sources = sorted(excl.get("by_source", {}))
        w("<table><tr><th>reason</th><th>stage</th><th>documents</th><th>tokens</th>"
          + "".join(f"<th>{html.escape(x)}</th>" for x in sources) + "</tr>")
        for r, v in by_reason.items():
            w(f"<tr><td><code>{html.escape(r)}</code></td><td>{html.escape(v.get('stage', ''))}</td>"
              f"{_m(f'excluded/{r}/documents', v['documents'])}{_m(f'excluded/{r}/tokens', v['tokens'])}")
            for x in sources:
                w(_m(f"excluded/{r}/source/{x}", excl["by_source"][x].get(r, {}).get("documents", 0)))
            w("</tr>")
        w("</table>")
    else:
        w("<p>No document was excluded.</p>")

    # kept ------------------------------------------------------------------------------------
    w("<h2>Written shards</h2>")
    bst = s.get("by_source_tier", {})
    w(_svg_stacked({src: {t: v["tokens"] for t, v in tiers.items()} for src, tiers in bst.items()}, title="tokens written, by source and tier"))
    w("<table><tr><th>source</th><th>tier</th><th>documents</th><th>tokens</th><th>shards</th><th>bytes</th></tr>")
    for src, tiers in bst.items():
        for t, v in tiers.items():
            pre = f"kept/{src}/{t}"
            w(f"<tr><td>{html.escape(src)}</td><td>{html.escape(t)}</td>{_m(pre + '/documents', v['documents'])}"
              f"{_m(pre + '/tokens', v['tokens'])}{_m(pre + '/shards', v['shards'])}{_m(pre + '/bytes', v['bytes'])}</tr>")
    w("</table>")
    langs = s.get("by_language", {})
    if langs:
        top = sorted(langs.items(), key=lambda kv: -kv[1]["tokens"])[:20]
        w(_svg_hbars([(k, v["tokens"]) for k, v in top], title="tokens written by language (top 20)", color=PALETTE[3]))
        w("<details><summary>all languages</summary><table><tr><th>language</th><th>documents</th><th>tokens</th></tr>")
        for k, v in sorted(langs.items()):
            w(f"<tr><td>{html.escape(k)}</td>{_m(f'language/{k}/documents', v['documents'])}{_m(f'language/{k}/tokens', v['tokens'])}</tr>")
        w("</table></details>")

    # mixture -----------------------------------------------------------------------------------
    mix = s.get("mixture", {})
    if mix.get("tiers"):
        w("<h2>Mixture plan</h2><p class=\"sub\">" + html.escape(mix.get("definition", "")) + "</p>")
        w(_svg_hbars([(t, v["effective_tokens"]) for t, v in mix["tiers"].items()], title="effective tokens per tier", color=PALETTE[4]))
        w("<table><tr><th>tier</th><th>weight</th><th>documents</th><th>tokens</th><th>effective tokens</th><th>share</th></tr>")
        for t, v in mix["tiers"].items():
            pre = f"mixture/{t}"
            weight_txt = f"{v['weight']:g}"
            share_txt = f"{100 * v['share']:.1f}%"
            w(f"<tr><td>{html.escape(t)}</td>{_m(pre + '/weight', float(v['weight']), weight_txt)}"
              f"{_m(pre + '/documents', v['documents'])}{_m(pre + '/tokens', v['tokens'])}"
              f"{_m(pre + '/effective_tokens', v['effective_tokens'])}{_m(pre + '/share', float(v['share']), share_txt)}</tr>")
        w(f"<tr><th colspan=\"3\">total</th>{_m('mixture/total_tokens', mix.get('total_tokens', 0))}"
          f"{_m('mixture/total_effective_tokens', mix.get('total_effective_tokens', 0))}<td></td></tr></table>")

    # repetition plan (assay plan; pipeline/plan.py) ---------------------------------------------
    w(plan_html(run_dir, _m))

    # phases ------------------------------------------------------------------------------------
    w("<h2>Pipeline steps</h2><p class=\"sub\">From each phase's <code>logs/&lt;phase&gt;/stats.json</code> "
      "(datatrove stats merged over tasks).</p>")
    if not phases:
        w("<p class=\"warn\">No logs/*/stats.json found.</p>")
    for ph in phases:
        name = ph["phase"]
        w(f"<h3>phase: {html.escape(name)} <span class=\"sub\">({ph.get('tasks', 0)} task stats)</span></h3>")
        if ph.get("error"):
            w(f"<p class=\"warn\">{html.escape(ph['error'])}</p>")
            continue
        w("<table><tr><th>#</th><th>step</th><th>documents in</th><th>documents out</th><th>dropped</th>"
          "<th>tokens</th><th>time (s)</th><th>reasons</th></tr>")
        for st in ph["steps"]:
            pre = f"phase/{name}/{st['index']}"
            reasons = ", ".join(f"{html.escape(k)}: {_fmt(v)}" for k, v in st["reasons"].items())
            secs = f"{st['seconds']:.2f}"
            w(f"<tr><td>{st['index']}</td><td>{html.escape(st['name'])}</td>{_m(pre + '/documents_in', st['documents_in'])}"
              f"{_m(pre + '/documents_out', st['documents_out'])}{_m(pre + '/dropped', st['dropped'])}"
              f"{_m(pre + '/tokens', st['tokens'])}{_m(pre + '/seconds', st['seconds'], secs)}"
              f"<td class=\"reasons\">{reasons}</td></tr>")
        w("</table>")
        flagged: dict[str, float] = {}
        for st in ph["steps"]:  # a filter and its exclusion writer count the same documents: take the max
            for k, v in st["reasons"].items():
                flagged[k] = max(flagged.get(k, 0), v)
        reason_items = sorted(flagged.items(), key=lambda kv: (-kv[1], kv[0]))
        if reason_items:
            w(_svg_hbars(reason_items[:25], title=f"{name}: documents flagged per reason", color=PALETTE[1]))

    # shards ------------------------------------------------------------------------------------
    shards = s.get("shards", [])
    w(f"<h2>Shards ({len(shards)})</h2><details><summary>list</summary><table><tr><th>path</th><th>rows</th><th>tokens</th>"
      "<th>bytes</th><th>sha256</th></tr>")
    for sh in shards:
        w(f"<tr><td><code>{html.escape(sh['path'])}</code></td>{_m('shard/' + sh['path'] + '/rows', sh['rows'])}"
          f"{_m('shard/' + sh['path'] + '/tokens', sh['tokens'])}{_m('shard/' + sh['path'] + '/bytes', sh['bytes'])}"
          f"<td><code>{html.escape(str(sh.get('sha256') or '')[:16])}</code></td></tr>")
    w("</table></details>")
    w("</body></html>")
    return "".join(out)


def render_report(run_dir: Path) -> Path:
    """Write ``<run_dir>/report.html`` (atomically) and return its path."""
    run_dir = Path(run_dir)
    page = render_html(run_dir)
    path = run_dir / "report.html"
    tmp = path.with_name(".report.html.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------------------- text


def report_renderables(run_dir: Path) -> list:
    """The terminal summary as rich renderables (all data escaped: step names contain ``[web]``)."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    d = _load(run_dir)
    s, funnel, phases = d["summary"], d["funnel"], d["phases"]
    out: list = []
    totals = s.get("totals", {})
    all_f = funnel.get("all", [])
    out.append(Text.assemble(
        (f"assay run {Path(run_dir).name}", "bold"),
        f": {all_f[0]['documents_in'] if all_f else 0:,} documents in, "
        f"{totals.get('documents', 0):,} written ({totals.get('tokens', 0):,} tokens, {totals.get('shards', 0)} shards), "
        f"{s.get('excluded', {}).get('documents', 0):,} excluded",
    ))
    ss = d["signal_store_documents"]
    rd = d.get("readers")
    if d["unfinished"]:
        out.append(Text(f"incomplete: phases {', '.join(d['unfinished'])} not finished "
                        "(rerun the same `assay run` command to resume)", style="bold yellow"))
    elif ss is not None and all_f:
        ok = ss == all_f[0]["documents_in"] and (rd is None or rd["documents"] == ss)
        read = "" if rd is None else (f"{rd['input_files']:,} input files ({rd['files_ignored']:,} left out by name) "
                                      f"-> readers {rd['documents']:,} documents -> ")
        out.append(Text(f"conservation: {read}signal store {ss:,} vs written + excluded {all_f[0]['documents_in']:,}: "
                        f"{'ok' if ok else 'MISMATCH'}", style=None if ok else "bold red"))
    t = Table(title="funnel (documents / tokens remaining after each stage)")
    t.add_column("source")
    stages = [r["stage"] for r in next(iter(funnel.values()), [])]
    for st in stages:
        t.add_column(escape(st), justify="right")
    for src, rows in funnel.items():
        t.add_row(escape(src), *[f"{r['documents_out']:,}\n{_human(r['tokens_out'])} tok" for r in rows])
    out.append(t)
    by_reason = s.get("excluded", {}).get("by_reason", {})
    if by_reason:
        t = Table(title="excluded by reason")
        for c in ("reason", "stage", "documents", "tokens"):
            t.add_column(c, justify="right" if c in ("documents", "tokens") else "left")
        for r, v in by_reason.items():
            t.add_row(escape(r), escape(v.get("stage", "")), f"{v['documents']:,}", f"{v['tokens']:,}")
        out.append(t)
    mix = s.get("mixture", {})
    if mix.get("tiers"):
        t = Table(title="mixture plan")
        for c in ("tier", "weight", "documents", "tokens", "effective", "share"):
            t.add_column(c, justify="left" if c == "tier" else "right")
        for name, v in mix["tiers"].items():
            t.add_row(escape(name), f"{v['weight']:g}", f"{v['documents']:,}", f"{v['tokens']:,}",
                      f"{v['effective_tokens']:,}", f"{100 * v['share']:.1f}%")
        out.append(t)
    for ph in phases:
        t = Table(title=f"phase {escape(ph['phase'])}")
        for c in ("step", "in", "out", "dropped", "time s", "top reasons"):
            t.add_column(c, justify="left" if c in ("step", "top reasons") else "right")
        for st in ph["steps"]:
            top = ", ".join(f"{k}: {_fmt(v)}" for k, v in list(st["reasons"].items())[:3])
            t.add_row(escape(st["name"]), _fmt(st["documents_in"]), _fmt(st["documents_out"]), _fmt(st["dropped"]),
                      f"{st['seconds']:.2f}", escape(top))
        out.append(t)
    return out


def print_report(run_dir: Path, *, console=None) -> None:
    """Print the terminal summary to a rich console (the terminal's width)."""
    from rich.console import Console

    console = console or Console()
    for r in report_renderables(run_dir):
        console.print(r)


def report_text(run_dir: Path, *, width: int | None = None) -> str:
    """The terminal summary as plain text (rich tables rendered at ``width``, default the terminal's)."""
    import shutil

    from rich.console import Console

    width = width or max(80, shutil.get_terminal_size((120, 40)).columns)
    with open(os.devnull, "w") as devnull:
        console = Console(width=width, record=True, file=devnull, color_system=None)
        for r in report_renderables(run_dir):
            console.print(r)
        return console.export_text()
