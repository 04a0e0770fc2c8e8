"""The corpus builder of benchmarks/bench_e2e.py (quick sizes; the pipelines are not run here)."""

from __future__ import annotations

import random
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _e2e_corpus as corpus  # noqa: E402


def _records(folder: Path):
    from warcio.archiveiterator import ArchiveIterator

    for p in sorted(folder.glob("*.warc.gz")):
        with open(p, "rb") as fh:
            for rec in ArchiveIterator(fh):
                yield rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI"), rec.http_headers, \
                    rec.content_stream().read()


@pytest.fixture(scope="module")
def quick_corpus(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e_corpus")
    # one small documentation package when apt can fetch it (the full benchmark fetches eight)
    have_apt = shutil.which("apt-get") is not None and shutil.which("dpkg") is not None
    sizes = corpus.QUICK if have_apt else corpus.Sizes(0, *corpus.QUICK[1:])
    folders = corpus.build_corpus(out, sizes=sizes, copies=(1, 5), n_files=3, doc_packages=("sphinx-doc",),
                                  log=lambda *a: None)
    return out, folders, corpus.load_manifest(out)


def test_manifest_and_one_record_per_page(quick_corpus):
    out, folders, manifest = quick_corpus
    kinds = Counter(p["kind"] for p in manifest)
    assert kinds["web"] >= 40
    assert len({p["url"] for p in manifest}) == len(manifest)
    gold = [p for p in manifest if p["gold"]]
    assert len(gold) >= 20  # ir_chaos + scrapinghub pages carry their human main text
    assert all(p["raw_tokens"] > 0 and p["split"] in ("train", "dev", "test") for p in manifest)
    if kinds["doc"]:
        docs = [p for p in manifest if p["kind"] == "doc"]
        assert all(p["site"] == "sphinx-doc.test" for p in docs)
        assert sum(len(p["pre_lines"]) for p in docs) > 0  # Sphinx pages have <pre> blocks
    recs = list(_records(folders[1]))
    assert len(recs) == len(manifest)
    assert sorted(u for _, u, _, _ in recs) == sorted(p["url"] for p in manifest)


def test_records_are_http_responses_with_real_headers(quick_corpus):
    _, folders, manifest = quick_corpus
    for rec_type, url, http, body in _records(folders[1]):
        assert rec_type == "response"
        assert http.get_statuscode() == "200" and http.protocol == "HTTP/1.1"
        assert "html" in (http.get_header("Content-Type") or "").lower()
        assert int(http.get_header("Content-Length")) == len(body)
        assert http.get_header("Date")


def test_5x_has_near_duplicate_copies(quick_corpus):
    _, folders, manifest = quick_corpus
    recs = list(_records(folders[5]))
    assert len(recs) == 5 * len(manifest)
    groups: dict[str, dict[str, bytes]] = {}
    for _, url, _, body in recs:
        groups.setdefault(corpus.base_url(url), {})[url] = body
    assert set(groups) == {p["url"] for p in manifest}
    changed = 0
    for base, copies in groups.items():
        assert len(copies) == 5 and base in copies
        orig = copies[base]
        for url, b in copies.items():
            changed += b != orig
            assert abs(len(b.split()) - len(orig.split())) <= 3  # three edits of one word at most
    assert changed >= 3 * len(groups)  # most copies carry an edit


def test_assay_reader_reads_every_record(quick_corpus):
    from assay.stages.web.warc import WarcReader

    _, folders, manifest = quick_corpus
    docs = list(WarcReader(paths=[str(folders[1])]).run())
    assert len(docs) == len(manifest)
    assert not [d for d in docs if d.metadata.get("reject_reason")]
    assert {d.metadata["url"] for d in docs} == {p["url"] for p in manifest}


def test_edit_copy_is_small_and_seeded():
    body = b"<html><body><p>" + b"one two three four five six seven eight nine ten eleven" + b"</p></body></html>"
    a = corpus.edit_copy(body, random.Random(3))
    b = corpus.edit_copy(body, random.Random(3))
    assert a == b and a != body
    assert abs(len(a.split()) - len(body.split())) <= 1
    assert corpus.base_url(corpus._copy_url("https://x.org/a?b=1#f", 2)) == "https://x.org/a?b=1#f"


def test_reserved_packages_are_refused(tmp_path):
    for name in ("git-doc", "postgresql-doc-15", "python3.11-doc"):
        with pytest.raises(ValueError, match="reserved"):
            corpus.fetch_doc_packages(tmp_path, packages=(name,))
    for name in ("python3.11-doc", "postgresql-doc-15", "git-doc"):
        assert corpus.RESERVED_PACKAGE_RE.match(name)


def test_inconsistent_gold_is_reported_beside_not_instead(quick_corpus):
    """Pages whose HTML is byte-identical to another gold page's with a different gold are flagged, and the
    boilerplate measure leaves them out only when asked (both pipelines alike)."""
    import bench_e2e

    manifest = quick_corpus[2]
    assert all("body_sha1" in p for p in manifest)
    page = {"url": "u1", "split": "train", "gold": "alpha beta gamma", "body_sha1": "h"}
    twin = {"url": "u2", "split": "train", "gold": "delta epsilon", "body_sha1": "h"}
    same = {"url": "u3", "split": "train", "gold": "alpha  beta\ngamma", "body_sha1": "k"}
    same2 = {"url": "u4", "split": "train", "gold": "alpha beta gamma", "body_sha1": "k"}
    man = [page, twin, same, same2]
    assert bench_e2e.inconsistent_gold(man) == {"u1", "u2"}
    # the corpus keeps one page per URL: a twin dropped there is marked on the page it kept
    assert bench_e2e.inconsistent_gold([same, dict(same2, url="u5", gold_conflict=True)]) == {"u5"}
    assert all(p["gold"] for p in manifest if p.get("gold_conflict"))
    kept = {"u1": ["alpha beta gamma"], "u2": ["alpha beta gamma"], "u3": ["alpha beta gamma menu"]}
    full = bench_e2e.boilerplate(man, kept)
    assert full["kept_pages"] == 3 and full["boilerplate"] == pytest.approx(4 / 10)
    clean = bench_e2e.boilerplate(man, kept, exclude=bench_e2e.inconsistent_gold(man))
    assert clean["kept_pages"] == 1 and clean["boilerplate"] == pytest.approx(1 / 4)


@pytest.mark.shared_data
def test_gold_conflicts_found_over_the_whole_ir_chaos_corpus_and_resolved_by_the_gold_drawn_from_the_html(shared_data):
    """Two pairs of ir_chaos pages have byte-identical HTML and different golds: pepsi_9/pepsi_10 (The Atlantic's
    page; pepsi_9's gold is a Backchannel newsletter) and overwatch_10/scorpio_10; no other page is flagged. Each
    HTML is scored against the one gold drawn from it (nearly all of its words in the page's visible text), which
    both pipelines then share; the other gold's words are largely absent from that HTML."""
    import gzip
    import hashlib

    ir = shared_data / "html/ir_chaos"
    files = sorted((ir / "html").glob("*.htm.gz"))
    resolved, conflicts = corpus._gold_conflicts(ir, files)
    digest = {f.name[: -len(".htm.gz")]: hashlib.sha1(gzip.decompress(f.read_bytes())).digest() for f in files}
    assert conflicts == set()
    assert {stem for stem, d in digest.items() if d in resolved} == {"pepsi_9", "pepsi_10", "overwatch_10",
                                                                      "scorpio_10"}
    assert resolved[digest["pepsi_9"]][0] == "pepsi_10" and resolved[digest["scorpio_10"]][0] == "overwatch_10"
    body = gzip.decompress((ir / "html/pepsi_9.htm.gz").read_bytes())
    own, other = ((ir / "gold" / f"{s}.txt").read_bytes().decode("cp1252", errors="replace")
                  for s in ("pepsi_10", "pepsi_9"))
    assert corpus.gold_containment(own, body) >= corpus.GOLD_FROM_PAGE > 0.8 > corpus.gold_containment(other, body)
    assert resolved[digest["pepsi_9"]][1] == own


def test_gold_conflict_stays_where_no_single_gold_is_drawn_from_the_html(tmp_path):
    """Both golds drawn from the HTML (or neither): no gold is picked, the HTML stays a conflict."""
    import gzip

    (tmp_path / "html").mkdir()
    (tmp_path / "gold").mkdir()
    html = b"<html><body><p>Alpha beta gamma delta.</p><p>Epsilon zeta eta theta.</p></body></html>"
    golds = {"a_1": "Alpha beta gamma delta.", "a_2": "Epsilon zeta eta theta.", "b_1": "Kappa lambda mu.",
             "b_2": "Nu xi omicron.", "c_1": "Alpha beta gamma delta.", "c_2": "Kappa lambda mu nu."}
    for stem, gold in golds.items():
        body = html if stem[0] == "a" else html.replace(b"Alpha", stem[0].encode())
        if stem[0] == "c":
            body = html.replace(b"Epsilon", b"C")
        (tmp_path / "html" / f"{stem}.htm.gz").write_bytes(gzip.compress(body))
        (tmp_path / "gold" / f"{stem}.txt").write_text(gold, encoding="cp1252")
    resolved, conflicts = corpus._gold_conflicts(tmp_path, sorted((tmp_path / "html").glob("*.htm.gz")))
    assert len(conflicts) == 2 and [stem for stem, _ in resolved.values()] == ["c_1"]


def test_kept_text_quality_is_read_by_the_projects_quality_order():
    """bench_e2e rates kept text with ``assay.stages.web.quality_score`` (the order the default recipe tiers
    by), not with the ``web`` model alone, and its scores equal that function's."""
    import bench_e2e
    from assay.stages.web import quality_score

    name, scorer = bench_e2e.quality_scorer()
    assert name == "assay.stages.web.quality_score"
    texts = ["The committee published its annual report on water quality in the region, with tables.",
             "Home | About | Contact | Login | Sign up | Cart | Home | About | Contact"]
    assert scorer(texts) == pytest.approx([float(x) for x in quality_score(texts)])


def test_tuned_on_sites_are_marked_and_never_the_reserved_ones():
    """bench_e2e marks the documentation sites whose pages were read to design rules ("tuned on"), so a
    rehearsal with --doc-packages reports the sites never tuned on apart; the reserved packages are never
    among them, and of the benchmark's own packages only the train and dev sites are."""
    assert corpus.doc_site("libglib2.0-doc") == "libglib2-0-doc.test"
    assert not any(corpus.RESERVED_PACKAGE_RE.match(p) for p in corpus.TUNED_ON_PACKAGES)
    assert corpus.tuned_on("scala-doc.test", "test") and corpus.tuned_on("libglib2-0-doc.test", "train")
    assert corpus.tuned_on("ruby3-1-doc.test", "dev") and corpus.tuned_on("nodejs-doc.test", "train")
    assert not corpus.tuned_on("python-scipy-doc.test", "test")
    assert not corpus.tuned_on("python-sklearn-doc.test", "train")  # set E: measured only
    assert corpus.tuned_on("libeigen3-doc.test", "train")  # set E, read by h-lang15 (session 32)


def test_a_package_name_with_regex_characters_is_resolved_as_a_name(monkeypatch):
    """``libsigc++-2.0-doc`` was skipped as "no apt candidate": read as a regex, it matched no name. A valid
    Debian name is asked for as a name first; a regex spec still picks the highest version among matches."""
    have = {"libsigc++-2.0-doc": "2.12.0-1", "ruby3.0-doc": "1", "ruby3.1-doc": "1"}
    monkeypatch.setattr(corpus, "_candidate", lambda name: have.get(name))

    class _Names:
        stdout = "\n".join(have)

    monkeypatch.setattr(corpus.subprocess, "run", lambda *a, **k: _Names())
    assert corpus.resolve_package("libsigc++-2.0-doc") == "libsigc++-2.0-doc"
    assert corpus.resolve_package(r"ruby3\.\d+-doc") == "ruby3.1-doc"
    assert corpus.resolve_package("libsigc++-3.0-doc") is None
    assert corpus.resolve_package("no-such-doc") is None


def test_a_documentation_file_name_with_spaces_is_written_and_read_back_under_one_url(tmp_path):
    """nbsphinx names pages after notebooks ("Running Code.html"); warcio reads a WARC-Target-URI with spaces back
    with %20, so the manifest must hold that URL, else the page's <pre> lines count as lost (python-notebook-doc)."""
    pkg = tmp_path / "pkg"
    (pkg / "html").mkdir(parents=True)
    body = "<html><body><h1>Running Code</h1>" + "<p>prose words here</p>" * 100 + "<pre>x = 1\ny = 2</pre></body></html>"
    (pkg / "html" / "Running Code.html").write_text(body)
    pages = corpus.doc_pages("python-notebook-doc", pkg, None, random.Random(0))
    assert [p.url for p in pages] == ["https://docs.python-notebook-doc.test/html/Running%20Code.html"]
    corpus.write_warcs([(p.url, p.body, p.headers) for p in pages], tmp_path / "warc", 1)
    assert [url for kind, url, _h, _b in _records(tmp_path / "warc") if kind == "response"] == [pages[0].url]
