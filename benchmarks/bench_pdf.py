"""PDF family benchmark: CPU cost per page, routing quality, artifact-detector quality.

    .venv/bin/python benchmarks/bench_pdf.py [--repeats 3] [--render-pages 40] [--sections speed,routing,detectors]

All numbers are measured in this run on ../shared/data/pdf, single process (= one core), medians
of --repeats runs. Sections and their anchors:

1. CPU cost per page on the shared born-digital PDFs (inventory kind ``born-digital``, known bad
   text layers excluded). Anchor: plain ``pymupdf page.get_text()``. Rows: our text-layer route
   (reading order + page features + 24 dpi ink probe), the full ``PdfTextLayer`` step (adds the
   forked, resource-limited child per document), and page rendering for OCR at 1288 px
   (PNG / JPEG), on a subset of ``--render-pages`` pages.
2. Routing (pages that need OCR): grouped 5-fold cross-validation by source file over the real
   shared pages plus synthetic scans (``assay.stages.pdf.train_router``; the model is refitted per fold,
   so every number is held out). Anchors: per-page "fewer than 50 text characters -> OCR" and
   per-document "mean < 100 chars/page -> OCR all pages" (coarse document-level routing).
3. Detectors: each of the 11 injectors in ``benchmarks/_pdf_inject.py`` applied to every clean
   born-digital page (no unmapped glyphs, >= 50 words); recall = the targeted detector fired.
   False alarms = any detector fired on the clean page text itself (with its own text layer as
   reference and the page's real ink). Anchor: a finish-reason-only check (retry on
   ``length``), what a pipeline without content checks catches.
4. (optional, ``--server``) the OCR stage end to end: ``--server vllm --model M`` on a GPU machine
   gives pages/s per GPU; ``--server fake`` measures the CPU-side ceiling with the test server.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _median_time(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n## {title}\n")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |")


# ----------------------------------------------------------------------------------------------
def bench_speed(repeats: int, render_pages: int) -> None:
    import pymupdf

    import _pdf_data
    from assay.stages.pdf._pdfdoc import extract_page
    from assay.stages.pdf.ocr import render_page_image
    from assay.stages.pdf.reader import PdfReader
    from assay.stages.pdf.textlayer import PdfTextLayer

    files = _pdf_data.born_digital_files()
    docs = [pymupdf.open(f) for f in files]
    n_pages = sum(d.page_count for d in docs)

    def anchor():
        for d in docs:
            for p in d:
                p.get_text()

    def route():
        for d in docs:
            for p in d:
                extract_page(p)

    def step():
        for _ in PdfTextLayer().run(PdfReader(files).run()):
            pass

    sub = [(f, i) for f, d in zip(files, docs) for i in range(d.page_count)]
    sub = sub[:: max(1, len(sub) // render_pages)][:render_pages]

    def render(fmt):
        def f():
            for path, i in sub:
                render_page_image(path, i, max_side=1288, image_format=fmt)
        return f

    t_anchor = _median_time(anchor, repeats)
    t_route = _median_time(route, repeats)
    t_step = _median_time(step, repeats)
    t_png = _median_time(render("png"), repeats)
    t_jpg = _median_time(render("jpeg"), repeats)
    rows = []
    for name, t, n in [("anchor: pymupdf page.get_text()", t_anchor, n_pages),
                       ("text-layer route: extract_page (order + features + ink)", t_route, n_pages),
                       ("PdfReader + PdfTextLayer steps (isolated child per doc)", t_step, n_pages),
                       ("OCR render 1288 px PNG", t_png, len(sub)),
                       ("OCR render 1288 px JPEG", t_jpg, len(sub))]:
        pps = n / t
        rows.append([name, n, f"{1000 * t / n:.2f}", f"{pps:.1f}", f"{pps / (n_pages / t_anchor):.3f}"])
    _table(f"CPU cost per page ({len(files)} born-digital PDFs, {n_pages} pages; render subset {len(sub)} pages; "
           f"median of {repeats})", ["path", "pages", "ms/page", "pages/s/core", "x anchor"], rows)
    for d in docs:
        d.close()


# ----------------------------------------------------------------------------------------------
def bench_routing(folds: int = 5) -> None:
    import _pdf_data
    from assay.stages.pdf.train_router import _group_of, build_dataset, cross_validate, pr

    t0 = time.perf_counter()
    rows = build_dataset(str(_pdf_data.SHARED_PDF), seed=0)
    build_s = time.perf_counter() - t0
    cv = cross_validate(rows, folds)
    import math

    # anchors, from the same rows: first feature is log1p(chars)/8
    def chars(r):
        return math.expm1(r["vec"][0] * 8.0)

    y = [r["label"] for r in rows]
    a1 = pr(y, [1 if chars(r) < 50 else 0 for r in rows])
    by_file: dict[str, list[float]] = {}
    for r in rows:
        by_file.setdefault((r["file"], r["kind"]) if r["kind"] == "real" else (r["file"], r["kind"], r["page"]), []).append(chars(r))
    doc_mean = {k: sum(v) / len(v) for k, v in by_file.items()}
    a2 = pr(y, [1 if doc_mean[(r["file"], r["kind"]) if r["kind"] == "real" else (r["file"], r["kind"], r["page"])] < 100
                else 0 for r in rows])
    real = [r for r in rows if r["kind"] == "real"]
    yr = [r["label"] for r in real]
    a1r = pr(yr, [1 if chars(r) < 50 else 0 for r in real])
    table = [
        ["router (logistic regression, grouped CV)", cv["all"]["recall"], cv["all"]["precision"], cv["real"]["recall"],
         cv["real"]["precision"], cv["synthetic"]["recall"], cv["synthetic"]["precision"]],
        ["anchor: page chars < 50 -> OCR", a1["recall"], a1["precision"], a1r["recall"], a1r["precision"], "", ""],
        ["anchor: doc mean chars/page < 100 -> OCR", a2["recall"], a2["precision"], "", "", "", ""],
    ]
    n_ocr = sum(y)
    _table(f"Routing: pages that need OCR ({len(rows)} pages = {len(real)} real + {len(rows) - len(real)} synthetic; "
           f"{n_ocr} need OCR; {folds}-fold grouped by file; dataset built in {build_s:.0f} s)",
           ["method", "recall", "precision", "real recall", "real precision", "synth recall", "synth precision"], table)
    groups = {_group_of(r["file"], folds) for r in rows}
    print(f"\nfolds used: {len(groups)}; target: recall >= 0.95 at precision >= 0.8")


# ----------------------------------------------------------------------------------------------
def bench_detectors() -> None:
    import _pdf_data
    import _pdf_inject
    from assay.stages.pdf.artifacts import DETECTORS, detect_artifacts

    pages = _pdf_data.clean_pages()
    texts = [t for _, _, t, _ in pages]
    cases = _pdf_inject.make_cases(texts, seed=0)
    t0 = time.perf_counter()
    hits: dict[str, list[int]] = {d: [] for d in DETECTORS}
    anchor_hits: dict[str, list[int]] = {d: [] for d in DETECTORS}
    for name, text, kw in cases:
        fired = detect_artifacts(text, **kw)
        hits[name].append(1 if name in fired else 0)
        anchor_hits[name].append(1 if kw.get("finish_reason") == "length" else 0)
    dt = time.perf_counter() - t0
    false = []
    for (path, i, t, f) in pages:
        fired = detect_artifacts(t, text_layer=t, ink=f.get("ink"))
        if fired:
            false.append((Path(path).name, i, fired))
    rows = []
    for d in DETECTORS:
        h = hits[d]
        rows.append([d, len(h), f"{sum(h) / len(h):.3f}", f"{sum(anchor_hits[d]) / len(h):.3f}"])
    allh = [x for d in DETECTORS for x in hits[d]]
    alla = [x for d in DETECTORS for x in anchor_hits[d]]
    rows.append(["ALL", len(allh), f"{sum(allh) / len(allh):.3f}", f"{sum(alla) / len(alla):.3f}"])
    _table(f"Detectors: recall on injected corruptions ({len(pages)} clean born-digital pages x {len(_pdf_inject.INJECTORS)} "
           f"injectors; {1000 * dt / len(cases):.2f} ms/case)", ["detector", "cases", "recall", "anchor (finish_reason only)"], rows)
    fa = len(false) / len(pages)
    _table("Detectors: false alarms on clean page text", ["pages", "flagged", "false-alarm rate", "target"],
           [[len(pages), len(false), f"{fa:.3%}", "<= 2%"]])
    for f in false[:10]:
        print(f"  flagged: {f[0]} page {f[1]}: {f[2]}")
    filler = _pdf_data.clean_pages(filler=True)
    nf = sum(1 for (_, _, t, f) in filler if detect_artifacts(t, text_layer=t, ink=f.get("ink")))
    print(f"\n(left out of the clean set: {len(filler)} typesetting-filler pages (lorem ipsum / blindtext, one "
          f"paragraph repeated on purpose); the repetition detectors flag {nf} of them)")


# ----------------------------------------------------------------------------------------------
def bench_ocr(server: str, endpoint: str | None, model: str | None, max_pages: int, all_pages: bool) -> None:
    """VLM OCR throughput through PdfOcr (pages/s of the whole stage, wall clock).

    ``--server vllm --model <path>`` starts vLLM on this machine's GPU (pip install -e '.[ocr]');
    ``--server endpoint --endpoint URL`` uses a running server; ``--server fake`` starts the test
    server (tests/pdf/fake_openai.py) to measure the CPU-side ceiling of the stage (render + encode
    + HTTP + checks) with an instant model.
    """
    import importlib.util
    import json

    import _pdf_data

    from assay.stages.pdf.ocr import PdfOcr
    from assay.stages.pdf.reader import PdfReader
    from assay.stages.pdf.routing import PdfRouter
    from assay.stages.pdf.textlayer import PdfTextLayer

    fake = None
    if server == "fake":
        spec = importlib.util.spec_from_file_location("fake_openai", HERE.parent / "tests" / "pdf" / "fake_openai.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fake = mod.FakeOpenAIServer(default={"text": mod.olmocr_answer(
            "# Page\n\nA realistic page of text returned by the model, with a few sentences. "
            "It has a table <table><tr><td>a</td><td>1</td></tr></table> and math $x^2$.")}).start()
        server, endpoint, model = "endpoint", fake.url, "olmocr-test"
    docs = list(PdfRouter().run(PdfTextLayer().run(PdfReader([str(_pdf_data.SHARED_PDF)]).run())))
    n = 0
    for d in docs:
        if "pdf__route" not in d.metadata:
            continue
        routes = json.loads(d.metadata["pdf__route"])
        if all_pages:
            routes = ["ocr"] * len(routes)
        keep = max(0, min(len(routes), max_pages - n))
        routes = [r if i < keep else "text" for i, r in enumerate(routes)]
        n += routes.count("ocr")
        d.metadata["pdf__route"] = json.dumps(routes)
    step = PdfOcr(server=server, endpoint=endpoint, model=model,
                  model_kwargs={"gpu-memory-utilization": 0.9} if server == "vllm" else None)
    t0 = time.perf_counter()
    out = list(step.run(iter(docs)))
    dt = time.perf_counter() - t0
    statuses = [s for d in out if "pdf__page_status" in d.metadata for s in json.loads(d.metadata["pdf__page_status"])]
    ok = statuses.count("ocr")
    _table(f"VLM OCR stage throughput (server={server if fake is None else 'fake endpoint'}, model={model})",
           ["pages sent", "ocr ok", "fallback", "failed", "wall s (incl. server start)", "pages/s"],
           [[n, ok, statuses.count("fallback"), statuses.count("pdf_ocr_failed"), f"{dt:.1f}", f"{n / dt:.2f}"]])
    if fake is not None:
        fake.stop()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--render-pages", type=int, default=40)
    ap.add_argument("--server", choices=["vllm", "endpoint", "fake"], default=None,
                    help="also measure the OCR stage: vllm (GPU), an existing endpoint, or the fake test server")
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--model", default=None, help="vLLM model path / hub id (e.g. allenai/olmOCR-2-7B-1025-FP8)")
    ap.add_argument("--ocr-pages", type=int, default=200, help="pages sent to OCR in the OCR section")
    ap.add_argument("--ocr-all-pages", action="store_true", help="OCR every page, not only routed ones")
    ap.add_argument("--sections", default="speed,routing,detectors",
                    help="comma list of speed,routing,detectors (routing builds ~500 pages: 1-2 min)")
    a = ap.parse_args(argv)
    sections = set(a.sections.split(","))
    if a.server:
        sections.add("ocr")
    print("# bench_pdf (single process = one core; 2-core machine, shared with other jobs)")
    if "speed" in sections:
        bench_speed(a.repeats, a.render_pages)
    if "routing" in sections:
        bench_routing()
    if "detectors" in sections:
        bench_detectors()
    if "ocr" in sections:
        bench_ocr(a.server or "fake", a.endpoint, a.model, a.ocr_pages, a.ocr_all_pages)


if __name__ == "__main__":
    main()
