from __future__ import annotations

import io

from rich.console import Console

from assay.pipeline.show import print_documents, show


def test_show_kept_sample_is_deterministic_and_filtered(fake_run, documents):
    a = show(fake_run, tier="high", sample=4, seed=1)
    b = show(fake_run, tier="high", sample=4, seed=1)
    c = show(fake_run, tier="high", sample=4, seed=2)
    assert [d["id"] for d in a] == [d["id"] for d in b] and len(a) == 4
    assert [d["id"] for d in a] != [d["id"] for d in c]
    by_id = {d.id: d for d in documents}
    for d in a:
        assert d["tier"] == "high" and d["reason"] is None
        assert d["text"] == by_id[d["id"]].text
        assert d["signals"]["quality__score"] == by_id[d["id"]].metadata["quality__score"]
    web = show(fake_run, source="web", sample=1000)
    assert len(web) == sum(1 for d in documents if d.metadata["source"] == "web" and d.metadata["decision__reason"] is None)


def test_show_excluded_pulls_text_from_signal_store(fake_run, documents):
    got = show(fake_run, excluded=True, reason="dedup_minhash", sample=3)
    by_id = {d.id: d for d in documents}
    assert len(got) == 3
    for d in got:
        assert d["reason"] == "dedup_minhash" and d["stage"] == "dedup"
        assert d["text"] == by_id[d["id"]].text and d["text"]
        assert d["duplicate_of"] == by_id[d["id"]].metadata["dedup__cluster_id"]
    assert show(fake_run, tier="nope") == []


def test_print_documents(fake_run):
    docs = show(fake_run, excluded=True, sample=2) + show(fake_run, sample=1)
    buf = io.StringIO()
    print_documents(docs, console=Console(file=buf, width=100, color_system=None), max_chars=50)
    out = buf.getvalue()
    assert "EXCLUDED" in out and "kept" in out and "quality (1): score=" in out and "more characters" in out
    assert out.index("── text ──") < out.index("── signals ──")  # the text first, then a compact summary
    buf = io.StringIO()
    print_documents(docs, console=Console(file=buf, width=100, color_system=None), all_signals=True)
    assert "quality__score" in buf.getvalue()  # --signals: every signal by its full name
    buf = io.StringIO()
    print_documents([], console=Console(file=buf))
    assert "no documents match" in buf.getvalue()


def test_print_escapes_markup():
    doc = {"id": "[bold]x[/bold]", "source": "web", "tier": "high", "reason": None,
           "signals": {"a__flags": "[red]y[/red]"}, "text": "text with [b]brackets[/b]"}
    buf = io.StringIO()
    print_documents([doc], console=Console(file=buf, width=100, color_system=None))
    out = buf.getvalue()
    assert "[bold]x[/bold]" in out and "[red]y[/red]" in out and "[b]brackets[/b]" in out
