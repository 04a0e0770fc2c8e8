"""Repository-level code documents: dependency order on the real repository snapshot and on
TheAlgorithms trees, file-boundary splitting, cycles, repository-level dedup, and the step."""

from __future__ import annotations

import pytest

from assay.stages.code.repo_docs import (
    FILE_HEADER,
    RepoDocuments,
    RepoFile,
    dedup_repositories,
    dependency_graph,
    dependency_order,
    extract_imports,
    repo_documents,
)


def _read_archive(path) -> dict[str, str]:
    from assay.stages.code.reader import CodeReader

    return {d.metadata["path"]: d.text for d in CodeReader(paths=[str(path)]).run() if d.text}


def _listed_files(text: str) -> list[str]:
    return [line[4:-4] for line in text.splitlines() if line.startswith("--- ") and line.endswith(" ---")]


def _respects(order: list[str], graph: dict[str, set[str]], allowed_back_edges: set[tuple[str, str]] = frozenset()):
    pos = {p: i for i, p in enumerate(order)}
    bad = [(a, b) for a, deps in graph.items() for b in deps if pos[b] > pos[a] and (a, b) not in allowed_back_edges]
    return bad


@pytest.mark.shared_data
def test_real_snapshot_document_lists_files_in_dependency_order(shared_data):
    files = _read_archive(shared_data / "code/real_repo_snapshot/chatnoir-resiliparse_src.tar.zst")
    docs = repo_documents("resiliparse", [RepoFile(p, t) for p, t in files.items()], max_chars=10**9)
    assert len(docs) == 1
    listed = _listed_files(docs[0]["text"])
    assert sorted(listed) == sorted(files)
    pos = {p: i for i, p in enumerate(listed)}
    # edges read off the sources by hand (tools.pyx: `from fastwarc.stream_io cimport ...`,
    # `from fastwarc.warc cimport ...`; parse/__init__.py: `from .encoding import ...`, `from .http import ...`;
    # process_guard.pxd: `from resiliparse_inc.atomic cimport ...`; test_lang.py: `from resiliparse.parse import lang`)
    for user, dep in [
        ("fastwarc-py/fastwarc/tools.pyx", "fastwarc-py/fastwarc/stream_io.pxd"),
        ("fastwarc-py/fastwarc/tools.pyx", "fastwarc-py/fastwarc/warc.pxd"),
        ("resiliparse-py/resiliparse/parse/__init__.py", "resiliparse-py/resiliparse/parse/encoding.pyx"),
        ("resiliparse-py/resiliparse/parse/__init__.py", "resiliparse-py/resiliparse/parse/http.pyx"),
        ("resiliparse-py/resiliparse/process_guard.pxd", "resiliparse-py/resiliparse_inc/atomic.pxd"),
        ("tests/resiliparse/parse/test_lang.py", "resiliparse-py/resiliparse/parse/lang.pyx"),
        ("fastwarc-py/fastwarc/cli.py", "fastwarc-py/fastwarc/warc.pyx"),
    ]:
        assert pos[dep] < pos[user], (dep, user)
    # and every resolved edge is respected, except inside the one real import cycle (two .pyi stubs)
    graph, counts = dependency_graph(files)
    assert counts["resolved"] > 100 and docs[0]["cycle_breaks"] == 1
    cyc = {("resiliparse-py/resiliparse/parse/_html_rs/coll.pyi", "resiliparse-py/resiliparse/parse/_html_rs/node.pyi"),
           ("resiliparse-py/resiliparse/parse/_html_rs/node.pyi", "resiliparse-py/resiliparse/parse/_html_rs/coll.pyi")}
    assert _respects(listed, graph, cyc) == []
    # `import time` is the standard library, not resiliparse_inc/time.pxd
    assert "resiliparse-py/resiliparse_inc/time.pxd" not in graph["fastwarc-py/fastwarc/cli.py"]


@pytest.mark.shared_data
@pytest.mark.parametrize("name,min_edges", [("Go", 500), ("JavaScript", 300), ("Java", 50), ("C-Plus-Plus", 10), ("C", 20),
                                            ("Python", 10)])
def test_thealgorithms_trees_in_dependency_order(shared_data, name, min_edges):
    files = _read_archive(shared_data / f"code/clean_multilang/TheAlgorithms-{name}.tar.zst")
    graph, _ = dependency_graph(files)
    n_edges = sum(len(v) for v in graph.values())
    assert n_edges >= min_edges
    order, breaks = dependency_order(graph, graph)
    assert sorted(order) == sorted(graph)
    if breaks == 0:
        assert _respects(order, graph) == []
    # deterministic: same input in another order gives the same order
    order2, _ = dependency_order(list(reversed(list(graph))), {k: set(v) for k, v in reversed(list(graph.items()))})
    assert order2 == order


def test_languages_cycles_and_tie_break():
    files = {
        "pkg/__init__.py": "from .core import run\n",
        "pkg/core.py": "import os\nfrom pkg.util import helper\n",
        "pkg/util.py": "def helper(): pass\n",
        "web/app.ts": "import { x } from './lib/x';\nconst y = require('./y.js');\n",
        "web/lib/x.ts": "export const x = 1;\n",
        "web/y.js": "module.exports = 2;\n",
        "src/main/java/org/a/App.java": "package org.a;\nimport org.a.util.Strings;\nimport java.util.List;\n",
        "src/main/java/org/a/util/Strings.java": "package org.a.util;\n",
        "go.mod": "module example.com/m\n\ngo 1.21\n",
        "cmd/main.go": 'package main\n\nimport (\n\t"fmt"\n\t"example.com/m/lib"\n)\n',
        "lib/lib.go": "package lib\n",
        "native/a.c": '#include "a.h"\n#include <stdio.h>\n',
        "native/a.h": '#include "b.h"\n',
        "native/b.h": '#include "a.h"\n',  # a cycle
        "zz.py": "", "aa.py": "",
    }
    graph, counts = dependency_graph(files)
    assert graph["pkg/core.py"] == {"pkg/util.py"}
    assert graph["pkg/__init__.py"] == {"pkg/core.py"}
    assert graph["web/app.ts"] == {"web/lib/x.ts", "web/y.js"}
    assert graph["src/main/java/org/a/App.java"] == {"src/main/java/org/a/util/Strings.java"}
    assert graph["cmd/main.go"] == {"lib/lib.go"}
    assert graph["native/a.c"] == {"native/a.h"} and graph["native/a.h"] == {"native/b.h"}
    order, breaks = dependency_order(graph, graph)
    pos = {p: i for i, p in enumerate(order)}
    assert pos["pkg/util.py"] < pos["pkg/core.py"] < pos["pkg/__init__.py"]
    assert pos["lib/lib.go"] < pos["cmd/main.go"] and pos["native/a.h"] < pos["native/a.c"]
    assert breaks == 1
    assert order.index("aa.py") < order.index("zz.py")  # ready files: smallest path first
    assert ("py_from", ".core:run") in extract_imports("pkg/__init__.py", files["pkg/__init__.py"])


def test_split_at_file_boundaries():
    files = [RepoFile(f"m{i}.py", f"import m{i - 1}\n" * (i > 0) + "x = 1\n" * 50) for i in range(10)]
    whole = repo_documents("r", files, max_chars=10**9)
    parts = repo_documents("r", files, max_chars=800)
    assert len(whole) == 1 and len(parts) > 3
    assert "".join(d["text"] for d in parts) == whole[0]["text"]
    assert all(d["text"].startswith(FILE_HEADER.format(path=d["files"][0])) for d in parts)
    assert [p for d in parts for p in d["files"]] == [f"m{i}.py" for i in range(10)]  # dependency order kept
    assert all(d["parts"] == len(parts) for d in parts)
    big = repo_documents("r", [RepoFile("big.py", "y = 2\n" * 1000)], max_chars=1000)
    assert len(big) == 1  # a file larger than the limit stays whole


def test_repository_dedup():
    base = [RepoFile(f"f{i}.py", f"value_{i} = {i}\n") for i in range(20)]
    fork = base[:19] + [RepoFile("f19.py", "changed = True\n")]
    other = [RepoFile(f"g{i}.py", f"other_{i} = {i}\n") for i in range(5)]
    dups = dedup_repositories({"org/base": base, "me/fork": fork, "org/other": other}, threshold=0.8)
    assert dups == {"me/fork": "org/base"} or dups == {"org/base": "me/fork"}
    assert dedup_repositories({"org/base": base, "me/fork": fork}, threshold=0.99) == {}


@pytest.mark.slow
def test_step_on_a_run(default_run):
    docs = list(RepoDocuments(str(default_run / "output")).run())
    assert docs and all(d.metadata["source"] == "code_repo" for d in docs)
    d = docs[0]
    assert d.metadata["repo_docs__files"] == len(_listed_files(d.text)) >= 1
    assert d.metadata["tier"] and d.metadata["code__language"]
