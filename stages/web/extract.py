"""HTML -> text that keeps code and math.

``extract_html`` parses with resiliparse (lexbor), rewrites the DOM so that technical content
survives the boilerplate remover, runs resiliparse's main-content extractor, then puts the
technical content back:

* ``<pre>`` blocks (and multi-line ``<code>`` blocks) -> fenced Markdown, verbatim, indentation kept,
  language from the class attribute (``language-py``, ``lang-js``, ``brush: cpp``, ``highlight-source-go``,
  ``sourceCode python``, ``data-lang``); ``<br>`` inside code becomes a newline.
* inline ``<code>/<kbd>/<samp>/<tt>`` -> ``` `x` ``` inline.
* math -> LaTeX: ``<math>`` (``annotation encoding="application/x-tex"`` when present, otherwise a
  MathML -> LaTeX conversion), MathJax ``<script type="math/tex">`` (mode=display), KaTeX
  (``.katex`` annotation), MathJax 3 ``<mjx-container>``, Wikipedia ``.mwe-math-element``, and
  ``<img alt>`` formulas (LaTeX image services / tex-ish classes) when that is the only form.
  Inline math is ``$...$``, display math ``$$...$$`` on its own line. Rendered duplicates
  (MathJax preview/HTML-CSS output, KaTeX HTML) are dropped.
* data tables -> Markdown pipe rows; layout tables are left to the extractor.
* boilerplate: blocks whose class/id names a widget (cookie/consent banners, share/social bars,
  newsletter/subscribe boxes, related/trending lists, captions/credits, comments, ads, pagination)
  are removed before extraction (never when they hold code, math, an article or much text);
  navigation, headers, footers and sidebars are removed by resiliparse's main-content heuristics;
  repeated short lines (captions, teaser copies) are dropped after the first occurrence.

``HtmlExtractor`` is the datatrove step (backend ``resiliparse`` or ``trafilatura``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

if TYPE_CHECKING:  # pragma: no cover
    from resiliparse.parse.html import HTMLTree

_PH_OPEN, _PH_CLOSE = "\ue000", "\ue001"
_PH_RE = re.compile(_PH_OPEN + r"(\d+)" + _PH_CLOSE)

# "language-x", "lang-x", "brush: x", "highlight-source-x" name a language; weaker prefixes
# ("code-", "highlight-", "syntax-", "hljs-") only count when the value is a known language
_LANG_CLASS_RE = re.compile(
    r"(?:^|\s)(language|lang|brush|highlight-source|sourcecode|prettyprint-lang|code|syntax|hljs|highlight)"
    r"[-_:]\s*([A-Za-z0-9_+#.\-]+)", re.I)
_STRONG_LANG_PREFIXES = {"language", "lang", "brush", "highlight-source", "sourcecode", "prettyprint-lang"}
_KNOWN_LANGS = {
    "python", "py", "javascript", "js", "typescript", "ts", "java", "c", "cpp", "c++", "csharp", "cs", "go",
    "golang", "rust", "rs", "ruby", "rb", "php", "perl", "bash", "sh", "shell", "zsh", "console", "powershell",
    "sql", "html", "xml", "css", "scss", "json", "yaml", "yml", "toml", "ini", "kotlin", "swift", "scala",
    "haskell", "lisp", "clojure", "elixir", "erlang", "lua", "r", "matlab", "julia", "fortran", "asm",
    "nasm", "wasm", "dockerfile", "makefile", "cmake", "diff", "latex", "tex", "objectivec", "dart", "ocaml",
    "fsharp", "vb", "groovy", "text", "plaintext", "jsx", "tsx", "graphql", "protobuf", "nginx", "apache",
}
_LANG_ALIASES = {"c++": "cpp", "js": "javascript", "py": "python", "sh": "bash", "golang": "go", "rb": "ruby",
                 "ts": "typescript", "yml": "yaml", "rs": "rust", "plaintext": "text", "cs": "csharp"}

_LATEX_IMG_SRC_RE = re.compile(
    r"(latex|mathtex|mimetex|codecogs|/tex\?|tex2img|chart\?cht=tx|wp\.com/latex|/math/render|mathurl|equation)", re.I)
# candidate formula images: LaTeX image services / tex-ish classes, or TeX-looking alt text
_IMG_MATH_SELECTOR = ", ".join(
    [f'img[alt][src*="{k}" i]' for k in ("tex", "codecogs", "/math/", "cht=tx", "equation")]
    + [f'img[alt][class*="{k}" i]' for k in ("tex", "math", "equation", "formula")]
    + ['img[alt*="\\\\"]', 'img[alt*="^{"]', 'img[alt*="_{"]'])
_MATH_CLASS_RE = re.compile(r"(^|[\s_-])(tex|latex|math|equation|formula|mwe-math)", re.I)

_BOILERPLATE_CLASS_RE = re.compile(
    r"(?:^|[\s_-])(share|sharing|social|newsletter|subscribe|subscription|related|promo|breadcrumbs?|byline|"
    r"caption|credits?|sponsor(?:ed)?|advert\w*|ads|comments?|disqus|popup|modal|signup|toolbar|pagination|pager|"
    r"cookie\w*|consent|gdpr|outbrain|taboola|recirc|more-stories|read-more|trending|most-popular|onetrust\w*)"
    r"(?:$|[\s_-])",
    re.I)
_BOILERPLATE_KEYWORDS = ("share", "social", "newsletter", "subscri", "related", "promo", "breadcrumb", "byline",
                         "caption", "credit", "sponsor", "advert", "ads", "comment", "disqus", "popup", "modal",
                         "signup", "toolbar", "paginat", "pager", "cookie", "consent", "gdpr", "outbrain",
                         "taboola", "recirc", "more-stories", "read-more", "trending", "most-popular",
                         "onetrust")
_MAX_BOILERPLATE_BLOCK_CHARS = 4000
# literal-prefixed patterns let the regex engine skip ahead quickly; single-quoted attributes are
# rare enough to be left to resiliparse's own main-content heuristics
_ATTR_VALUE_RES = (re.compile(r'class="([^"]{0,300})'), re.compile(r'id="([^"]{0,300})'))


def _boilerplate_prefilter(html: str) -> str | None:
    """CSS selector for only those boilerplate keywords that occur in some class/id value of the
    page source (two regex scans instead of ~60 attribute selectors over the DOM)."""
    vals = []
    for rx in _ATTR_VALUE_RES:
        vals += rx.findall(html)
    joined = " ".join(vals).lower()
    found = [k for k in _BOILERPLATE_KEYWORDS if k in joined]
    if not found:
        return None
    return ", ".join(f'[class*="{k}" i], [id*="{k}" i]' for k in sorted(found))

# ----------------------------------------------------------------------------------------------
# MathML -> LaTeX
# ----------------------------------------------------------------------------------------------
_UNI2TEX = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon", "ϵ": r"\epsilon",
    "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ϑ": r"\vartheta", "ι": r"\iota", "κ": r"\kappa",
    "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma",
    "τ": r"\tau", "υ": r"\upsilon", "φ": r"\phi", "ϕ": r"\phi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega",
    "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi",
    "Σ": r"\Sigma", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega",
    "∑": r"\sum", "∏": r"\prod", "∫": r"\int", "∮": r"\oint", "∞": r"\infty", "∂": r"\partial",
    "∇": r"\nabla", "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "≡": r"\equiv",
    "∼": r"\sim", "≅": r"\cong", "∝": r"\propto", "±": r"\pm", "∓": r"\mp", "×": r"\times", "÷": r"\div",
    "⋅": r"\cdot", "·": r"\cdot", "∘": r"\circ", "∈": r"\in", "∉": r"\notin", "⊂": r"\subset",
    "⊆": r"\subseteq", "⊃": r"\supset", "⊇": r"\supseteq", "∪": r"\cup", "∩": r"\cap", "∅": r"\emptyset",
    "∀": r"\forall", "∃": r"\exists", "¬": r"\neg", "∧": r"\wedge", "∨": r"\vee", "→": r"\rightarrow",
    "←": r"\leftarrow", "↔": r"\leftrightarrow", "⇒": r"\Rightarrow", "⇐": r"\Leftarrow",
    "⇔": r"\Leftrightarrow", "↦": r"\mapsto", "…": r"\ldots", "⋯": r"\cdots", "⋮": r"\vdots",
    "⋱": r"\ddots", "√": r"\surd", "′": "'", "″": "''", "−": "-", "∗": "*", "⟨": r"\langle",
    "⟩": r"\rangle", "‖": r"\|", "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}",
    "ℚ": r"\mathbb{Q}", "ℂ": r"\mathbb{C}", "ℓ": r"\ell", "ℏ": r"\hbar", "⊗": r"\otimes",
    "⊕": r"\oplus", "⊥": r"\perp", "∥": r"\parallel", "⌊": r"\lfloor", "⌋": r"\rfloor",
    "⌈": r"\lceil", "⌉": r"\rceil", "\u2061": "", "\u2062": "", "\u2063": "", "\u2064": "", "\u00a0": " ",
}
_FUNC_NAMES = {"sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "lim", "max", "min", "sup", "inf",
               "det", "dim", "ker", "arg", "deg", "gcd", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan",
               "Pr", "lg"}
_ACCENTS = {"^": r"\hat", "ˆ": r"\hat", "¯": r"\bar", "‾": r"\overline", "→": r"\vec", "⃗": r"\vec",
            "~": r"\tilde", "˜": r"\tilde", "˙": r"\dot", "¨": r"\ddot", "⏞": r"\overbrace", "⏟": r"\underbrace"}
_BIG_OPS = {r"\sum", r"\prod", r"\int", r"\oint", r"\lim", r"\max", r"\min", r"\sup", r"\inf", r"\bigcup",
            r"\bigcap"}


def _tex_chars(s: str) -> str:
    return "".join(_UNI2TEX.get(ch, ch) for ch in s)


def _cat(parts: list[str]) -> str:
    out = ""
    for p in parts:
        if not p:
            continue
        if out and p[:1].isalnum() and (out[-1:].isalnum() or re.search(r"\\[A-Za-z]+$", out)):
            out += " "
        out += p
    return out


def _grp(s: str) -> str:
    s = s.strip()
    return s if len(s) == 1 or re.fullmatch(r"\\[A-Za-z]+", s) else "{" + s + "}"


_MAX_MATH_DEPTH = 150


def mathml_to_latex(node, _depth: int = 0) -> str:
    """Convert a resiliparse MathML element (``<math>`` or any descendant) to LaTeX.
    Markup nested deeper than ``_MAX_MATH_DEPTH`` is kept as plain text (no recursion blow-up)."""
    if _depth > _MAX_MATH_DEPTH:
        return re.sub(r"\s+", " ", node.text or "").strip()
    tag = (node.tag or "").lower().split(":")[-1]
    kids = node.children.values()
    d = _depth + 1

    def conv(i: int) -> str:
        return mathml_to_latex(kids[i], d) if i < len(kids) else ""

    if tag == "semantics":
        for k in kids:
            if (k.tag or "").lower().endswith("annotation") and "tex" in (k.getattr("encoding") or "").lower():
                return (k.text or "").strip()
        return conv(0)
    if tag in ("annotation", "annotation-xml", "none", "mprescripts"):
        return ""
    if tag in ("mi", "mn", "ms"):
        txt = (node.text or "").strip()
        if tag == "mi" and txt in _FUNC_NAMES:
            return "\\" + txt
        if tag == "mi" and len(txt) > 1 and txt.isalpha() and txt.isascii():
            return r"\mathrm{" + txt + "}"
        return _tex_chars(txt)
    if tag == "mo":
        txt = (node.text or "").strip()
        if txt in _FUNC_NAMES:
            return "\\" + txt
        t = _tex_chars(txt)
        if txt in ("{", "}"):
            t = "\\" + txt
        return t
    if tag == "mtext":
        txt = node.text or ""
        return r"\text{" + txt + "}" if txt.strip() else " "
    if tag == "mspace":
        return " "
    if tag == "msup":
        return _grp(conv(0)) + "^" + _grp(conv(1))
    if tag == "msub":
        return _grp(conv(0)) + "_" + _grp(conv(1))
    if tag == "msubsup":
        return _grp(conv(0)) + "_" + _grp(conv(1)) + "^" + _grp(conv(2))
    if tag == "mfrac":
        if (node.getattr("linethickness") or "") in ("0", "0px", "0em"):
            return r"\binom{" + conv(0) + "}{" + conv(1) + "}"
        return r"\frac{" + conv(0) + "}{" + conv(1) + "}"
    if tag == "msqrt":
        return r"\sqrt{" + _cat([mathml_to_latex(k, d) for k in kids]) + "}"
    if tag == "mroot":
        return r"\sqrt[" + conv(1) + "]{" + conv(0) + "}"
    if tag in ("mover", "munder", "munderover"):
        base = conv(0)
        if tag == "mover":
            acc = (kids[1].text or "").strip() if len(kids) > 1 else ""
            if acc in _ACCENTS:
                return _ACCENTS[acc] + "{" + base + "}"
            if base.strip() in _BIG_OPS:
                return base + "^" + _grp(conv(1))
            return r"\overset{" + conv(1) + "}{" + base + "}"
        if tag == "munder":
            acc = (kids[1].text or "").strip() if len(kids) > 1 else ""
            if acc in ("_", "‾", "¯", "̲"):
                return r"\underline{" + base + "}"
            if base.strip() in _BIG_OPS or base.strip().startswith(r"\lim"):
                return base + "_" + _grp(conv(1))
            return r"\underset{" + conv(1) + "}{" + base + "}"
        return base + "_" + _grp(conv(1)) + "^" + _grp(conv(2))
    if tag == "mfenced":
        op = node.getattr("open")
        cl = node.getattr("close")
        sep = node.getattr("separators")
        op = "(" if op is None else op
        cl = ")" if cl is None else cl
        sep = "," if sep is None else (sep.strip()[:1] if sep.strip() else "")
        inner = sep.join(mathml_to_latex(k, d) for k in kids)
        return r"\left" + (_tex_chars(op) or ".") + inner + r"\right" + (_tex_chars(cl) or ".")
    if tag == "mtable":
        rows = []
        for r in kids:
            cells = [mathml_to_latex(c, d) for c in r.children.values()] if (r.tag or "").endswith("tr") else [mathml_to_latex(r, d)]
            if (r.tag or "").endswith("mlabeledtr") and cells:
                cells = cells[1:]
            rows.append(" & ".join(cells))
        return r"\begin{matrix}" + r" \\ ".join(rows) + r"\end{matrix}"
    if tag == "menclose":
        inner = _cat([mathml_to_latex(k, d) for k in kids])
        return r"\boxed{" + inner + "}" if "box" in (node.getattr("notation") or "") else inner
    if tag == "mphantom":
        return ""
    if tag == "mmultiscripts":
        return _cat([mathml_to_latex(k, d) for k in kids])
    # math, mrow, mstyle, mpadded, merror, mtd, unknown wrappers
    if not kids:
        return _tex_chars((node.text or "").strip())
    return _cat([mathml_to_latex(k, d) for k in kids])


def _safe_mathml(node) -> str:
    """MathML -> LaTeX, falling back to the element's text on pathological (very deep) markup."""
    try:
        return mathml_to_latex(node)
    except RecursionError:
        return re.sub(r"\s+", " ", node.text or "").strip()


def _clean_tex(tex: str) -> str:
    tex = tex.strip()
    m = re.fullmatch(r"\{\\displaystyle\s*(.*)\}", tex, re.S)
    if m:
        tex = m.group(1).strip()
    m = re.fullmatch(r"\{\\textstyle\s*(.*)\}", tex, re.S)
    if m:
        tex = m.group(1).strip()
    return re.sub(r"\s+", " ", tex)


# ----------------------------------------------------------------------------------------------
# DOM rewriting
# ----------------------------------------------------------------------------------------------
class _Rewriter:
    def __init__(self, tree: "HTMLTree", html: str = ""):
        self.tree = tree
        self.html = html
        self.blocks: list[str] = []  # placeholder index -> final text
        self.is_block: list[bool] = []
        self.n_code_blocks = 0
        self.n_inline_code = 0
        self.n_math = 0
        self.n_tables = 0

    def _token(self, text: str, block: bool) -> str:
        self.blocks.append(text)
        self.is_block.append(block)
        return f"{_PH_OPEN}{len(self.blocks) - 1}{_PH_CLOSE}"

    def _replace_with_text(self, el, text: str) -> None:
        tn = self.tree.create_text_node(text)
        try:
            el.replace_with(tn)
        except Exception:  # noqa: BLE001 - detached nodes etc.
            pass

    # -- math ------------------------------------------------------------------------------------
    def _math_token(self, tex: str, display: bool) -> str:
        tex = _clean_tex(tex)
        if not tex:
            return ""
        self.n_math += 1
        return self._token(f"$${tex}$$" if display else f"${tex}$", display)

    def math(self) -> None:
        body = self.tree.document
        if body is None:
            return
        # MathJax v2 source scripts; drop the rendered copies first
        html = self.html
        # cheap source checks skip DOM queries for markup the page does not contain; every math
        # markup handled here (math/tex scripts, katex-mathml, mjx-math, mwe-math, <math>) spells "math"
        any_math = not html or "math" in html or "<MATH" in html
        has = (lambda needle: any_math and needle in html) if html else (lambda needle: True)
        scripts = body.query_selector_all(
            'script[type^="math/tex" i], script[type^="math/asciimath" i]').values() if has("math/") else []
        if scripts:
            for sel in (".MathJax_Preview", ".MathJax", ".MathJax_Display", ".MathJax_SVG", ".MathJax_CHTML",
                        ".MathJax_SVG_Display", ".MJX_Assistive_MathML", "mjx-container"):
                for el in body.query_selector_all(sel).values():
                    el.decompose()
            for s in body.query_selector_all('script[type^="math/tex" i], script[type^="math/asciimath" i]').values():
                typ = (s.getattr("type") or "").lower()
                display = "mode=display" in typ.replace(" ", "")
                self._replace_with_text(s, self._math_token(s.text or "", display))
        # KaTeX
        for k in (body.query_selector_all(".katex").values() if has("katex") else []):
            ann = k.query_selector('annotation[encoding="application/x-tex"]')
            if ann is None:
                continue
            display = k.closest(".katex-display") is not None
            self._replace_with_text(k, self._math_token(ann.text or "", display))
        # MathJax 3
        for c in (body.query_selector_all("mjx-container").values() if has("mjx-container") else []):
            m = c.query_selector("math")
            if m is None:
                continue
            display = (c.getattr("display") or "").lower() == "true" or (m.getattr("display") or "") == "block"
            self._replace_with_text(c, self._math_token(_safe_mathml(m), display))
        # Wikipedia
        for w in (body.query_selector_all(".mwe-math-element").values() if has("mwe-math") else []):
            m = w.query_selector("math")
            tex = _safe_mathml(m) if m is not None else ""
            if not tex:
                img = w.query_selector("img[alt]")
                tex = img.getattr("alt") if img is not None else ""
            display = w.query_selector(".mwe-math-mathml-display, .mwe-math-fallback-image-display") is not None
            self._replace_with_text(w, self._math_token(tex or "", display))
        # any other MathML
        for m in (body.query_selector_all("math").values() if has("<math") or has("<MATH") else []):
            display = (m.getattr("display") or "").lower() == "block" or (m.getattr("mode") or "") == "display"
            self._replace_with_text(m, self._math_token(_safe_mathml(m), display))
        # image formulas
        for img in body.query_selector_all(_IMG_MATH_SELECTOR).values():
            alt = (img.getattr("alt") or "").strip()
            if not alt:
                continue
            src = img.getattr("src") or ""
            cls = img.getattr("class") or ""
            looks_math = bool(_LATEX_IMG_SRC_RE.search(src) or _MATH_CLASS_RE.search(cls))
            if not looks_math and not re.search(r"\\[a-zA-Z]+|[\^_]\{", alt):
                continue
            if not looks_math and len(alt) > 300:
                continue
            display = "display" in cls.lower() or "block" in cls.lower()
            alt = alt.strip()
            if alt.startswith("$$") and alt.endswith("$$") and len(alt) > 4:
                alt, display = alt[2:-2], True
            elif alt.startswith("$") and alt.endswith("$") and len(alt) > 2:
                alt = alt[1:-1]
            self._replace_with_text(img, self._math_token(alt, display))

    # -- code ------------------------------------------------------------------------------------
    @staticmethod
    def _language(el) -> str:
        cand = []
        node = el
        for _ in range(3):  # the element, its <code> child, and two ancestors
            if node is None:
                break
            cand.append((node.getattr("class") or "") + " " + (node.getattr("data-lang") or "")
                        + " " + (node.getattr("data-language") or "") + " " + (node.getattr("lang") or ""))
            node = node.parent if hasattr(node, "parent") else None
            if node is not None and not hasattr(node, "getattr"):
                break
        inner = el.query_selector("code")
        if inner is not None:
            cand.insert(0, (inner.getattr("class") or "") + " " + (inner.getattr("data-lang") or ""))
        for c in cand:
            for m in _LANG_CLASS_RE.finditer(c):
                lang = m.group(2).lower().strip(".;")
                if not lang or lang in ("none", "block", "wrapper", "container", "text-wrapper"):
                    continue
                if m.group(1).lower() in _STRONG_LANG_PREFIXES or lang in _KNOWN_LANGS:
                    return _LANG_ALIASES.get(lang, lang)
            for tok in re.split(r"[\s;:]+", c.lower()):
                if tok in _KNOWN_LANGS and tok not in ("text", "c", "r"):
                    return _LANG_ALIASES.get(tok, tok)
        return ""

    def _code_text(self, el) -> str:
        for br in el.query_selector_all("br").values():
            self._replace_with_text(br, "\n")
        # line-number gutters
        for g in el.query_selector_all(".gutter, .linenos, .line-numbers-rows, .lineno, .ln").values():
            g.decompose()
        text = el.text or ""
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
        lines = text.split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(line.rstrip() for line in lines)

    def code(self) -> None:
        doc = self.tree.document
        if doc is None:
            return
        for pre in doc.query_selector_all("pre").values():
            if not doc.contains(pre):
                continue  # nested <pre> already consumed by its outer block
            if pre.parent is not None and hasattr(pre.parent, "closest") and pre.parent.closest("pre") is not None:
                continue
            lang = self._language(pre)
            code = self._code_text(pre)
            if not code.strip():
                pre.decompose()
                continue
            fence = "```"
            while fence in code:
                fence += "`"
            self.n_code_blocks += 1
            tok = self._token(f"{fence}{lang}\n{code}\n{fence}", True)
            # keep a <pre> element so the extractor still sees a block
            pre.inner_text = tok
        for c in doc.query_selector_all("code, kbd, samp, tt").values():
            if not doc.contains(c) or c.closest("pre") is not None:
                continue
            if c.parent is not None and hasattr(c.parent, "closest") and c.parent.closest("code, kbd, samp, tt") is not None:
                continue
            has_br = c.query_selector("br") is not None
            txt = self._code_text(c) if has_br else (c.text or "")
            lines = [ln for ln in txt.split("\n") if ln.strip()]
            if len(lines) >= 2:
                lang = self._language(c)
                fence = "```"
                while fence in txt:
                    fence += "`"
                self.n_code_blocks += 1
                self._replace_with_text(c, self._token(f"{fence}{lang}\n{txt.strip(chr(10))}\n{fence}", True))
                continue
            inline = txt.strip()
            if not inline:
                continue
            tick = "``" if "`" in inline else "`"
            self.n_inline_code += 1
            c.inner_text = f"{tick}{inline}{tick}"

    # -- tables ----------------------------------------------------------------------------------
    def tables(self) -> None:
        doc = self.tree.document
        if doc is None:
            return
        for t in doc.query_selector_all("table").values():
            if t.parent is None:
                continue
            if t.query_selector("table, pre, ul, ol, form, iframe") is not None:
                continue  # layout table: let the extractor linearise it
            rows = []
            width = 0
            ok = True
            for tr in t.query_selector_all("tr").values():
                if tr.closest("table") is not t:
                    continue
                cells = []
                for cell in tr.children.values():
                    if (cell.tag or "").lower() not in ("td", "th"):
                        continue
                    txt = re.sub(r"\s+", " ", cell.text or "").strip().replace("|", "\\|")
                    if len(txt) > 400:
                        ok = False
                    cells.append(txt)
                if any(cells):
                    rows.append(cells)
                    width = max(width, len(cells))
            if not ok or len(rows) < 2 or width < 2:
                continue
            lines = []
            for i, r in enumerate(rows):
                r = r + [""] * (width - len(r))
                lines.append("| " + " | ".join(r) + " |")
                if i == 0:
                    lines.append("|" + "---|" * width)
            self.n_tables += 1
            tok = self._token("\n".join(lines), True)
            # a <p> keeps the table a block for the extractor
            p = self.tree.create_element("p")
            p.append_child(self.tree.create_text_node(tok))
            try:
                t.replace_with(p)
            except Exception:  # noqa: BLE001
                pass

    def boilerplate(self) -> None:
        doc = self.tree.document
        if doc is None:
            return
        # a regex over the source finds the keywords present; lexbor selects those candidates in C;
        # the token regex then checks whole class/id tokens
        prefilter = _boilerplate_prefilter(self.html) if self.html else None
        candidates = doc.query_selector_all(prefilter).values() if prefilter else []
        for el in candidates:
            tag = (el.tag or "").lower()
            if tag in ("html", "body", "main", "article", "pre", "code", "math", "table", "tr", "td"):
                continue
            key = (el.getattr("class") or "") + " " + (el.getattr("id") or "")
            if not _BOILERPLATE_CLASS_RE.search(key):
                continue
            if not doc.contains(el) or el.closest("pre, code, math") is not None:
                continue  # detached already, or syntax-highlighting spans such as "token comment"
            if el.query_selector("pre, math, article, main, h1") is not None:
                continue
            # a block holding a lot of text is more likely a wrapper around the article than a widget
            if len(el.text or "") > _MAX_BOILERPLATE_BLOCK_CHARS:
                continue
            el.decompose()


def _restore(text: str, rw: _Rewriter) -> str:
    def sub(m: re.Match) -> str:
        i = int(m.group(1))
        if i >= len(rw.blocks):
            return ""
        return rw.blocks[i]

    # block placeholders get their own paragraph
    def sub_block(m: re.Match) -> str:
        i = int(m.group(1))
        if i < len(rw.blocks) and rw.is_block[i]:
            return "\n\n" + _PH_OPEN + m.group(1) + _PH_CLOSE + "\n\n"
        return m.group(0)

    text = _PH_RE.sub(sub_block, text)
    # drop repeated short lines (image captions, teaser copies); code is in placeholders
    seen: set[str] = set()
    kept = []
    for line in text.split("\n"):
        key = line.strip()
        if 20 <= len(key) <= 200 and _PH_OPEN not in key:
            if key in seen:
                continue
            seen.add(key)
        kept.append(line)
    text = "\n".join(kept)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n[ \t]*(?=" + _PH_OPEN + ")", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = _PH_RE.sub(sub, text)
    return text.strip()


def _to_str(html: str | bytes) -> str:
    if isinstance(html, bytes):
        from assay.stages.web.warc import decode_html_bytes

        try:
            return decode_html_bytes(html)[0]
        except UnicodeDecodeError:
            return html.decode("utf-8", errors="replace")
    return html


def extract_html_detailed(html: str | bytes, url: str | None = None, *,
                          main_content: bool = True) -> tuple[str, dict]:
    """``extract_html`` plus counters ``{"n_code_blocks", "n_inline_code", "n_math", "n_tables"}``."""
    try:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree
    except ImportError as e:  # pragma: no cover
        raise ImportError("extract_html needs resiliparse: pip install resiliparse==2.0.0") from e

    text = _to_str(html)
    if not text or not text.strip():
        return "", {"n_code_blocks": 0, "n_inline_code": 0, "n_math": 0, "n_tables": 0}
    # placeholder characters must not come from the page itself
    if _PH_OPEN in text or _PH_CLOSE in text:
        text = text.replace(_PH_OPEN, "").replace(_PH_CLOSE, "")
    tree = HTMLTree.parse(text)
    rw = _Rewriter(tree, text)
    rw.boilerplate()
    rw.math()
    rw.code()
    rw.tables()
    kwargs = dict(preserve_formatting=True, list_bullets=True, alt_texts=False, links=False,
                  form_fields=False, noscript=False, comments=False)
    out = extract_plain_text(tree, main_content=main_content, **kwargs)
    if main_content and len(out.strip()) < 100:
        # the main-content heuristic removed (almost) everything: fall back to the full page
        full = extract_plain_text(tree, main_content=False, **kwargs)
        if len(full.strip()) > 3 * max(len(out.strip()), 1):
            out = full
    stats = {"n_code_blocks": rw.n_code_blocks, "n_inline_code": rw.n_inline_code, "n_math": rw.n_math,
             "n_tables": rw.n_tables}
    # count only what survived extraction
    kept = {int(i) for i in _PH_RE.findall(out)}
    result = _restore(out, rw)
    stats["n_code_blocks_kept"] = sum(1 for i in kept if rw.blocks[i].startswith("```"))
    stats["n_math_kept"] = sum(1 for i in kept if rw.blocks[i].startswith("$"))
    return result, stats


def extract_html(html: str | bytes, url: str | None = None) -> str:
    """Main text of an HTML page as Markdown-ish plain text, keeping code blocks (fenced, verbatim),
    inline code, math (LaTeX) and tables. Returns "" for empty pages."""
    return extract_html_detailed(html, url)[0]


def extract_html_trafilatura(html: str | bytes, url: str | None = None) -> str:
    """trafilatura with FineWeb's settings (the anchor in benchmarks and the alternative backend)."""
    try:
        import trafilatura
    except ImportError as e:  # pragma: no cover
        raise ImportError("backend 'trafilatura' needs trafilatura: pip install trafilatura==2.3.1") from e
    text = _to_str(html)
    return trafilatura.extract(text, url=url, favor_precision=True, include_comments=False,
                               deduplicate=True) or ""


# ----------------------------------------------------------------------------------------------
# step
# ----------------------------------------------------------------------------------------------
_HTML_CT = ("text/html", "application/xhtml+xml", "application/xhtml", "text/xhtml")


class HtmlExtractor(PipelineStep):
    """Replace ``doc.text`` (HTML) with extracted text.

    Documents whose ``content_type`` is not HTML (e.g. WET plain text) and documents already carrying
    a ``reject_reason`` pass through unchanged. Writes ``extract__backend``, ``extract__chars``,
    ``extract__tokens`` and ``html__raw_tokens`` (whitespace tokens of the text and of the raw HTML: the
    report's funnel from raw HTML), ``extract__html_chars``, ``extract__n_code_blocks``, ``extract__n_inline_code``,
    ``extract__n_math``, ``extract__n_tables``. Empty output -> ``reject_reason="web_empty_extraction"``;
    an extractor crash -> ``reject_reason="web_extraction_error"``.

    Args:
        backend: ``resiliparse`` (default, keeps code/math) or ``trafilatura`` (FineWeb settings).
        main_content: resiliparse main-content (boilerplate) detection.
        max_html_chars: HTML longer than this is cut before parsing (giant pages).
    """

    name = "🧹 assay HTML extract"
    type = "✂️ - EXTRAC"

    def __init__(self, backend: str = "resiliparse", main_content: bool = True, max_html_chars: int = 5_000_000):
        super().__init__()
        if backend not in ("resiliparse", "trafilatura"):
            raise ValueError(f"unknown backend {backend!r} (resiliparse|trafilatura)")
        self.backend = backend
        self.main_content = main_content
        self.max_html_chars = max_html_chars

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            self.stat_update("documents")
            meta = doc.metadata
            ct = (meta.get("content_type") or "text/html").lower()
            if meta.get("reject_reason") or ct not in _HTML_CT:
                self.stat_update("passthrough")
                yield doc
                continue
            html = doc.text or ""
            meta["extract__html_chars"] = len(html)
            meta["html__raw_tokens"] = len(html.split())  # whitespace tokens of the raw HTML: the funnel's start
            if len(html) > self.max_html_chars:
                html = html[: self.max_html_chars]
                self.stat_update("html_cut")
            with self.track_time():
                try:
                    if self.backend == "resiliparse":
                        text, st = extract_html_detailed(html, meta.get("url"), main_content=self.main_content)
                    else:
                        text = extract_html_trafilatura(html, meta.get("url"))
                        st = {"n_code_blocks_kept": text.count("```") // 2, "n_math_kept": 0, "n_tables": 0,
                              "n_inline_code": 0}
                except BaseException as e:  # noqa: BLE001 - never crash a task on one page
                    # resiliparse surfaces Rust panics as pyo3 PanicException (a BaseException)
                    if isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                        raise
                    text, st = "", None
                    meta["reject_reason"] = "web_extraction_error"
                    meta["extract__error"] = repr(e)[:300]
                    self.stat_update("reject/web_extraction_error")
            meta["extract__backend"] = self.backend
            doc.text = text
            meta["extract__chars"] = len(text)
            meta["extract__tokens"] = len(text.split())
            if st is not None:
                meta["extract__n_code_blocks"] = st.get("n_code_blocks_kept", 0)
                meta["extract__n_inline_code"] = st.get("n_inline_code", 0)
                meta["extract__n_math"] = st.get("n_math_kept", 0)
                meta["extract__n_tables"] = st.get("n_tables", 0)
                if not text.strip():
                    meta["reject_reason"] = "web_empty_extraction"
                    self.stat_update("reject/web_empty_extraction")
                else:
                    self.stat_update("extracted")
            self.update_doc_stats(doc)
            yield doc
