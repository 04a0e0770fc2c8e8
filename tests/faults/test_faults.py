"""Fault and bad-input suite (issue 9), end to end through the real pipeline.

Each source family gets ONE run over good documents mixed with its bad inputs (generated at test
time in tmp dirs); the tests then check, per fault, that
  * the run finished (phases done, manifest written),
  * the bad item is excluded with its specific reason code,
  * every good document of the same source is written to output/,
  * conservation: signal-store rows == written + excluded, and every record the reader produced
    reached the store.
Dedup is on (exact + near) in the per-source runs; all good documents are distinct.
The recipes carry no quality rules (only stage reject reasons exclude) except where a fault's reason
code is a decision rule on a stage signal (`web_payload_cut`, `code_minified`).
Known stage bugs are strict xfails whose reason starts with "BUG:".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay.pipeline.recipe import load_recipe
from assay.pipeline.runner import run_recipe


# ------------------------------------------------------------------------------------------ helpers
@dataclass
class Run:
    run_dir: Path
    inputs: Path
    store: "object"
    kept: "object"
    excluded: "object"
    seconds: float
    info: dict

    def outcome(self, col: str, value: str) -> list[tuple[str, str | None]]:
        """[(where, reason)] of the documents whose store column `col` equals / ends with `value`."""
        import polars as pl

        rows = self.store.filter(pl.col(col).cast(pl.String).str.ends_with(value))
        out = []
        for doc_id in rows["id"].to_list():
            if self.kept.height and doc_id in set(self.kept["id"].to_list()):
                out.append(("output", None))
            elif self.excluded.height and doc_id in set(self.excluded["id"].to_list()):
                reason = self.excluded.filter(pl.col("id") == doc_id)["reason"][0]
                out.append(("excluded", reason))
            else:
                out.append(("lost", None))
        return out

    def signals_of(self, col: str, value: str) -> dict:
        import polars as pl

        rows = self.store.filter(pl.col(col).cast(pl.String).str.ends_with(value))
        assert rows.height == 1, (col, value, rows.height)
        return {k: v for k, v in rows.drop("text").to_dicts()[0].items() if v is not None}


def _stats(run_dir: Path, phase: str) -> dict[str, dict]:
    data = json.loads((run_dir / "logs" / phase / "stats.json").read_text())
    return {s["name"]: {k: (v.get("total") if isinstance(v, dict) else v) for k, v in s["stats"].items()} for s in data}


def do_run(fg, root: Path, sources: list[dict], **recipe_kw) -> Run:
    recipe = fg.write_recipe(root / "recipe.yaml", sources, **recipe_kw)
    t0 = time.perf_counter()
    result = run_recipe(load_recipe(recipe), root / "run")
    seconds = time.perf_counter() - t0
    store, kept, excluded = fg.run_tables(result.run_dir)
    return Run(result.run_dir, root / "in", store, kept, excluded, seconds, {"manifest": result.manifest})


def check_conservation(run: Run) -> None:
    """Finished run; store rows == written + excluded; ids unique; every exclusion has a reason;
    every document a reader produced reached the store."""
    assert run.info["manifest"] is not None and (run.run_dir / "manifest.json").exists()
    n_store = run.store.height
    assert n_store > 0
    assert run.kept.height + run.excluded.height == n_store, (run.kept.height, run.excluded.height, n_store)
    ids = run.store["id"].to_list()
    assert len(set(ids)) == len(ids)
    out_ids = (set(run.kept["id"].to_list()) if run.kept.height else set()) | (
        set(run.excluded["id"].to_list()) if run.excluded.height else set())
    assert out_ids == set(ids)
    if run.excluded.height:
        assert run.excluded["reason"].null_count() == 0 and (run.excluded["reason"] != "").all()
    read = sum(v.get("documents", 0) for k, v in _stats(run.run_dir, "signals").items() if "READER" in k)
    assert read == n_store, f"reader produced {read} documents, signal store holds {n_store}"


# ---------------------------------------------------------------------------------------------- web
WEB_STEPS = [{"kind": "html_extract_v1"}, {"kind": "web_heuristics_v1"}]
# a page cut by the reader's payload limit is incomplete: the decision rule turns the reader's flag into
# a reason code (proposed default web rule)
PAYLOAD_CUT_RULE = {"name": "payload_cut", "source": "web", "signal": "warc__payload_cut", "op": "is_false"}


@pytest.fixture(scope="module")
def web_run(fg, tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("web")
    inp = root / "in"
    inp.mkdir()
    info = {
        "good": fg.good_warc(inp / "good.warc.gz", "good"),
        "corrupt": fg.corrupt_gzip_warc(inp / "corrupt.warc.gz"),
        "truncated": fg.truncated_warc(inp / "truncated.warc"),
        "broken_header": fg.broken_header_warc(inp / "broken_header.warc.gz"),
        "giant": fg.giant_html_warc(inp / "giant.warc.gz"),
    }
    src = [{"name": "web", "reader": {"kind": "warc_reader_v1", "params": {"paths": [str(inp)]}}, "steps": WEB_STEPS}]
    run = do_run(fg, root, src, tasks=2, rules=[PAYLOAD_CUT_RULE], dedup=True)
    run.info.update(info)
    return run


def test_web_run_finishes_and_conserves_documents(web_run: Run):
    check_conservation(web_run)


def test_web_good_documents_all_written(web_run: Run):
    good = list(web_run.info["good"])
    good += web_run.info["corrupt"][0] + web_run.info["truncated"][0] + web_run.info["broken_header"][0]
    for url in good:
        assert web_run.outcome("url", url) == [("output", None)], url


def region_ids(run: Run, name: str) -> list[str]:
    """Ids of the damaged-region documents of one file (`web:<key>#<offset>`: no record, so no WARC type)."""
    return [i for i, t in zip(run.store["id"].to_list(), run.store["warc__type"].to_list())
            if f"{name}#" in i and t is None]


def test_corrupt_gzip_warc_file_is_excluded_with_a_warc_reason(web_run: Run):
    """Bytes flipped mid-stream in the 3rd gzip member: the records before it survive (checked above),
    the file yields one document named after the file (id `web:<key>#<offset>`) with a WARC reason."""
    ids = region_ids(web_run, "corrupt.warc.gz")
    assert len(ids) == 1, ids
    (where, reason), = web_run.outcome("id", ids[0])
    assert where == "excluded" and reason.startswith("warc_"), (where, reason)


def test_corrupt_gzip_warc_reason_is_corrupt_gzip(web_run: Run):
    ids = region_ids(web_run, "corrupt.warc.gz")
    assert web_run.outcome("id", ids[0]) == [("excluded", "warc_corrupt_gzip")]


def test_corrupt_gzip_warc_records_after_the_damage_are_read(web_run: Run):
    after = web_run.info["corrupt"][1][1:]  # the damaged member is [0]
    for url in after:
        assert web_run.outcome("url", url) == [("output", None)], url


def test_truncated_warc_record_is_excluded_and_complete_records_kept(web_run: Run):
    complete, cut = web_run.info["truncated"]
    assert web_run.outcome("url", cut) == [("excluded", "warc_truncated_record")]
    for url in complete:
        assert web_run.outcome("url", url) == [("output", None)]


def test_broken_record_header_is_excluded_with_invalid_record(web_run: Run):
    ids = region_ids(web_run, "broken_header.warc.gz")
    assert len(ids) == 1
    assert web_run.outcome("id", ids[0]) == [("excluded", "warc_invalid_record")]
    for url in web_run.info["broken_header"][0]:
        assert web_run.outcome("url", url) == [("output", None)]


def test_broken_record_header_records_after_it_are_read(web_run: Run):
    for url in web_run.info["broken_header"][1]:
        assert web_run.outcome("url", url) == [("output", None)], url


def test_giant_single_line_html_page_is_cut_and_excluded(web_run: Run):
    url = web_run.info["giant"]
    assert web_run.outcome("url", url) == [("excluded", "web_payload_cut")]
    sig = web_run.signals_of("url", url)
    assert sig["warc__payload_cut"] is True
    # the extractor never sees more than its limit (5M chars by default), the text stays bounded
    assert sig["extract__html_chars"] <= 10_000_000 and len(
        web_run.store.filter(web_run.store["url"] == url)["text"][0]) <= 5_000_000


def test_dedup_on_without_ensemble_keeps_every_document(fg, tmp_path):
    """Regression: DedupPriority once zipped each batch with a one-row literal bucket column when no
    ensemble signal existed, keeping only the first document of every batch."""
    inp = tmp_path / "in"
    inp.mkdir()
    urls = fg.good_warc(inp / "good.warc.gz", "dedupbug", n=4)
    src = [{"name": "web", "reader": {"kind": "warc_reader_v1", "params": {"paths": [str(inp)]}}, "steps": WEB_STEPS}]
    run = do_run(fg, tmp_path, src, dedup=True)
    assert run.store.height == len(urls)
    check_conservation(run)


# --------------------------------------------------------------------------------------------- code
CODE_RULES = [  # the default recipe's code rules
    {"name": "generated", "source": "code", "signal": "code__generated", "op": "is_false"},
    {"name": "minified", "source": "code", "signal": "code__minified", "op": "is_false"},
    {"name": "lockfile", "source": "code", "signal": "code__lockfile", "op": "is_false"},
]


@pytest.fixture(scope="module")
def code_run(fg, tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("code")
    inp = root / "in"
    tree = inp / "repo"
    good = fg.good_code(tree)
    fg.binary_file(tree / "blob.bin")
    fg.invalid_utf8_file(tree / "broken_utf8.py")
    fg.giant_line_file(tree / "giant_line.js", 20_000_000)
    fg.giant_line_file(tree / "big_line.js", 600_000)  # one line, under the reader's 1 MB limit
    info = {
        "good": good,
        "traversal": fg.traversal_zip(inp / "evil.zip"),
        "bomb": fg.bomb_zip(inp / "bomb.zip"),
        "lying": fg.lying_zip(inp / "lying.zip"),
    }
    paths = [str(tree), str(inp / "evil.zip"), str(inp / "bomb.zip"), str(inp / "lying.zip")]
    src = [{"name": "code", "reader": {"kind": "code_reader_v1", "params": {"paths": paths}},
            "steps": [{"kind": "code_signals_v1"}]}]
    run = do_run(fg, root, src, tasks=2, rules=CODE_RULES, dedup=True)
    run.info.update(info)
    return run


def test_code_run_finishes_and_conserves_documents(code_run: Run):
    check_conservation(code_run)


def test_code_good_files_all_written(code_run: Run):
    good = list(code_run.info["good"]) + [code_run.info["traversal"][0], code_run.info["bomb"][0]]
    for name in good:
        assert code_run.outcome("path", name) == [("output", None)], name


def test_binary_file_in_code_tree(code_run: Run):
    assert code_run.outcome("path", "blob.bin") == [("excluded", "code_binary")]


def test_invalid_utf8_file_in_code_tree_does_not_crash(code_run: Run):
    """The file reaches the store; if it is kept, the guessed encoding is recorded so a rule can act."""
    (where, reason), = code_run.outcome("path", "broken_utf8.py")
    if where == "excluded":
        assert reason == "code_undecodable"
    else:
        assert where == "output"
        assert code_run.signals_of("path", "broken_utf8.py").get("encoding") not in (None, "", "utf-8")


def test_invalid_utf8_file_is_excluded_as_undecodable(code_run: Run):
    assert code_run.outcome("path", "broken_utf8.py") == [("excluded", "code_undecodable")]


def test_giant_single_line_file_over_the_size_limit(code_run: Run):
    assert code_run.outcome("path", "giant_line.js") == [("excluded", "code_oversized")]


def test_giant_single_line_file_under_the_size_limit_is_minified(code_run: Run):
    assert code_run.outcome("path", "big_line.js") == [("excluded", "code_minified")]


def test_zip_path_traversal_member_is_excluded_and_nothing_escapes(code_run: Run):
    good, evil = code_run.info["traversal"]
    assert code_run.outcome("path", evil) == [("excluded", "code_archive_path_traversal")]
    assert code_run.outcome("path", good) == [("output", None)]
    # nothing was extracted next to (or above) the archive
    for base in (code_run.inputs, code_run.inputs.parent, code_run.inputs.parent.parent):
        assert not (base / "etc" / "x").exists()
    assert not Path("/etc/x").exists()


def test_zip_bomb_member_is_oversized_without_inflating(code_run: Run):
    good, big = code_run.info["bomb"]
    assert code_run.outcome("path", big) == [("excluded", "code_oversized")]
    assert code_run.outcome("path", good) == [("output", None)]
    text = code_run.store.filter(code_run.store["path"] == big)["text"][0]
    assert text == ""


def test_zip_member_with_forged_size_is_corrupt_archive(code_run: Run):
    name = code_run.info["lying"]
    assert code_run.outcome("path", name) == [("excluded", "code_corrupt_archive")]


# ---------------------------------------------------------------------------------------------- pdf
def pdf_steps(ocr: dict, *, timeout_s: float = 120, max_memory_mb: int = 2048) -> list[dict]:
    return [
        {"kind": "pdf_text_layer_v1", "params": {"timeout_s": timeout_s, "max_memory_mb": max_memory_mb}},
        {"kind": "pdf_router_v1"},
        {"kind": "pdf_ocr_v1", "params": ocr},
        {"kind": "pdf_artifacts_v1"},
    ]


@pytest.fixture(scope="module")
def pdf_run(fg, tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("pdf")
    inp = root / "in"
    inp.mkdir()
    fg.text_pdf(inp / "good_a.pdf", "a")
    fg.text_pdf(inp / "good_b.pdf", "b")
    fg.encrypted_pdf(inp / "encrypted.pdf")
    fg.corrupt_pdf(inp / "corrupt.pdf")
    fg.truncated_pdf(inp / "truncated.pdf", root / "whole.pdf")
    fg.billion_laughs_pdf(inp / "endless.pdf", paint=b"0 0 1 1 re f\n")  # hangs, memory flat
    fg.billion_laughs_pdf(inp / "explode.pdf")  # text extraction accumulates 10**9 characters
    src = [{"name": "pdf", "reader": {"kind": "pdf_reader_v1", "params": {"paths": [str(inp)], "timeout_s": 10}},
            "steps": pdf_steps({"server": "none"}, timeout_s=8, max_memory_mb=1024)}]
    return do_run(fg, root, src, tasks=1, dedup=True)


def test_pdf_run_finishes_and_conserves_documents(pdf_run: Run):
    check_conservation(pdf_run)
    # the endless PDF cost about one timeout, not hours
    assert pdf_run.seconds < 90


def test_pdf_good_documents_written(pdf_run: Run):
    for name in ("good_a.pdf", "good_b.pdf"):
        assert pdf_run.outcome("id", name) == [("output", None)], name


def test_encrypted_pdf(pdf_run: Run):
    assert pdf_run.outcome("id", "encrypted.pdf") == [("excluded", "pdf_encrypted")]


def test_corrupt_pdf(pdf_run: Run):
    assert pdf_run.outcome("id", "corrupt.pdf") == [("excluded", "pdf_corrupt")]


def test_truncated_pdf_does_not_crash(pdf_run: Run):
    """MuPDF repairs the cut file; whatever it salvages, the document is accounted for."""
    (where, reason), = pdf_run.outcome("id", "truncated.pdf")
    assert where in ("output", "excluded")
    if where == "excluded":
        assert reason.startswith("pdf_")


def test_truncated_pdf_is_excluded_as_corrupt(pdf_run: Run):
    assert pdf_run.outcome("id", "truncated.pdf") == [("excluded", "pdf_corrupt")]


def test_pdf_that_makes_the_parser_hang_times_out(pdf_run: Run):
    assert pdf_run.outcome("id", "endless.pdf") == [("excluded", "pdf_timeout")]


def test_pdf_that_explodes_memory_is_stopped_by_a_limit(pdf_run: Run):
    """The parse is stopped (memory cap or timeout) and the document excluded; the task goes on."""
    (where, reason), = pdf_run.outcome("id", "explode.pdf")
    assert where == "excluded" and reason in ("pdf_oversized", "pdf_timeout", "pdf_corrupt"), (where, reason)


# ---------------------------------------------------------------------------------------------- OCR
@pytest.mark.parametrize("mode", ["500", "hang"])
def test_ocr_server_failure_excludes_the_scanned_pdf_and_keeps_the_rest(fg, tmp_path, mode):
    server = fg.FakeOcrServer(mode, hang_s=30)
    try:
        inp = tmp_path / "in"
        inp.mkdir()
        fg.text_pdf(inp / "good_a.pdf", f"ocr-{mode}")
        fg.scanned_pdf(inp / "scanned.pdf", f"scan-{mode}")
        ocr = {"server": "endpoint", "endpoint": server.url, "model": "x", "request_timeout_s": 2,
               "http_retries": 1, "http_backoff_s": 0.1, "max_attempts": 2, "endpoint_ready_timeout_s": 5,
               "render_workers": 0}
        src = [{"name": "pdf", "reader": {"kind": "pdf_reader_v1", "params": {"paths": [str(inp)]}},
                "steps": pdf_steps(ocr)}]
        run = do_run(fg, tmp_path, src, tasks=1)
    finally:
        server.close()
    assert server.chat_requests >= 1  # the scanned page really went to the failing server
    check_conservation(run)
    assert run.outcome("id", "good_a.pdf") == [("output", None)]
    assert run.outcome("id", "scanned.pdf") == [("excluded", "pdf_no_text")]
    sig = run.signals_of("id", "scanned.pdf")
    assert json.loads(sig["pdf__page_status"]) == ["pdf_ocr_failed"]
    assert sig["pdf__ocr_failed_pages"] == 1
    # a hanging server costs client timeouts, not the server's 30 s hang per request
    assert run.seconds < 60


# ---------------------------------------------------------------------------------------- full disk
def _shard_sums(run_dir: Path) -> dict[str, str]:
    return {
        p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for sub in ("output", "excluded")
        for p in sorted((run_dir / sub).rglob("*.parquet"))
    }


def _mount_tmpfs(target: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    target.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)],
                          capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def disk_inputs(fg, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """~1.4 MB of hard-to-compress source (each signal-store part ~190 KB) and the shard checksums of
    a run on a normal disk."""
    root = tmp_path_factory.mktemp("disk")
    fg.good_code(root / "in" / "repo", n=60, n_funcs=150)
    src = [{"name": "code", "reader": {"kind": "code_reader_v1", "params": {"paths": [str(root / "in" / "repo")]}},
            "steps": [{"kind": "code_signals_v1"}]}]
    recipe = fg.write_recipe(root / "recipe.yaml", src, tasks=2)
    proc = fg.assay("run", str(recipe), "-o", str(root / "reference"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = _shard_sums(root / "reference")
    assert ref
    return recipe, ref


@pytest.mark.slow
@pytest.mark.parametrize("size,phase", [("250k", "signals"), ("600k", "decide")],
                         ids=["signal-store-write", "output-shard-write"])
def test_full_disk_during_write_fails_loudly_then_rerun_completes(fg, tmp_path, disk_inputs, size, phase):
    """A size-limited tmpfs as the output disk: 250 KB fills up while the signal store's second part is
    written, 600 KB while the decide phase writes output shards. The run fails naming the phase and
    ENOSPC, leaves no manifest and no parquet file that is not complete; after the filesystem grows
    the same command finishes with the same shards as a run that never failed."""
    import pyarrow.parquet as pq

    recipe, ref = disk_inputs
    mnt = tmp_path / "small_disk"
    if not _mount_tmpfs(mnt, size):
        pytest.skip("needs root and permission to mount a size-limited tmpfs to simulate a full disk")
    try:
        out = mnt / "run"
        proc = fg.assay("run", str(recipe), "-o", str(out))
        log = proc.stdout + proc.stderr
        assert proc.returncode != 0, "the run claimed success on a full disk"
        errors = [ln for ln in log.splitlines() if ln.startswith("error:")]
        assert errors and f"phase '{phase}' failed" in errors[-1] and "No space left on device" in errors[-1], errors
        assert not (out / "manifest.json").exists()
        # no half shard that looks whole: every parquet file left under its final name is complete
        for p in out.rglob("*.parquet"):
            pq.read_metadata(p)
        if phase == "decide":
            assert not list((out / "output").rglob("*.parquet"))

        subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)  # free space
        proc = fg.assay("run", str(recipe), "-o", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert (out / "manifest.json").exists()
        assert _shard_sums(out) == ref
        store, kept, excluded = fg.run_tables(out)
        assert store.height == 60 and kept.height + excluded.height == 60
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
