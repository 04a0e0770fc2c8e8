"""The funnel report: rendered by headless Chromium, the numbers it shows match the run's stats."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.pipeline.manifest import load_manifest
from assay.pipeline.report import render_report, report_text


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("headless Chromium is not installed (apt-get install -y chromium)")


def dump_dom(page: Path, tmp: Path) -> str:
    cmd = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'chromium'}",
        "--dump-dom", page.resolve().as_uri(),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


class Metrics(HTMLParser):
    def __init__(self):
        super().__init__()
        self.metrics: dict[str, tuple[str, str]] = {}
        self._open: list[tuple[str, str, list[str]]] = []
        self.tags = Counter()

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        a = dict(attrs)
        if "data-metric" in a:
            self._open.append((tag, a["data-metric"], [a.get("data-value", "")]))

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            _, name, parts = self._open.pop()
            self.metrics[name] = (parts[0], "".join(parts[1:]).strip())


def _stage(md: dict) -> str:
    r = md["decision__reason"]
    if md.get("reject_reason"):
        return "reject"
    if r.startswith("dedup"):
        return "dedup"
    if r.startswith("tier_"):
        return "tier"
    return "rules"


@pytest.fixture(scope="module")
def dom(fake_run, tmp_path_factory):
    page = render_report(fake_run)
    assert page == fake_run / "report.html"
    html = page.read_text()
    assert "<script" not in html and "<link" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the report must not load anything"
    p = Metrics()
    p.feed(dump_dom(page, tmp_path_factory.mktemp("chr")))
    return p


def value(dom, name) -> int | float:
    raw, shown = dom.metrics[name]
    v = float(raw)
    if v.is_integer() and "%" not in shown and "." not in shown:
        assert int(shown.replace(",", "")) == int(v), (name, raw, shown)  # what is shown is what is stored
    return int(v) if v.is_integer() else v


def test_rendered_page_has_charts(dom):
    assert dom.tags["svg"] >= 8 and dom.tags["rect"] > 50 and dom.tags["table"] >= 6


def test_headline_and_funnel_match_documents(dom, documents):
    kept = [d for d in documents if d.metadata["decision__reason"] is None]
    assert value(dom, "totals/documents_in") == len(documents)
    assert value(dom, "totals/documents") == len(kept)
    assert value(dom, "totals/excluded") == len(documents) - len(kept)
    assert value(dom, "conservation/signal_store") == len(documents)
    removed = Counter((d.metadata["source"], _stage(d.metadata)) for d in documents if d.metadata["decision__reason"])
    by_source = Counter(d.metadata["source"] for d in documents)
    for src in ("web", "code", "pdf"):
        assert value(dom, f"funnel/{src}/input/documents_in") == by_source[src]
        remaining = by_source[src]
        for stage in ("reject", "rules", "tier", "dedup"):  # the decision order
            assert value(dom, f"funnel/{src}/{stage}/documents_removed") == removed[(src, stage)]
            remaining -= removed[(src, stage)]
            assert value(dom, f"funnel/{src}/{stage}/documents_out") == remaining
        assert value(dom, f"funnel/{src}/written/documents_out") == sum(1 for d in kept if d.metadata["source"] == src)
    assert "funnel/all/rebalance/documents_out" not in dom.metrics  # no stage without exclusions


def test_tokens_match_shards_and_exclusion_files(dom, fake_run):
    kept_tokens = defaultdict(int)
    for p in (fake_run / "output").rglob("shard-*.parquet"):
        t = pq.read_table(p, columns=["source", "token_count"])
        for s, n in zip(t.column("source").to_pylist(), t.column("token_count").to_pylist()):
            kept_tokens[s] += n
    ex_tokens = defaultdict(int)
    for p in (fake_run / "excluded").glob("part-*.parquet"):
        t = pq.read_table(p, columns=["source", "stage", "token_count"])
        for s, st, n in zip(*(t.column(c).to_pylist() for c in ("source", "stage", "token_count"))):
            ex_tokens[(s, st)] += n
    for src in ("web", "code", "pdf"):
        assert value(dom, f"funnel/{src}/written/tokens_out") == kept_tokens[src]
        assert value(dom, f"funnel/{src}/input/tokens_in") == kept_tokens[src] + sum(v for (s, _), v in ex_tokens.items() if s == src)
        for stage in ("dedup", "rules", "tier"):
            assert value(dom, f"funnel/{src}/{stage}/tokens_removed") == ex_tokens[(src, stage)]
    assert value(dom, "totals/tokens") == sum(kept_tokens.values())


def test_reasons_mixture_and_shards_match_manifest(dom, fake_run):
    m = load_manifest(fake_run)
    for reason, v in m["excluded"]["by_reason"].items():
        assert value(dom, f"excluded/{reason}/documents") == v["documents"]
        assert value(dom, f"excluded/{reason}/tokens") == v["tokens"]
    for tier, v in m["mixture"]["tiers"].items():
        assert value(dom, f"mixture/{tier}/tokens") == v["tokens"]
        assert value(dom, f"mixture/{tier}/effective_tokens") == v["effective_tokens"]
        assert abs(value(dom, f"mixture/{tier}/share") - v["share"]) < 1e-9
    for src, tiers in m["by_source_tier"].items():
        for tier, v in tiers.items():
            assert value(dom, f"kept/{src}/{tier}/documents") == v["documents"]
    for s in m["shards"]:
        assert value(dom, f"shard/{s['path']}/rows") == s["rows"]
    assert value(dom, "totals/shards") == len(m["shards"])


def test_phase_tables_match_stats_json(dom, fake_run):
    for phase in ("signals", "decide"):
        steps = json.loads((fake_run / "logs" / phase / "stats.json").read_text())
        for i, step in enumerate(steps):
            st = step["stats"]
            total = lambda v: v["total"] if isinstance(v, dict) else v  # noqa: E731
            docs_in = st.get("total", st.get("documents"))
            if docs_in is not None:
                assert value(dom, f"phase/{phase}/{i}/documents_in") == total(docs_in)
            if "forwarded" in st:
                assert value(dom, f"phase/{phase}/{i}/documents_out") == total(st["forwarded"])
                assert value(dom, f"phase/{phase}/{i}/dropped") == total(st["dropped"])
            if "tokens" in st:
                assert value(dom, f"phase/{phase}/{i}/tokens") == total(st["tokens"])
    decide = json.loads((fake_run / "logs" / "decide" / "stats.json").read_text())
    assert any("Shard writer" in s["name"] for s in decide)


def test_text_summary(fake_run, documents):
    text = report_text(fake_run)
    kept = sum(1 for d in documents if d.metadata["decision__reason"] is None)
    assert f"{len(documents):,} documents in" in text and f"{kept:,} written" in text
    assert "conservation" in text and "ok" in text
    m = load_manifest(fake_run)
    for reason, v in m["excluded"]["by_reason"].items():
        assert re.search(rf"{reason}\s.*\s{v['documents']:,}\s", text), reason
    assert "mixture plan" in text and "phase decide" in text




def test_report_of_an_empty_or_unfinished_run(tmp_path, documents):
    from assay.stages.output.shards import ShardWriter

    page = render_report(tmp_path).read_text()
    assert "No logs/*/stats.json found" in page and "no manifest.json yet" in page
    assert 'data-metric="totals/documents" data-value="0"' in page
    # shards written, no manifest yet: the report computes the numbers from the files
    docs = documents[:40]
    for _ in ShardWriter(str(tmp_path / "output")).run(iter(docs)):
        pass
    page = render_report(tmp_path).read_text()
    kept = sum(1 for d in docs if d.metadata["decision__reason"] is None)
    assert f'data-metric="totals/documents" data-value="{kept}"' in page
    assert "0 documents in" in report_text(tmp_path) or f"{kept:,} written" in report_text(tmp_path)


def test_step_names_are_escaped_and_stats_formats_read(tmp_path):
    logs = tmp_path / "logs" / "signals"
    (logs / "stats").mkdir(parents=True)
    steps = [
        {"name": "📖 - READER: 🕷 assay WARC", "time_stats": {"total": 1.5, "global_mean": 0.75}, "stats": {"documents": {"total": 7, "n": 7, "mean": 1}}},
        {"name": "✂️ - EXTRAC: 🧹 extract [web] <b>", "time_stats": 0, "stats": {"reject/warc_truncated_record": 2, "documents": 7}},
        {"name": "🔻 - FILTER: f", "time_stats": {"total": 0.1}, "stats": {"total": 7, "forwarded": 4, "dropped": 3, "dropped_too_short": 3}},
    ]
    (logs / "stats.json").write_text(json.dumps(steps))
    for r in (0, 1):
        (logs / "stats" / f"{r:05d}.json").write_text("[]")
    (tmp_path / "logs" / "broken").mkdir()
    (tmp_path / "logs" / "broken" / "stats.json").write_text("{not json")
    text = report_text(tmp_path, width=140)
    assert "EXTRAC: extract [web] <b>" in text and "READER: assay WARC" in text
    assert "warc_truncated_record: 2" in text and "too_short: 3" in text
    page = render_report(tmp_path).read_text()
    assert "extract [web] &lt;b&gt;" in page and "<b>" not in page.split("<body>")[1].replace("<b>fake</b>", "")
    assert 'data-metric="phase/signals/2/documents_out" data-value="4"' in page
    assert 'data-metric="phase/signals/0/seconds" data-value="0.75"' in page
    assert "unreadable stats.json" in page and "(2 task stats)" in page


def test_mixed_token_methods_are_flagged(tmp_path, documents, bpe_tokenizer):
    from assay.stages.output.shards import ExclusionWriter, ShardWriter

    docs = documents[:60]
    for _ in ExclusionWriter(str(tmp_path / "excluded")).run(ShardWriter(str(tmp_path / "output"), tokenizer_path=str(bpe_tokenizer)).run(iter(docs))):
        pass
    page = render_report(tmp_path).read_text()
    assert "token totals across the funnel mix the two" in page
