"""``normalize_prose`` joins line-end hyphenation from the hyphens (``_join_line_hyphens``) instead of a regex that
tries a match at every word character: the same text as ``_LINE_HYPHEN.sub`` on real code and prose (a page of
code has a hyphen at the end of many lines: Haskell's "--" comments and "->" arrows, none of them joined), on edge
cases and on random strings of the characters that decide."""

from __future__ import annotations

import random

from assay.stages.signals import decontam as D


def _plain(text: str) -> str:
    return D._LINE_HYPHEN.sub(r"\1", text)


def _code_texts(shared_data) -> list[str]:
    root = shared_data / "code"
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".js", ".c", ".h", ".hs", ".lua",
                                                                               ".sql", ".md", ".txt", ".sh", ".rb"))
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths[:400]]


def test_join_line_hyphens_equals_the_substitution_on_real_texts(shared_data, debian_doc):
    from assay.stages.web.extract import extract_html

    texts = _code_texts(shared_data)
    # Haskell sources as pages carry them (libghc-aeson-doc's hyperlinked sources; read to profile speed)
    src = debian_doc("libghc-aeson-doc") / "usr/share/doc/libghc-aeson-doc/html/src"
    texts += [extract_html(p.read_text(encoding="utf-8", errors="replace")) for p in sorted(src.glob("*.html"))[:20]]
    texts += [p.read_text(encoding="utf-8", errors="replace")
              for p in sorted((shared_data / "html/ir_chaos/gold").glob("*.txt"))]
    # Haddock's hyperlinked source: comment lines ending in "--", arrows at line ends, one real hyphenation
    haskell = ("-- | Copyright  : Will Thompson\n--\n-- t'Drive' - this represent a piece of hard-\n   ware.\n"
               "data Drive = Drive (ManagedPtr Drive) ->\n    IO ()\n  x <- foo --\n  bar\n")
    texts += [haskell * 50, haskell.replace("\n", "\r\n") * 3]
    hyphenated = [t for t in texts if D._HYPHEN_BREAK.search(t)]
    assert len(texts) >= 100 and len(hyphenated) >= 15
    joined = 0
    for t in texts:
        got = D._join_line_hyphens(t)
        assert got == _plain(t)
        joined += got != t
    assert joined >= 2  # the comparison saw texts with hyphens joined


def test_join_line_hyphens_on_edge_cases_and_random_strings():
    edge = ["co-\noperate", "co- \t\r\n\toperate", "a -\nb", "x-\n\ny", "é-\nà", "-\n", "a-\n", "a--\nb", "a-\r\n-b",
            "-\na", "a-\n b-\n c", "a-\nb-\nc", "_-\n_", "٣-\n٣", "²-\n²", "a-\r\rb", "a-\n\tb-\t\nc", "", "-", "a-b"]
    for t in edge:
        assert D._join_line_hyphens(t) == _plain(t), t
    assert D._join_line_hyphens("a-\nb-\nc") == "abc"
    rng = random.Random(7)
    alphabet = ["a", "Z", "_", "1", "é", "ß", "٣", "²", "-", "-", "-", " ", "\t", "\r", "\n", "\n", ".", "\u00ad"]
    for _ in range(50_000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert D._join_line_hyphens(t) == _plain(t), repr(t)
