"""The optional line classifier (assay.stages.web.blocks): trained weights ship, chrome lines go, code stays."""

from __future__ import annotations

from assay.stages.web import blocks
from assay.stages.web.extract import extract_html_detailed

ARTICLE = " ".join(["The committee met on Tuesday to discuss the proposal, and members raised several concerns "
                    "about its cost and timing."] * 3)


def test_weights_ship_and_match_features():
    model = blocks.load_weights()
    assert model is not None and len(model["weights"]) == blocks.N_FEATURES
    assert "readability" in model["trained_on"] and "ir_chaos" not in model["trained_on"]


def test_chrome_lines_dropped_code_kept():
    chrome = "\n".join(["Skip to main content", "Sign in", "Back to top", "Share this", "Cookie settings"])
    text = f"{chrome}\n\n{ARTICLE}\n\n{ARTICLE.replace('committee', 'board')}\n\n\ue0000\ue001\n\nAll rights reserved"
    out = blocks.filter_lines(text, keep_line=lambda ln: "\ue000" in ln)
    assert ARTICLE in out and "\ue0000\ue001" in out
    assert "Skip to main content" not in out and "Back to top" not in out


def test_block_filter_in_extraction_keeps_code():
    html = (f"<html><body><main><p>Skip to main content</p><p>Sign in</p><p>{ARTICLE}</p>"
            "<pre><code class='language-python'>def f():\n    return 1\n</code></pre>"
            f"<p>{ARTICLE.replace('committee', 'board')}</p><p>Back to top</p></main></body></html>")
    out = extract_html_detailed(html, block_filter=True)[0]
    assert "```python\ndef f():\n    return 1\n```" in out
    assert "Sign in" not in out
    assert "Sign in" in extract_html_detailed(html)[0]  # off by default
