"""Repository-level code documents (DeepSeek-Coder / StarCoder2 style).

The kept files of one repository (after filtering and dedup) are concatenated into long documents,
each file preceded by a path header, in import-dependency order: a file comes after the files it
imports, so a model reads definitions before their uses. Plain functions:

* ``extract_imports(path, text)``: import specs of one file, by language (from the file extension):
  Python and Cython (``import a.b``, ``from .x import y``, ``cimport``), JavaScript/TypeScript
  (``import ... from "./x"``, ``require("./x")``, ``export ... from``, dynamic ``import("./x")``),
  Java/Kotlin/Scala (``import a.b.C``, ``a.b.*``), Go (``import "mod/pkg"`` and import blocks),
  C/C++ (``#include "x.h"`` and ``<x.h>``, resolved only when the header is in the repository).
* ``dependency_graph(files)``: resolves specs to files of the same repository (Python modules by
  dotted-path suffix, relative imports from the package; JS/TS relative paths with extensions and
  ``index`` files; Java classes by package path; Go packages by directory suffix, with the ``go.mod``
  module prefix; C/C++ includes relative to the including file, then by unique path suffix).
* ``dependency_order(paths, graph)``: topological order (Kahn) with the smallest path first among
  ready files (deterministic); import cycles are condensed (strongly connected components) and
  ordered inside by fewest unmet dependencies (ties: smallest path), counted in ``cycle_breaks``.
* ``repo_documents(repo, files, max_chars=...)``: the documents, split at file boundaries when
  longer than ``max_chars`` (a single larger file stays whole in its own part).
* ``dedup_repositories(repos, threshold)``: repository-level dedup: a repository whose set of file
  content hashes has Jaccard similarity >= ``threshold`` with an earlier kept one (larger first,
  then name) is a duplicate (forks, vendored copies of a whole project).

Header of each file: ``--- <path> ---`` on its own line, then the file text, then a blank line.
Step ``RepoDocuments``: reads the code shards of a run, groups by repository (task = hash of the
repository name), and yields one document per part with ``source = "code_repo"``.
"""

from __future__ import annotations

import heapq
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

__all__ = ["FILE_HEADER", "RepoFile", "extract_imports", "dependency_graph", "dependency_order",
           "repo_documents", "dedup_repositories", "RepoDocuments"]

FILE_HEADER = "--- {path} ---\n"
REPO_SOURCE = "code_repo"

_PY_EXT = (".py", ".pyx", ".pxd", ".pyi")
_JS_EXT = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")
_JVM_EXT = (".java", ".kt", ".scala")
_C_EXT = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".inl", ".cu", ".cuh")

_PY_IMPORT = re.compile(r"^[ \t]*(?:import|cimport)[ \t]+([\w. \t,]+?)(?:[ \t]+as[ \t]+\w+)?[ \t]*(?:#.*)?$", re.M)
_PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+c?import[ \t]+(?:\(([^)]*)\)|([\w., \t*]+))", re.M)
_JS_FROM = re.compile(r"""(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|"""
                      r"""\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)""", re.M)
_JVM_IMPORT = re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+(?:\.\*)?)\s*;?", re.M)
_JVM_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)", re.M)
_GO_SINGLE = re.compile(r'^\s*import\s+(?:[\w.]+\s+)?"([^"]+)"', re.M)
_GO_BLOCK = re.compile(r"^\s*import\s*\((.*?)\)", re.M | re.S)
_GO_SPEC = re.compile(r'"([^"]+)"')
_C_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def _kind(path: str) -> str | None:
    low = path.lower()
    for kind, exts in (("python", _PY_EXT), ("js", _JS_EXT), ("jvm", _JVM_EXT), ("c", _C_EXT)):
        if low.endswith(exts):
            return kind
    if low.endswith(".go"):
        return "go"
    return None


def extract_imports(path: str, text: str) -> list[tuple[str, str]]:
    """``(kind, spec)`` pairs; kinds: ``py`` (dotted, leading dots relative), ``py_from`` (``module:name``),
    ``pyc`` / ``pyc_from`` (Cython ``cimport``: ``.pxd`` declarations first), ``js``, ``jvm``, ``go``,
    ``c_local`` (``"x.h"``), ``c_system`` (``<x.h>``)."""
    kind = _kind(path)
    out: list[tuple[str, str]] = []
    if kind == "python":
        for m in _PY_IMPORT.finditer(text):
            c = m.group(0).lstrip().startswith("cimport")
            for part in m.group(1).split(","):
                name = part.strip().split()[0] if part.strip() else ""
                if name:
                    out.append(("pyc" if c else "py", name))
        for m in _PY_FROM.finditer(text):
            mod = m.group(1)
            c = " cimport" in m.group(0)
            for part in (m.group(2) or m.group(3) or "").replace("\n", " ").split(","):
                name = part.strip().split()[0] if part.strip() else ""
                if name and name != "*":
                    out.append(("pyc_from" if c else "py_from", f"{mod}:{name}"))
    elif kind == "js":
        for m in _JS_FROM.finditer(text):
            spec = next(g for g in m.groups() if g)
            out.append(("js", spec))
    elif kind == "jvm":
        out.extend(("jvm", m.group(1)) for m in _JVM_IMPORT.finditer(text))
    elif kind == "go":
        out.extend(("go", m.group(1)) for m in _GO_SINGLE.finditer(text))
        for m in _GO_BLOCK.finditer(text):
            out.extend(("go", s) for s in _GO_SPEC.findall(m.group(1)))
    elif kind == "c":
        for m in _C_INCLUDE.finditer(text):
            out.append(("c_local" if m.group(1) == '"' else "c_system", m.group(2).strip()))
    return out


# ------------------------------------------------------------------------------------------ resolving


def _norm(path: str) -> str:
    p = posixpath.normpath(path.replace("\\", "/"))
    return p[2:] if p.startswith("./") else p.lstrip("/")


@dataclass
class _Index:
    paths: list[str]
    py_modules: dict[str, list[str]] = field(default_factory=dict)  # dotted suffix -> files
    by_suffix: dict[str, list[str]] = field(default_factory=dict)  # path suffix -> files
    dirs: dict[str, list[str]] = field(default_factory=dict)  # directory -> files
    pathset: set[str] = field(default_factory=set)
    go_module: str | None = None
    py_roots: set[str] = field(default_factory=lambda: {"", "src", "lib"})  # where top-level modules live


def _build_index(files: dict[str, str]) -> _Index:
    idx = _Index(sorted(files))
    idx.pathset = set(idx.paths)
    for p in idx.paths:
        parts = p.split("/")
        for i in range(len(parts)):
            idx.by_suffix.setdefault("/".join(parts[i:]), []).append(p)
        idx.dirs.setdefault(posixpath.dirname(p), []).append(p)
        if p.lower().endswith(_PY_EXT):
            stem = parts[-1].rsplit(".", 1)[0]
            mod = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
            for i in range(len(mod)):
                idx.py_modules.setdefault(".".join(mod[i:]), []).append(p)
        if parts[-1] in ("setup.py", "pyproject.toml", "setup.cfg"):
            idx.py_roots.add(posixpath.dirname(p))
        if parts[-1] == "go.mod":
            m = re.search(r"^\s*module\s+(\S+)", files[p], re.M)
            if m:
                idx.go_module = m.group(1)
    return idx


def _pick(cands: list[str] | None, near: str) -> str | None:
    """One file among candidates: the one sharing the longest directory prefix with ``near``, then the shortest."""
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0]

    def score(c: str) -> tuple[int, int, str]:
        common = len(posixpath.commonpath([posixpath.dirname(c) or ".", posixpath.dirname(near) or "."]).split("/"))
        return (-common, len(c), c)

    return min(cands, key=score)


def _py_package(path: str) -> list[str]:
    parts = path.split("/")
    return parts[:-1]


def _py_rank(path: str, cython: bool) -> int:
    """Which file of a module an import means: ``cimport`` wants the ``.pxd``, ``import`` the ``.py``/``.pyx``."""
    ext = path.rsplit(".", 1)[-1].lower()
    order = ("pxd", "pyx", "py", "pyi") if cython else ("py", "pyx", "pyi", "pxd")
    return order.index(ext) if ext in order else len(order)


def _top_level_dir(path: str) -> str:
    """The folder a top-level module ``m`` lives in: ``<root>/m.py`` or ``<root>/m/__init__.py``."""
    d = posixpath.dirname(path)
    return posixpath.dirname(d) if posixpath.basename(path).startswith("__init__.") else d


def _resolve_py(idx: _Index, path: str, spec: str, kind: str) -> list[str]:
    cython = kind.startswith("pyc")
    names = [spec]
    if kind.endswith("_from"):
        mod, name = spec.split(":", 1)
        names = [f"{mod}.{name}" if not mod.endswith(".") else f"{mod}{name}", mod]
    own_dir = posixpath.dirname(path)
    for full in names:
        dots = len(full) - len(full.lstrip("."))
        rest = full.lstrip(".")
        if dots:  # relative: from the file's package, going up dots-1 levels
            base = path.split("/")[:-1]
            if dots - 1 > len(base):
                continue
            base = base[: len(base) - (dots - 1)]
            cand = "/".join([*base, *(rest.split(".") if rest else [])])
            hits = [p for p in (f"{cand}{e}" for e in _PY_EXT) if p in idx.pathset] + \
                   [p for p in (f"{cand}/__init__{e}" for e in _PY_EXT) if p in idx.pathset]
            if hits:
                return [min(hits, key=lambda h: _py_rank(h, cython))]
            continue
        parts = rest.split(".")
        for k in range(len(parts), 0, -1):  # a.b.c, then a.b, then a
            dotted = ".".join(parts[:k])
            cands = list(idx.py_modules.get(dotted, []))
            if k == 1:  # one name (`import time`): a top-level module of a source root, not any x/time.py
                cands = [c for c in cands if _top_level_dir(c) in idx.py_roots]
            # a sibling module (scripts run from their folder, Cython's implicit relative cimport)
            sib = "/".join([own_dir, *parts[:k]]) if own_dir else "/".join(parts[:k])
            cands += [f"{sib}{e}" for e in _PY_EXT if f"{sib}{e}" in idx.pathset]
            if cands:
                best = min(_py_rank(c, cython) for c in cands)
                hit = _pick(sorted({c for c in cands if _py_rank(c, cython) == best}), path)
                if hit:
                    return [hit]
    return []


def _resolve_js(idx: _Index, path: str, spec: str) -> list[str]:
    if not spec.startswith("."):
        return []
    base = _norm(posixpath.join(posixpath.dirname(path), spec))
    cands = [base] + [base + e for e in _JS_EXT] + [f"{base}/index{e}" for e in _JS_EXT]
    if base.endswith(".js"):  # TypeScript sources imported with their compiled extension
        cands += [base[:-3] + e for e in (".ts", ".tsx")]
    return [c for c in cands if c in idx.pathset][:1]


def _resolve_jvm(idx: _Index, path: str, spec: str) -> list[str]:
    parts = spec.split(".")
    if parts[-1] == "*":
        d = "/".join(parts[:-1])
        return sorted(p for dname, ps in idx.dirs.items() if dname == d or dname.endswith("/" + d) for p in ps
                      if p.lower().endswith(_JVM_EXT) and p != path)
    for k in range(len(parts), 0, -1):  # a.b.C, or a.b.C.Inner -> a/b/C
        rel = "/".join(parts[:k])
        for ext in _JVM_EXT:
            hit = _pick(idx.by_suffix.get(rel + ext), path)
            if hit:
                return [hit]
    return []


def _resolve_go(idx: _Index, path: str, spec: str) -> list[str]:
    if idx.go_module:  # with a go.mod only the module's own import paths are inside the repository
        if not (spec == idx.go_module or spec.startswith(idx.go_module + "/")):
            return []
        dirs = [spec[len(idx.go_module):].lstrip("/")]
    elif "." not in spec.split("/")[0]:
        return []  # no go.mod: a path without a host (`math`, `net/http`) is the standard library
    else:  # no go.mod (a subtree): the longest repository folder the import path ends with
        ends = [d for d in idx.dirs if d and (spec == d or spec.endswith("/" + d))]
        dirs = [max(ends, key=len)] if ends else []
    return sorted(p for d in dirs for p in idx.dirs.get(d, [])
                  if p.endswith(".go") and not p.endswith("_test.go") and p != path)


def _resolve_c(idx: _Index, path: str, spec: str, local: bool) -> list[str]:
    if local:
        rel = _norm(posixpath.join(posixpath.dirname(path), spec))
        if rel in idx.pathset:
            return [rel]
    cands = idx.by_suffix.get(_norm(spec))
    hit = _pick(cands, path)
    return [hit] if hit else []


def dependency_graph(files: dict[str, str]) -> tuple[dict[str, set[str]], dict[str, int]]:
    """``path -> set of paths it imports`` (inside the repository) and counts of resolved/unresolved specs."""
    files = {_norm(p): t for p, t in files.items()}
    idx = _build_index(files)
    graph: dict[str, set[str]] = {p: set() for p in idx.paths}
    counts = {"specs": 0, "resolved": 0}
    for p in idx.paths:
        for kind, spec in extract_imports(p, files[p]):
            counts["specs"] += 1
            if kind.startswith("py"):
                hits = _resolve_py(idx, p, spec, kind)
            elif kind == "js":
                hits = _resolve_js(idx, p, spec)
            elif kind == "jvm":
                hits = _resolve_jvm(idx, p, spec)
            elif kind == "go":
                hits = _resolve_go(idx, p, spec)
            else:
                hits = _resolve_c(idx, p, spec, kind == "c_local")
            hits = [h for h in hits if h != p]
            if hits:
                counts["resolved"] += 1
                graph[p].update(hits)
    return graph, counts


def _sccs(nodes: list[str], deps: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(deps[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(deps[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def dependency_order(paths: Iterable[str], graph: dict[str, set[str]]) -> tuple[list[str], int]:
    """(order, cycle breaks): every file after the files it imports where the graph allows it.

    Import cycles are condensed into strongly connected components; components are ordered
    topologically (Kahn, the component with the smallest path first among ready ones). Inside a
    cycle, files go in order of fewest not-yet-emitted dependencies (ties: smallest path); each file
    emitted before all its dependencies counts as one cycle break."""
    nodes = sorted(set(paths))
    nodeset = set(nodes)
    deps = {p: set(graph.get(p, ())) & nodeset - {p} for p in nodes}
    comps = _sccs(nodes, deps)
    comp_of = {p: i for i, c in enumerate(comps) for p in c}
    cdeps = [{comp_of[d] for p in c for d in deps[p]} - {i} for i, c in enumerate(comps)]
    users: list[set[int]] = [set() for _ in comps]
    for i, ds in enumerate(cdeps):
        for d in ds:
            users[d].add(i)
    waiting = [len(ds) for ds in cdeps]
    ready = [(comps[i][0], i) for i in range(len(comps)) if waiting[i] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    breaks = 0
    while ready:
        _, i = heapq.heappop(ready)
        members = list(comps[i])
        while members:
            p = min(members, key=lambda q: (len(deps[q] & set(members)), q))
            if deps[p] & set(members):
                breaks += 1
            members.remove(p)
            order.append(p)
        for u in sorted(users[i]):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (comps[u][0], u))
    return order, breaks


# ------------------------------------------------------------------------------------------ documents


@dataclass
class RepoFile:
    path: str
    text: str
    language: str = "und"
    tier: str = "unknown"
    tokens: int = 0
    doc_id: str = ""


def repo_documents(repo: str, files: list[RepoFile], *, max_chars: int = 400_000) -> list[dict]:
    """The repository's documents: ``{"text", "files", "part", "cycle_breaks", "resolved", "specs"}``."""
    by_path = {_norm(f.path): f for f in files}
    graph, counts = dependency_graph({p: f.text for p, f in by_path.items()})
    order, breaks = dependency_order(by_path, graph)
    parts: list[list[str]] = [[]]
    size = 0
    for p in order:
        block = len(FILE_HEADER.format(path=p)) + len(by_path[p].text) + 1
        if parts[-1] and size + block > max_chars:
            parts.append([])
            size = 0
        parts[-1].append(p)
        size += block
    docs = []
    for i, ps in enumerate(p for p in parts if p):
        text = "".join(FILE_HEADER.format(path=p) + by_path[p].text.rstrip("\n") + "\n\n" for p in ps)
        docs.append({"text": text, "files": ps, "part": i, "cycle_breaks": breaks, **counts,
                     "edges": sum(len(graph[p] & set(ps)) for p in ps)})
    for d in docs:
        d["parts"] = len(docs)
    return docs


def dedup_repositories(repos: dict[str, list[RepoFile]], threshold: float = 0.9) -> dict[str, str]:
    """``{duplicate repo: kept repo}``: file-content-hash-set Jaccard >= threshold (larger repos kept first)."""
    import xxhash

    sets = {r: {xxhash.xxh3_64_intdigest(f.text.encode("utf-8", "surrogatepass")) for f in fs} for r, fs in repos.items()}
    kept: list[str] = []
    dups: dict[str, str] = {}
    for r in sorted(sets, key=lambda x: (-len(sets[x]), x)):
        s = sets[r]
        for k in kept:
            inter = len(s & sets[k])
            if s and inter / len(s | sets[k]) >= threshold:
                dups[r] = k
                break
        else:
            kept.append(r)
    return dups


def _majority(values: list[tuple[str, int]]) -> str:
    acc: dict[str, int] = {}
    for v, w in values:
        acc[v] = acc.get(v, 0) + max(1, w)
    return min(acc, key=lambda k: (-acc[k], k)) if acc else "und"


class RepoDocuments(PipelineStep):
    """Reader step: the code shards of a run (``<run>/output/source=code``) -> repository documents.

    Task ``rank`` handles the repositories whose name hashes to it. Documents: ``source = "code_repo"``,
    ``tier`` and ``code__language`` = the token-weighted majority of the files, ``repo``,
    ``path = <repo>#<part>``, signals ``repo_docs__files`` (count), ``repo_docs__part``,
    ``repo_docs__parts``, ``repo_docs__cycle_breaks``, ``repo_docs__resolved_imports``,
    ``repo_docs__edges``. Repositories judged duplicates of another are counted
    (``repo_docs/duplicate_repository``) and not written.
    """

    name = "📚 repository documents"
    type = "📖 - READER"

    def __init__(self, input_folder: str, *, max_chars: int = 400_000, dedup_threshold: float = 0.9,
                 source: str = "code"):
        super().__init__()
        self.input_folder = input_folder
        self.max_chars = int(max_chars)
        self.dedup_threshold = float(dedup_threshold)
        self.source = source

    def _repos(self, rank: int, world_size: int) -> dict[str, list[RepoFile]]:
        import pyarrow.parquet as pq
        import xxhash

        repos: dict[str, list[RepoFile]] = {}
        root = Path(self.input_folder) / f"source={self.source}"
        for p in sorted(root.rglob("shard-*.parquet")) if root.exists() else []:
            t = pq.read_table(p, columns=["id", "text", "url_or_path", "language", "tier", "token_count", "provenance"]).to_pydict()
            for i in range(len(t["id"])):
                prov = json.loads(t["provenance"][i] or "{}")
                repo = prov.get("repo") or "unknown"
                if xxhash.xxh3_64_intdigest(repo.encode()) % world_size != rank:
                    continue
                repos.setdefault(repo, []).append(RepoFile(t["url_or_path"][i] or t["id"][i], t["text"][i], t["language"][i],
                                                           t["tier"][i], int(t["token_count"][i]), t["id"][i]))
        return repos

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        repos = self._repos(rank, world_size)
        dups = dedup_repositories(repos, self.dedup_threshold)
        for repo in sorted(repos):
            files = repos[repo]
            self.stat_update("repositories")
            if repo in dups:
                self.stat_update("repo_docs/duplicate_repository")
                continue
            with self.track_time():
                docs = repo_documents(repo, files, max_chars=self.max_chars)
            by_path = {_norm(f.path): f for f in files}
            for d in docs:
                members = [by_path[p] for p in d["files"]]
                self.stat_update("documents")
                yield Document(text=d["text"], id=f"repo:{repo}#{d['part']}", metadata={
                    "source": REPO_SOURCE,
                    "tier": _majority([(f.tier, f.tokens) for f in members]),
                    "code__language": _majority([(f.language, f.tokens) for f in members]),
                    "repo": repo,
                    "path": f"{repo}#{d['part']}",
                    "repo_docs__files": len(d["files"]),
                    "repo_docs__part": d["part"],
                    "repo_docs__parts": d["parts"],
                    "repo_docs__cycle_breaks": d["cycle_breaks"],
                    "repo_docs__resolved_imports": d["resolved"],
                    "repo_docs__edges": d["edges"],
                })
