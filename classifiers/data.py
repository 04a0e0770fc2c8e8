"""Labelled-data builders for the trainer.

A training recipe lists *sources*; each names a ``builder`` (how to read it) and its parameters.
Builders yield :class:`Example` records (text, label or score, group). The same builders read
user data (``labelled``: JSONL/Parquet with text and label or score), human labels, LLM
annotations written by ``python -m assay.classifiers annotate``, and the project's reference corpora.

Paths are relative to the data root (``--data-root``, ``$ASSAY_SHARED_DATA`` or ``../shared/data``)
unless absolute; ``{stdlib}`` and ``{site_packages}`` expand to this interpreter's directories
(files every machine with Python has). Every file read is hashed (sha256) for the model card.
"""
from __future__ import annotations

import bz2
import glob as _glob
import gzip
import hashlib
import io
import json
import os
import random
import re
import sysconfig
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Example:
    text: str
    label: int | None = None
    score: float | None = None
    group: str = ""
    source: str = ""
    lang: str = ""  # ISO 639-1 where the source says (HPLT, Turku); "" when unknown
    repeat: int = 1  # times this example is written to the training file (source key ``repeat``)


@dataclass
class SourceLog:
    """What a builder read: for the model card."""

    files: dict[str, str] = field(default_factory=dict)  # path -> sha256
    n_docs: int = 0
    skipped: int = 0  # records a builder passed over as unreadable (damaged WARC regions, undecodable payloads)

    def add(self, path: str | Path) -> None:
        p = str(path)
        if p not in self.files:
            self.files[p] = sha256_file(p)

    def summary(self, root: Path | None = None) -> dict:
        items = sorted(self.files.items())

        def rel(p: str) -> str:
            if root is not None:
                try:
                    return str(Path(p).resolve().relative_to(root.resolve()))
                except ValueError:
                    pass
            return p

        out: dict = {"n_files": len(items)}
        if len(items) <= 25:
            out["files"] = [{"path": rel(p), "sha256": h} for p, h in items]
        else:
            d = hashlib.sha256()
            for p, h in items:
                d.update(f"{rel(p)}\t{h}\n".encode())
            out["files_sha256"] = d.hexdigest()
            out["files_sample"] = [rel(p) for p, _ in items[:5]]
        return out


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_data_root() -> Path:
    env = os.environ.get("ASSAY_SHARED_DATA")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared" / "data"


def expand(pattern: str | list[str], root: Path) -> list[Path]:
    """Expand ``{stdlib}``/``{site_packages}`` and globs (a pattern or a list of patterns), relative
    to ``root``; sorted, files only."""
    if isinstance(pattern, (list, tuple)):
        return sorted({p for pat in pattern for p in expand(pat, root)})
    pattern = pattern.replace("{stdlib}", sysconfig.get_paths()["stdlib"])
    pattern = pattern.replace("{site_packages}", sysconfig.get_paths()["purelib"])
    p = pattern if os.path.isabs(pattern) else str(root / pattern)
    return sorted(Path(x) for x in _glob.glob(p, recursive=True) if os.path.isfile(x))


def open_text(path: str | Path) -> io.TextIOBase:
    p = str(path)
    if p.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", errors="replace")
    if p.endswith(".bz2"):
        return io.TextIOWrapper(bz2.open(p, "rb"), encoding="utf-8", errors="replace")
    if p.endswith(".zst"):
        import zstandard  # noqa: PLC0415

        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(p, "rb")),
                                encoding="utf-8", errors="replace")
    return open(p, encoding="utf-8", errors="replace")


def _tar_members(path: Path) -> Iterator[tuple[str, bytes]]:
    import zstandard  # noqa: PLC0415

    with open(path, "rb") as fh:
        stream = zstandard.ZstdDecompressor().stream_reader(fh) if str(path).endswith(".zst") else fh
        with tarfile.open(fileobj=stream, mode="r|*") as tf:
            for m in tf:
                if m.isfile():
                    f = tf.extractfile(m)
                    if f is not None:
                        yield m.name, f.read()


# ----------------------------------------------------------------------------------------------
# label parsing
_POS = {"1", "true", "yes", "hq", "high", "pos", "positive", "good", "clean", "__label__1"}
_NEG = {"0", "false", "no", "lq", "low", "neg", "negative", "bad", "noise", "corrupt", "corrupted", "__label__0"}


def parse_label(v) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return 1 if v >= 1 else 0 if v == 0 else None
    s = str(v).strip().lower()
    if s in _POS:
        return 1
    if s in _NEG:
        return 0
    return None


# ----------------------------------------------------------------------------------------------
# builders: (spec, root, log) -> iterator of Example
Builder = Callable[[dict, Path, SourceLog], Iterator[Example]]
BUILDERS: dict[str, Builder] = {}


def builder(name: str):
    def deco(fn: Builder) -> Builder:
        BUILDERS[name] = fn
        return fn
    return deco


def _read_records(path: Path) -> Iterator[dict]:
    s = str(path)
    if s.endswith(".parquet"):
        import pyarrow.parquet as pq  # noqa: PLC0415

        for batch in pq.ParquetFile(s).iter_batches(batch_size=4096):
            yield from batch.to_pylist()
        return
    with open_text(path) as f:
        if s.endswith((".json", ".json.gz")) and not s.endswith(".jsonl"):
            head = f.read(1)
            rest = f.read()
            txt = head + rest
            if head == "[":
                yield from json.loads(txt)
                return
            lines = txt.splitlines()
        else:
            lines = f
        for line in lines:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                yield rec


@builder("labelled")
def build_labelled(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """JSONL(.gz)/JSON/Parquet records with a text field and a label or score field.

    ``label_field`` (default ``label``) values like 1/0, true/false, hq/lq; or ``score_field`` with
    ``score_threshold`` (label = score >= threshold, e.g. FineWeb-Edu uses 3 on a 0-5 scale);
    a constant ``label`` on the source spec overrides both."""
    text_field = spec.get("text_field", "text")
    label_field = spec.get("label_field", "label")
    score_field = spec.get("score_field")
    thr = spec.get("score_threshold")
    id_field = spec.get("id_field", "id")
    for path in expand(spec["path"], root):
        log.add(path)
        for i, rec in enumerate(_read_records(path)):
            text = rec.get(text_field)
            if not isinstance(text, str) or not text.strip():
                continue
            label, score = None, None
            if score_field is not None:
                try:
                    score = float(rec.get(score_field))
                except (TypeError, ValueError):
                    continue
                if thr is not None:
                    label = int(score >= float(thr))
            if label is None and label_field in rec:
                label = parse_label(rec.get(label_field))
            yield Example(text=text, label=label, score=score, group=f"{path.name}:{rec.get(id_field, i)}")


@builder("text")
def build_text(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """Plain text files. ``unit``: ``file`` (one doc per file), ``lines`` or ``paragraphs``."""
    unit = spec.get("unit", "file")
    for path in expand(spec["path"], root):
        log.add(path)
        with open_text(path) as f:
            txt = f.read()
        if unit == "file":
            parts = [txt]
        elif unit == "lines":
            parts = txt.splitlines()
        elif unit == "paragraphs":
            parts = re.split(r"\n\s*\n", txt)
        else:
            raise ValueError(f"text builder: unknown unit {unit!r}")
        for i, t in enumerate(parts):
            if t.strip():
                yield Example(text=t, group=f"{spec.get('group_prefix', path.name)}:{path.stem}:{i if unit != 'file' else ''}")


# --- Wikipedia XML dumps ------------------------------------------------------------------------
_WIKI_SUBS = [
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"<ref[^>/]*/>", re.S), ""),
    (re.compile(r"<ref[^>]*>.*?</ref>", re.S), ""),
    (re.compile(r"<(math|gallery|timeline|score)[^>]*>.*?</\1>", re.S), ""),
    (re.compile(r"</?[a-zA-Z][^>]*>"), ""),
]
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_TABLE = re.compile(r"\{\|[^{}]*?\|\}", re.S)
_FILELINK = re.compile(r"\[\[(?:File|Image|Category|[a-z]{2,3}(?:-[a-z]+)?):[^\[\]]*\]\]", re.I)
_LINK = re.compile(r"\[\[(?:[^\[\]|]*\|)?([^\[\]]*)\]\]")
_EXTLINK = re.compile(r"\[https?://[^\s\]]+\s*([^\]]*)\]")
_HEADING = re.compile(r"^=+\s*(.*?)\s*=+\s*$", re.M)
_CUT_SECTIONS = re.compile(r"^==\s*(References|See also|External links|Notes|Further reading|Bibliography|Sources)\s*==.*",
                           re.M | re.S | re.I)


def strip_wikitext(wt: str) -> str:
    wt = _CUT_SECTIONS.sub("", wt)
    for rx, rep in _WIKI_SUBS:
        wt = rx.sub(rep, wt)
    for _ in range(10):
        new = _TEMPLATE.sub("", wt)
        new = _TABLE.sub("", new)
        if new == wt:
            break
        wt = new
    for _ in range(5):
        new = _FILELINK.sub("", wt)
        if new == wt:
            break
        wt = new
    wt = _LINK.sub(r"\1", wt)
    wt = _EXTLINK.sub(r"\1", wt)
    wt = _HEADING.sub(r"\1", wt)
    wt = wt.replace("'''", "").replace("''", "")
    lines = []
    for line in wt.splitlines():
        s = line.strip()
        if s.startswith(("{{", "}}", "|", "!", "{|", "|}", "__")):
            continue
        s = s.lstrip("*#:; ").strip()
        lines.append(s)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@builder("wikipedia_xml")
def build_wikipedia(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """MediaWiki XML dump (.bz2). ``categories_include``/``categories_exclude``: regexes on the
    article's categories (to pick STEM or non-STEM articles)."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    inc = re.compile(spec["categories_include"], re.I) if spec.get("categories_include") else None
    exc = re.compile(spec["categories_exclude"], re.I) if spec.get("categories_exclude") else None
    cat_rx = re.compile(r"\[\[Category:([^\]|]+)", re.I)
    for path in expand(spec["path"], root):
        log.add(path)
        opener = bz2.open if str(path).endswith(".bz2") else open
        with opener(path, "rb") as fh:
            title, ns = None, None
            for _, el in ET.iterparse(fh, events=("end",)):
                tag = el.tag.rsplit("}", 1)[-1]
                if tag == "title":
                    title = el.text
                elif tag == "ns":
                    ns = el.text
                elif tag == "text":
                    wt = el.text or ""
                    if ns == "0" and not wt.lstrip().upper().startswith("#REDIRECT"):
                        cats = " | ".join(cat_rx.findall(wt))
                        if (inc is None or inc.search(cats)) and not (exc is not None and exc.search(cats)):
                            txt = strip_wikitext(wt)
                            if title:
                                txt = f"{title}\n\n{txt}"
                            yield Example(text=txt, group=f"wiki:{path.name}:{title}")
                elif tag == "page":
                    el.clear()


# --- HTML / WARC ------------------------------------------------------------------------------
def html_to_text(html: str | bytes, *, main_content: bool = True) -> str:
    from resiliparse.extract.html2text import extract_plain_text  # noqa: PLC0415
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding  # noqa: PLC0415

    if isinstance(html, bytes):
        html = bytes_to_str(html, detect_encoding(html))
    return extract_plain_text(html, main_content=main_content, alt_texts=False, links=False)


@builder("warc_html")
def build_warc_html(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """HTML responses from WARC files, extracted with resiliparse (``main_content`` default True).

    Parsed by the project's one WARC parser (:func:`assay.io.warc.iter_records`: resync after damaged gzip
    members or records, so a damaged region loses only itself); payloads decoded with
    :func:`assay.io.warc.decode_html_bytes` as the pipeline's reader does. Damaged regions, unreadable payloads
    and payloads no charset decodes are passed over (counted in ``log.skipped``)."""
    from assay.io.warc import decode_html_bytes, iter_records  # noqa: PLC0415

    main = bool(spec.get("main_content", True))
    for path in expand(spec["path"], root):
        if not os.access(path, os.R_OK):
            continue
        log.add(path)
        for i, rec in enumerate(iter_records(path, types=("response",))):
            if rec.error is not None or rec.rec_type is None or "html" not in rec.content_type:
                log.skipped += rec.error is not None or rec.rec_type is None
                continue
            ct = (rec.http_headers or {}).get("Content-Type") or ""
            m = re.search(r"charset\s*=\s*([^\s;]+)", ct, re.IGNORECASE)
            try:
                html, _, _ = decode_html_bytes(rec.payload, m.group(1) if m else None)
                txt = html_to_text(html, main_content=main)
            except Exception:  # noqa: BLE001 - a broken record must not stop training
                log.skipped += 1
                continue
            yield Example(text=txt, group=f"warc:{rec.uri or i}")


@builder("html_files")
def build_html_files(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """HTML files (optionally .gz) extracted with resiliparse; ``main_content: false`` keeps boilerplate."""
    main = bool(spec.get("main_content", True))
    prefix = spec.get("group_prefix", "html")
    for path in expand(spec["path"], root):
        log.add(path)
        raw = gzip.open(path).read() if str(path).endswith(".gz") else path.read_bytes()
        try:
            txt = html_to_text(raw, main_content=main)
        except Exception:  # noqa: BLE001
            continue
        stem = path.name.split(".")[0]
        yield Example(text=txt, group=f"{prefix}:{stem}")


@builder("json_field")
def build_json_field(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """A JSON object ``{id: {field: text}}`` (e.g. scrapinghub ``ground-truth.json`` articleBody)."""
    prefix = spec.get("group_prefix", "json")
    for path in expand(spec["path"], root):
        log.add(path)
        with open_text(path) as f:
            d = json.load(f)
        items = d.items() if isinstance(d, dict) else enumerate(d)
        for k, v in items:
            t = v.get(spec.get("field", "text")) if isinstance(v, dict) else None
            if isinstance(t, str) and t.strip():
                yield Example(text=t, group=f"{prefix}:{k}")


# --- code -------------------------------------------------------------------------------------
@builder("tar_files")
def build_tar_files(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """Files inside tar(.zst) archives; ``include`` regex on member names; binary members skipped."""
    inc = re.compile(spec.get("include", r".*"))
    exc = re.compile(spec["exclude"]) if spec.get("exclude") else None
    for path in expand(spec["path"], root):
        log.add(path)
        for name, data in _tar_members(path):
            if not inc.search(name) or (exc is not None and exc.search(name)) or b"\x00" in data[:8192]:
                continue
            yield Example(text=data.decode("utf-8", "replace"), group=f"tar:{path.name}:{name}")


@builder("files")
def build_files(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """Local files by glob (supports ``{stdlib}``/``{site_packages}``); one document per file."""
    max_bytes = int(spec.get("max_bytes", 5_000_000))
    for path in expand(spec["path"], root):
        try:
            if path.stat().st_size > max_bytes:
                continue
            data = gzip.open(path).read() if str(path).endswith(".gz") else path.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        log.add(path)
        yield Example(text=data.decode("utf-8", "replace"), group=f"file:{path}")


# --- PDF / STEM -------------------------------------------------------------------------------
@builder("pdf_text")
def build_pdf_text(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """Text layer of PDFs (pymupdf), one document per page."""
    import pymupdf  # noqa: PLC0415

    for path in expand(spec["path"], root):
        try:
            doc = pymupdf.open(path)
        except Exception:  # noqa: BLE001
            continue
        log.add(path)
        with doc:
            if doc.needs_pass:
                continue
            for i, page in enumerate(doc):
                try:
                    txt = page.get_text("text")
                except Exception:  # noqa: BLE001
                    continue
                yield Example(text=txt, group=f"pdf:{path.name}:{i // 4}")


@builder("pydoc_topics")
def build_pydoc_topics(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """The Python language reference shipped with every CPython (``pydoc_data/topics.py``)."""
    import pydoc_data.topics as topics  # noqa: PLC0415

    log.add(topics.__file__)
    for k, v in sorted(topics.topics.items()):
        yield Example(text=v, group=f"pydoc:{k}")


# ISO 639-3 (HPLT file names) -> the codes lid.176 predicts
ISO3_TO_LID = {"ara": "ar", "ast": "ast", "ben": "bn", "cat": "ca", "ces": "cs", "deu": "de", "ell": "el", "eng": "en",
               "fin": "fi", "gla": "gd", "hin": "hi", "mar": "mr", "nld": "nl", "nno": "nn", "nob": "no", "pol": "pl",
               "slk": "sk", "spa": "es"}


def _hplt_num(v) -> float | None:
    try:
        x = float(str(v).strip().replace(",", "."))
    except (TypeError, ValueError):
        return None
    return None if x != x else x


def hplt_label(porn, unnatural, lang_correct) -> int | None:
    """HPLT inspection row -> 1 (good) / 0 (porn, unnatural = SEO lists or mostly boilerplate, or wrong
    language) / None (not annotated). ``unnatural`` is a share in [0, 1] in some batches (deu): >= 0.5
    counts as unnatural; ``lang correct?`` below 1 (0 or 0.5) counts as wrong language."""
    p, u, lc = _hplt_num(porn), _hplt_num(unnatural), _hplt_num(lang_correct)
    if p is None and u is None and lc is None:
        return None
    if (p is not None and p > 0) or (u is not None and u >= 0.5) or (lc is not None and lc < 1):
        return 0
    return 1


@builder("hplt_inspection")
def build_hplt(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """HPLT v2 inspection TSVs (``<lang>_<Script>__batch<k>.tsv.gz``): one example per row with the human
    label of :func:`hplt_label` (``label_kind: porn`` labels porn only: 1 = porn); ``labelled_only``
    (default True) skips rows nobody annotated. Group ``hplt:<file>:<row id>`` (rows are independent
    random documents; the file carries no URL). ``langs``: ISO 639-3 codes to keep."""
    import csv  # noqa: PLC0415

    langs = set(spec.get("langs") or [])
    labelled_only = bool(spec.get("labelled_only", True))
    kind = spec.get("label_kind", "quality")
    for path in expand(spec["path"], root):
        iso3 = path.name.split("_")[0]
        if langs and iso3 not in langs:
            continue
        log.add(path)
        with open_text(path) as f:
            rows = list(csv.reader(f, delimiter="\t"))
        if not rows:
            continue
        head = [h.split()[0].lower() if h.strip() else "" for h in rows[0]]
        col = {name: head.index(name) for name in ("porn?", "unnatural?", "lang", "text_show", "id") if name in head}
        for i, r in enumerate(rows[1:]):
            get = lambda k: r[col[k]] if k in col and col[k] < len(r) else None  # noqa: E731
            text = get("text_show") or ""
            if not text.strip():
                continue
            if kind == "porn":
                p = _hplt_num(get("porn?"))
                any_label = any(_hplt_num(get(k)) is not None for k in ("porn?", "unnatural?", "lang"))
                label = (1 if (p or 0) > 0 else 0) if any_label else None
            else:
                label = hplt_label(get("porn?"), get("unnatural?"), get("lang"))
            if label is None and labelled_only:
                continue
            yield Example(text=text, label=label, group=f"hplt:{path.name}:{get('id') or i}",
                          lang=ISO3_TO_LID.get(iso3, iso3))


@builder("register_core")
def build_register_core(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """TurkuNLP CORE register-labelled web documents (``<lang>.tsv.gz``: register labels, text).
    Label 0 for machine-translated documents (register ``MT``), 1 otherwise."""
    for path in expand(spec["path"], root):
        lang = path.name.split(".")[0]
        log.add(path)
        with open_text(path) as f:
            for i, line in enumerate(f):
                regs, _, text = line.rstrip("\n").partition("\t")
                if not text.strip():
                    continue
                yield Example(text=text.strip(), label=0 if "MT" in regs.split() else 1,
                              group=f"core:{lang}:{i}", lang=lang)


@builder("turku_lines")
def build_turku(spec: dict, root: Path, log: SourceLog) -> Iterator[Example]:
    """Turku line-wise human text-quality labels (``1`` = clean, ``0`` = noise) from the tar.zst.

    ``unit: line`` yields labelled lines (``min_words`` filters); ``unit: doc`` yields one example
    per annotated document with ``score`` = share of clean words and label = score >= ``doc_threshold``;
    ``unit: window`` the same for runs of ``window_lines`` consecutive lines (at least ``min_words`` words).
    """
    langs = set(spec.get("langs", ["en"]))
    splits = set(spec.get("splits", ["train", "dev", "test"]))
    unit = spec.get("unit", "line")
    min_words = int(spec.get("min_words", 0))
    thr = float(spec.get("doc_threshold", 0.5))
    for path in expand(spec["path"], root):
        log.add(path)
        for name, data in _tar_members(path):
            parts = name.split("/")
            if len(parts) < 2 or not name.endswith(".json"):
                continue
            lang, split = parts[-2], parts[-1][:-5]
            if lang not in langs or split not in splits:
                continue
            for di, doc in enumerate(json.loads(data)):
                lines, labels = doc["text"], [int(x) for x in doc["labels"]]
                group = f"turku:{lang}:{split}:{di}"
                if unit in ("doc", "window"):
                    # weight lines by words: share of clean words; "window": runs of ``window_lines`` consecutive
                    # lines of a document (a page-sized excerpt with its real mix of clean and noise lines)
                    k = int(spec.get("window_lines", 8)) if unit == "window" else max(1, len(lines))
                    for a in range(0, len(lines), k):
                        seg, lab = lines[a:a + k], labels[a:a + k]
                        w = [len(t.split()) for t in seg]
                        tot = sum(w) or 1
                        if unit == "window" and tot < max(1, min_words):
                            continue
                        score = sum(wi for wi, lb in zip(w, lab) if lb == 1) / tot
                        yield Example(text="\n".join(seg), label=int(score >= thr), score=score, group=group, lang=lang)
                else:
                    for t, lb in zip(lines, labels):
                        if len(t.split()) >= min_words:
                            yield Example(text=t, label=lb, group=group, lang=lang)


# --- derived negatives: corruption ------------------------------------------------------------
def corrupt_code(text: str, rng: random.Random) -> str:
    """Simple, realistic-looking code corruptions: shuffled/duplicated/truncated lines, mangled
    identifiers and brackets, stripped indentation."""
    lines = text.splitlines()
    if len(lines) < 3:
        return text[: max(1, len(text) // 2)]
    kind = rng.choice(["shuffle", "dedent", "mangle", "truncate_lines", "dup", "brackets"])
    if kind == "shuffle":
        k = max(2, len(lines) // 3)
        i = rng.randrange(0, max(1, len(lines) - k))
        seg = lines[i:i + k]
        rng.shuffle(seg)
        lines[i:i + k] = seg
    elif kind == "dedent":
        lines = [ln.lstrip() for ln in lines]
    elif kind == "mangle":
        lines = [re.sub(r"[A-Za-z_]\w{3,}", lambda m: m.group(0)[: rng.randint(1, 3)], ln) if rng.random() < 0.5 else ln
                 for ln in lines]
    elif kind == "truncate_lines":
        lines = [ln[: rng.randint(0, max(1, len(ln)))] if rng.random() < 0.6 else ln for ln in lines]
    elif kind == "dup":
        i = rng.randrange(len(lines))
        lines = lines[:i] + [lines[i]] * rng.randint(5, 20) + lines[i:]
    else:
        lines = [ln.translate(str.maketrans("(){}[]", ")(}{][")) if rng.random() < 0.5 else ln for ln in lines]
    return "\n".join(lines)


_OCR_CONFUSIONS = {"l": "1", "I": "l", "O": "0", "o": "0", "e": "c", "m": "rn", "rn": "m", "S": "5",
                   "a": "o", "i": "í", "t": "f", "h": "b", "n": "ri", "u": "v", "c": "e"}


def _junk_token(rng: random.Random) -> str:
    alphabet = "aeilnorstAEIOS0123456789.,:;-'\"*/|~^#&!?()[]{}•■¬"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))


def corrupt_ocr(text: str, rng: random.Random) -> str:
    """OCR/extraction noise at a random intensity: character confusions, broken word spacing, stray
    symbols and junk tokens, lines fragmented into one-to-three-word pieces, or interleaved columns
    (garbled reading order). Several kinds may combine."""
    words = text.split()
    if not words:
        return text
    level = rng.uniform(0.15, 0.7)
    kinds = set(rng.sample(["chars", "spacing", "symbols", "fragment", "columns", "junk"], k=rng.randint(1, 3)))
    if "columns" in kinds:
        lines = text.splitlines()
        half = len(lines) // 2
        mixed = [f"{a[: len(a) // 2]} {b[len(b) // 2:]}" for a, b in zip(lines[:half], lines[half:])]
        if mixed:
            words = " ".join(mixed).split()
    if "chars" in kinds:
        words = ["".join(_OCR_CONFUSIONS.get(ch, ch) if rng.random() < level else ch for ch in w)
                 if rng.random() < level else w for w in words]
    if "spacing" in kinds:
        out: list[str] = []
        for w in words:
            r = rng.random()
            if r < level / 2 and len(w) > 3:
                k = rng.randrange(1, len(w) - 1)
                out.extend([w[:k], w[k:]])
            elif r < level and out:
                out[-1] = out[-1] + w
            else:
                out.append(w)
        words = out
    if "symbols" in kinds:
        words = [rng.choice("~|■•¬^\\}{ﬁ□'.,") + w if rng.random() < level / 2 else w for w in words]
    if "junk" in kinds:
        out = []
        for w in words:
            out.append(w)
            if rng.random() < level / 2:
                out.append(_junk_token(rng))
        words = out
    if "fragment" in kinds:
        lines, i = [], 0
        while i < len(words):
            k = rng.randint(1, 3)
            lines.append(" ".join(words[i:i + k]))
            i += k
        return "\n".join(lines)
    return rewrap(" ".join(words), 70)


def rewrap(text: str, width: int = 70) -> str:
    """Re-flow text into lines of about ``width`` characters (like a PDF text layer)."""
    lines, cur = [], ""
    for w in text.split():
        if len(cur) + len(w) > width and cur:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    if cur:
        lines.append(cur)
    return "\n".join(lines)


CORRUPTIONS = {"code": corrupt_code, "ocr": corrupt_ocr}


# ----------------------------------------------------------------------------------------------
def chunk_text(text: str, max_chars: int, min_chars: int = 0) -> list[str]:
    """Split at line boundaries into pieces of at most ``max_chars`` (very long lines are cut)."""
    if max_chars <= 0 or len(text) <= max_chars:
        return [text] if len(text) >= min_chars else []
    out, cur, n = [], [], 0
    for line in text.splitlines():
        while len(line) > max_chars:
            if cur:
                out.append("\n".join(cur))
                cur, n = [], 0
            out.append(line[:max_chars])
            line = line[max_chars:]
        if n + len(line) + 1 > max_chars and cur:
            out.append("\n".join(cur))
            cur, n = [], 0
        cur.append(line)
        n += len(line) + 1
    if cur:
        out.append("\n".join(cur))
    return [c for c in out if len(c) >= min_chars]


def _h(*parts) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def build_source(spec: dict, root: Path, *, seed: int = 0) -> tuple[list[Example], dict]:
    """Read one source spec into examples (chunked, filtered, capped) and a card summary.

    Common keys: ``builder``, ``name``, ``label`` (constant 0/1), ``chunk_chars``, ``min_chars``,
    ``min_words``, ``max_chunks_per_doc``, ``max_docs`` (deterministic sample), ``rewrap`` (re-flow
    into lines of N characters, so line structure is no label shortcut), ``corrupt``
    (``code``/``ocr``: corrupt each example, a derived negative set), ``of`` (for corrupt: nested spec).
    """
    spec = dict(spec)
    log = SourceLog()
    name = spec.get("name") or f"{spec['builder']}:{spec.get('path', '')}"
    if spec["builder"] == "corrupt":
        inner = dict(spec["of"])
        base, inner_card = build_source(inner, root, seed=seed)
        rng = random.Random(_h(seed, name))
        fn = CORRUPTIONS[spec.get("kind", "code")]
        exs = []
        for e in base:
            t = fn(e.text, rng)
            if t.strip() and t != e.text:
                exs.append(Example(text=t, label=spec.get("label", 0), group=e.group, source=name))
        card = {"name": name, "builder": "corrupt", "kind": spec.get("kind", "code"), "of": inner_card,
                "n_examples": len(exs), "label": spec.get("label", 0)}
        return exs, card
    fn = BUILDERS.get(spec["builder"])
    if fn is None:
        raise ValueError(f"unknown builder {spec['builder']!r}; known: {sorted(BUILDERS)}")
    const_label = spec.get("label")
    chunk_chars = int(spec.get("chunk_chars", 0))
    min_chars = int(spec.get("min_chars", 0))
    min_words = int(spec.get("min_words", 0))
    per_doc = int(spec.get("max_chunks_per_doc", 0))
    wrap = int(spec.get("rewrap", 0))
    exs: list[Example] = []
    n_docs = 0
    for e in fn(spec, root, log):
        n_docs += 1
        if const_label is not None:
            e.label = int(const_label)
        if wrap:
            e.text = rewrap(e.text, wrap)
        pieces = chunk_text(e.text, chunk_chars, min_chars) if chunk_chars else ([e.text] if len(e.text) >= min_chars else [])
        pieces = [p for p in pieces if len(p.split()) >= min_words]
        if per_doc and len(pieces) > per_doc:
            idx = sorted(range(len(pieces)), key=lambda i: _h(seed, e.group, i))[:per_doc]
            pieces = [pieces[i] for i in sorted(idx)]
        for i, p in enumerate(pieces):
            exs.append(Example(text=p, label=e.label, score=e.score, group=e.group, source=name, lang=e.lang))
    if spec.get("split") or spec.get("exclude_test_of"):
        # keep only the groups of the named split(s) of benchmarks/splits.py (train+dev for training,
        # test for evaluation); ``split_dataset`` names the labelled set the split belongs to
        split_of, site_of = grouped_split_fn()
        if spec.get("split_pages"):
            # pages of a gold corpus (scrapinghub, readability; the builder's group is "<prefix>:<page>[:...]"):
            # each benchmark that reads the page groups it its own way (benchmarks/_e2e_corpus.gold_page_splits)
            pages = gold_page_splits(spec["split_pages"], root)

            def split_in(e: Example, ds: str) -> str:
                return pages[e.group.split(":")[1]][ds]
            ds = spec.get("split_dataset") or spec["split_pages"]
        else:
            # ``split_by: site``: group by the registrable domain of the group's URL (WARC records), so one
            # site never straddles train and test; default: the builder's group (file, row, article)
            key = ((lambda g: site_of(g.split(":", 1)[1] if g.startswith("warc:") else g))
                   if spec.get("split_by") == "site" else (lambda g: g))

            def split_in(e: Example, ds: str) -> str:
                return split_of(key(e.group), dataset=ds)
            ds = spec.get("split_dataset") or name
        if spec.get("split"):
            wanted = {spec["split"]} if isinstance(spec["split"], str) else set(spec["split"])
            exs = [e for e in exs if split_in(e, ds) in wanted]
        # ``exclude_test_of``: other datasets whose test split holds the same pages under their own grouping
        # (bench_e2e reads WARC, scrapinghub and readability pages): a training source drops those pages too
        for other in spec.get("exclude_test_of") or ():
            exs = [e for e in exs if split_in(e, other) != "test"]
    max_docs = int(spec.get("max_docs", 0))
    if int(spec.get("repeat", 1)) > 1:  # weight a small in-domain set up in training (see expand_repeats)
        for e in exs:
            e.repeat = int(spec["repeat"])
    if max_docs and len(exs) > max_docs:
        order = sorted(range(len(exs)), key=lambda i: _h(seed, name, exs[i].group, i))[:max_docs]
        exs = [exs[i] for i in sorted(order)]
    card = {"name": name, "builder": spec["builder"], "params": {k: v for k, v in spec.items() if k not in ("name", "builder")},
            "n_documents_read": n_docs, "n_examples": len(exs), **log.summary(root)}
    if const_label is not None:
        card["label"] = int(const_label)
    return exs, card


def grouped_split_fn():
    """``(split_of, site_of)`` from ``benchmarks/splits.py`` (the project's one train/dev/test assignment), loaded by
    path: benchmarks are not an installed package, and classifiers must not depend on them at run time."""
    import importlib.util  # noqa: PLC0415
    import sys  # noqa: PLC0415

    mod = sys.modules.get("splits")
    if mod is None or not hasattr(mod, "split_of"):
        path = REPO_ROOT / "benchmarks" / "splits.py"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: split-aware sources need the repository checkout")
        spec = importlib.util.spec_from_file_location("assay_benchmark_splits", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    return mod.split_of, mod.site_of


def _benchmark_module(name: str):
    """A module of ``benchmarks/`` (not an installed package: loaded with that folder on ``sys.path``)."""
    import importlib  # noqa: PLC0415
    import sys  # noqa: PLC0415

    folder = str(REPO_ROOT / "benchmarks")
    if not (REPO_ROOT / "benchmarks" / f"{name}.py").exists():
        raise FileNotFoundError(f"{folder}/{name}.py is missing: split-aware sources need the repository checkout")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def gold_page_splits(corpus: str, root: Path) -> dict[str, dict[str, str]]:
    """``{page: {dataset: split}}`` of a gold corpus as the benchmarks define it (``_e2e_corpus.gold_page_splits``)."""
    return _benchmark_module("_e2e_corpus").gold_page_splits(corpus, root)


def build_sources(specs: Iterable[dict], root: Path, *, seed: int = 0) -> tuple[list[Example], list[dict]]:
    all_ex, cards = [], []
    for spec in specs:
        exs, card = build_source(spec, root, seed=seed)
        all_ex.extend(exs)
        cards.append(card)
    return all_ex, cards


def holdout_split(examples: list[Example], fraction: float, *, seed: int = 0) -> tuple[list[Example], list[Example]]:
    """Split by *group* (chunks of one document never straddle train/test), deterministic in seed."""
    train, test = [], []
    for e in examples:
        (test if (_h(seed, "holdout", e.group) % 10_000) < fraction * 10_000 else train).append(e)
    return train, test


def balance(examples: list[Example], how: str = "downsample", *, seed: int = 0) -> list[Example]:
    """Class balance: ``downsample`` the majority class, ``upsample`` the minority (duplication), or ``none``."""
    if how == "none":
        return list(examples)
    pos = [e for e in examples if e.label == 1]
    neg = [e for e in examples if e.label == 0]
    if not pos or not neg:
        raise ValueError(f"need both classes to train (positives={len(pos)}, negatives={len(neg)})")
    small, big = (pos, neg) if len(pos) <= len(neg) else (neg, pos)
    if how == "downsample":
        big = sorted(big, key=lambda e: _h(seed, "bal", e.group, e.text[:64]))[: len(small)]
    elif how == "upsample":
        k, r = divmod(len(big), len(small))
        extra = sorted(small, key=lambda e: _h(seed, "up", e.group, e.text[:64]))[:r]
        small = small * k + extra
    else:
        raise ValueError(f"unknown balance {how!r} (downsample|upsample|none)")
    out = small + big
    out.sort(key=lambda e: _h(seed, "shuffle", e.group, e.text[:64], e.label))
    return out


def expand_repeats(examples: list[Example], *, seed: int = 0) -> list[Example]:
    """Each example ``repeat`` times, the copies spread through the file (deterministic order):
    fastText has no sample weights, so a small in-domain set is up-weighted by repetition."""
    if all(e.repeat <= 1 for e in examples):
        return examples
    out = [(e, k) for e in examples for k in range(max(1, e.repeat))]
    out.sort(key=lambda t: _h(seed, "repeat", t[0].group, t[0].text[:64], t[1]))
    return [e for e, _ in out]


def dedup(examples: list[Example], key: Callable[[Example], str]) -> list[Example]:
    """Drop exact duplicates (after normalisation) keeping the first; a text with both labels is dropped."""
    seen: dict[str, int] = {}
    bad: set[str] = set()
    out: list[Example] = []
    for e in examples:
        k = key(e)
        if k in seen:
            if seen[k] != e.label:
                bad.add(k)
            continue
        seen[k] = e.label
        out.append(e)
    return [e for e in out if key(e) not in bad]
