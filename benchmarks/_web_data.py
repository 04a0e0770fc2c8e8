"""Data loading and metrics shared by benchmarks/bench_web.py and tests (no assay logic here)."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import Counter
from pathlib import Path

_WORD_RE = re.compile(r"\w+", re.UNICODE)


def shared_data_dir() -> Path:
    env = os.environ.get("ASSAY_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def html_pages(root: Path | None = None) -> list[tuple[str, str]]:
    """All (name, html) pages under html/ (readability inputs and scrapinghub pages)."""
    root = root or shared_data_dir()
    out = []
    for p in sorted((root / "html/readability/readability/input").glob("*.html")):
        out.append((f"readability/{p.stem}", p.read_text(encoding="utf-8", errors="replace")))
    for p in sorted((root / "html/scrapinghub/html").glob("*.html.gz")):
        raw = gzip.decompress(p.read_bytes())
        out.append((f"scrapinghub/{p.name[:-8]}", _decode(raw)))
    return out


def _decode(raw: bytes) -> str:
    from assay.stages.web.warc import decode_html_bytes

    try:
        return decode_html_bytes(raw)[0]
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace")


# line-number gutters of syntax highlighters: numbers beside the code, not code. Pygments (Sphinx, MkDocs) writes them
# inside the <pre> (``linenos: inline``: span.linenos before every line) or as a <pre> of their own in a table cell
# (td.linenos, div.linenodiv); Rouge td.gutter/pre.lineno, Chroma span.lnt and the first td.lntd, GitHub td.blob-num,
# highlight.js and Prism line-number plugins
GUTTER_SELECTOR = ("pre .linenos, pre .lnt, pre .lineno, td.linenos, .linenodiv, td.gutter, pre.lineno, "
                   "table.lntable td.lntd:first-child, td.blob-num, .hljs-ln-numbers, .line-numbers-rows")


def pre_lines(html: str) -> list[str]:
    """Non-empty lines of every outermost <pre> in the page (DOM text, <br> as newline, trailing
    whitespace and NBSP normalised), line-number gutters (``GUTTER_SELECTOR``) left out: the line
    " 63# examples/refine.py" of an inline-numbered Sphinx listing is "# examples/refine.py"."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    doc = tree.document
    lines: list[str] = []
    if doc is None:
        return lines
    for node in doc.query_selector_all(GUTTER_SELECTOR).values():
        if node.parent is not None:  # (a gutter inside one already taken out is detached with it)
            node.decompose()
    for pre in doc.query_selector_all("pre").values():
        if pre.parent is not None and hasattr(pre.parent, "closest") and pre.parent.closest("pre") is not None:
            continue
        for br in pre.query_selector_all("br").values():
            br.replace_with(tree.create_text_node("\n"))
        text = (pre.text or "").replace("\u00a0", " ").replace("\r\n", "\n").replace("\r", "\n")
        lines.extend(ln.rstrip() for ln in text.split("\n") if ln.strip())
    return lines


def code_fidelity(reference_lines: list[str], output: str) -> tuple[int, int]:
    """(verbatim hits, total): a reference line counts when it is a whole line of the output,
    leading indentation included."""
    out = Counter(ln.rstrip() for ln in output.replace("\u00a0", " ").split("\n"))
    hits = 0
    for ln in reference_lines:
        if out[ln] > 0:
            out[ln] -= 1
            hits += 1
    return hits, len(reference_lines)


def gold_pages(root: Path | None = None) -> list[tuple[str, str, str]]:
    """(name, html, gold_text) for readability GoldStandard and scrapinghub articleBody (all splits)."""
    return [(f"{p.corpus}/{p.name}", p.html, p.gold) for c in ("readability", "scrapinghub") for p in load_gold(c, root)]


def token_prf(pred: str, gold: str) -> tuple[float, float, float]:
    """Bag-of-words precision, recall, F1 (lower-cased \\w+ tokens)."""
    p = Counter(t.lower() for t in _WORD_RE.findall(pred))
    g = Counter(t.lower() for t in _WORD_RE.findall(gold))
    overlap = sum((p & g).values())
    np_, ng = sum(p.values()), sum(g.values())
    prec = overlap / np_ if np_ else (1.0 if not ng else 0.0)
    rec = overlap / ng if ng else 1.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1


# ------------------------------------------------------------------------------------------------
# Gold corpora with a site for grouped splits (benchmarks/splits.py)
# ------------------------------------------------------------------------------------------------
# Where a page's site comes from, first match wins:
#   1. a URL known from the corpus itself (scrapinghub ground-truth.json "url");
#   2. the page's own canonical URL: <link rel=canonical href>, <meta property=og:url>,
#      <meta name=twitter:url>, <base href> (absolute http(s) URLs only; "fakehost" test hosts ignored);
#   3. no URL: the file name, with a trailing "-<n>" removed (readability's "nytimes-1" .. "nytimes-5"
#      are one site), prefixed "file:" so it never collides with a real domain.
# The group key is then ``splits.site_of(url)`` (registrable domain), so every page of one site lands in
# one split.
_CANON_RES = (
    re.compile(r"<link\b[^>]*\brel=[\"']?canonical[\"']?[^>]*>", re.I),
    re.compile(r"<meta\b[^>]*\b(?:property|name)=[\"']?(?:og:url|twitter:url)[\"']?[^>]*>", re.I),
    re.compile(r"<base\b[^>]*>", re.I),
)
_URL_ATTR_RE = re.compile(r"\b(?:href|content)=[\"']?(https?://[^\"'\s>]+)", re.I)


def page_url(html: str) -> str | None:
    """The page's own absolute URL from canonical / og:url / twitter:url / <base> (first 200 KB)."""
    head = html[:200_000]
    for rx in _CANON_RES:
        for tag in rx.findall(head):
            m = _URL_ATTR_RE.search(tag)
            if m and "fakehost" not in m.group(1).lower():
                return m.group(1)
    return None


def site_group(url: str | None, name: str) -> str:
    """Group key for grouped splits: the registrable domain of ``url``, else ``file:<stem>``."""
    from splits import site_of

    if url:
        s = site_of(url)
        if s:
            return s
    stem = name.rsplit("/", 1)[-1]
    return "file:" + re.sub(r"-\d+$", "", stem)


class GoldPage:
    """One page of a gold corpus: ``corpus``, ``name``, ``html``, ``gold`` text, ``url`` (or None),
    ``group`` (site key) and ``split``."""

    __slots__ = ("corpus", "name", "html", "gold", "url", "group", "split")

    def __init__(self, corpus: str, name: str, html: str, gold: str, url: str | None):
        from splits import split_of

        self.corpus, self.name, self.html, self.gold, self.url = corpus, name, html, gold, url
        self.group = site_group(url, name)
        self.split = split_of(self.group, dataset=corpus)

    def __repr__(self) -> str:  # pragma: no cover
        return f"GoldPage({self.corpus}/{self.name}, {self.group}, {self.split})"


GOLD_CORPORA = ("ir_chaos", "scrapinghub", "readability")


def load_ir_chaos(root: Path | None = None) -> list[GoldPage]:
    """html/ir_chaos: 360 pages, human gold text in cp1252 (research use only: never train a shipped model)."""
    d = (root or shared_data_dir()) / "html/ir_chaos"
    out = []
    for g in sorted((d / "gold").glob("*.txt")):
        p = next((q for q in (d / "html" / f"{g.stem}.htm.gz", d / "html" / f"{g.stem}.html.gz") if q.exists()),
                 None)
        if p is None:
            continue
        html = _decode(gzip.decompress(p.read_bytes()))
        gold = g.read_bytes().decode("cp1252", errors="replace")
        out.append(GoldPage("ir_chaos", g.stem, html, gold, page_url(html)))
    return out


def load_scrapinghub(root: Path | None = None) -> list[GoldPage]:
    """html/scrapinghub: article pages with ``articleBody`` gold and the page URL from ground-truth.json."""
    sh = (root or shared_data_dir()) / "html/scrapinghub"
    truth = json.loads((sh / "ground-truth.json").read_text())
    out = []
    for key, rec in sorted(truth.items()):
        p = sh / "html" / f"{key}.html.gz"
        if p.exists() and rec.get("articleBody"):
            html = _decode(gzip.decompress(p.read_bytes()))
            out.append(GoldPage("scrapinghub", key, html, rec["articleBody"], rec.get("url") or page_url(html)))
    return out


def load_readability(root: Path | None = None) -> list[GoldPage]:
    """html/readability: Mozilla readability test pages, GoldStandard (HTML) turned into plain text."""
    from resiliparse.extract.html2text import extract_plain_text

    rd = (root or shared_data_dir()) / "html/readability/readability"
    out = []
    for g in sorted((rd / "GoldStandard").glob("*.txt")):
        inp = rd / "input" / (g.stem + ".html")
        if not inp.exists():
            continue
        gold_html = g.read_text(encoding="utf-8", errors="replace")
        gold = extract_plain_text(gold_html, main_content=False, alt_texts=False) if "<" in gold_html else gold_html
        html = inp.read_text(encoding="utf-8", errors="replace")
        out.append(GoldPage("readability", g.stem, html, gold, page_url(html)))
    return out


def load_gold(corpus: str, root: Path | None = None) -> list[GoldPage]:
    return {"ir_chaos": load_ir_chaos, "scrapinghub": load_scrapinghub,
            "readability": load_readability}[corpus](root)


def gold_split(corpus: str, split, root: Path | None = None) -> list[GoldPage]:
    """Pages of one corpus in one split (or several, e.g. ``("train", "dev")``)."""
    wanted = {split} if isinstance(split, str) else set(split)
    return [p for p in load_gold(corpus, root) if p.split in wanted]
