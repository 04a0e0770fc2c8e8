"""HTML -> text that keeps code and math.

``extract_html`` parses with resiliparse (lexbor), rewrites the DOM so that technical content
survives the boilerplate remover, runs resiliparse's main-content extractor, then puts the
technical content back:

* ``<pre>`` blocks (and multi-line ``<code>`` blocks) -> fenced Markdown, verbatim, indentation kept,
  language from the class attribute (``language-py``, ``lang-js``, ``brush: cpp``, ``highlight-source-go``,
  ``sourceCode python``, ``data-lang``); ``<br>`` inside code becomes a newline. Line-number gutters
  (Pygments/Sphinx/MkDocs ``td.linenos``, Rouge ``td.gutter``, Hugo/Chroma ``table.lntable``, GitHub
  ``td.blob-num``) are dropped; Doxygen's code view (``div.fragment`` of ``div.line`` rows, no ``<pre>``) is
  read as a ``<pre>``, one line per row, without its ``span.lineno`` numbers; a code ``<figure>`` (Jekyll/GitHub
  Pages ``figure.highlight``, which the main-content extractor would drop) is replaced by its block.
  tests/web/test_code_markup.py has one test per generator.
* inline ``<code>/<kbd>/<samp>/<tt>`` -> ``` `x` ``` inline.
* math -> LaTeX: ``<math>`` (``annotation encoding="application/x-tex"`` when present, otherwise a
  MathML -> LaTeX conversion), MathJax ``<script type="math/tex">`` (mode=display), KaTeX
  (``.katex`` annotation), MathJax 3 ``<mjx-container>``, Wikipedia ``.mwe-math-element``, and
  ``<img alt>`` formulas (LaTeX image services / tex-ish classes) when that is the only form.
  Inline math is ``$...$``, display math ``$$...$$`` on its own line. Rendered duplicates
  (MathJax preview/HTML-CSS output, KaTeX HTML) are dropped.
* data tables -> Markdown pipe rows; layout tables are left to the extractor.
* boilerplate, in four layers:
  1. blocks whose class/id names a widget (``_WIDGET_WORDS``: cookie/consent banners, share bars,
     newsletter/sign-in boxes, related/recommended lists, captions, comments, ads, pagination, headers,
     footers, nav bars incl. DocBook's ``navheader``/``navfooter``; trafilatura's "meta", "sidebar",
     "gallery", "slide", "tags", "hidden" ...) are removed before extraction, never
     when they hold code, math, an ``<h1>``, over 4,000 characters or running prose (5+ sentences), nor
     when the name is negated (``no-share``), nor a block named "header" that holds one link-free
     section heading (``<div class="content header"><h2>...``); a "caption" block goes even with running
     prose (gallery captions, ``_PROSE_WIDGET_WORDS``); "caption" also counts as a camelCase part
     (``<p class="imageCaption">``, ``_CAMEL_WORDS``); when the page marks its article body the
     search runs inside it only (everything outside is handled by 3.);
  2. resiliparse's main-content extractor;
  3. when the page marks its article body (``itemprop=articleBody``, ``.entry-content``,
     ``.article-body``, ... ``_ARTICLE_BODY_CLASSES``) and that holds 70%+ of the extracted prose, lines
     outside it go (galleries, teaser lists, sign-up boxes around the story); the ``<h1>`` stays; a long
     line counts as inside when its first and last 40 characters are (the main-content pass drops some
     inline elements, e.g. a dash in ``<strong>``). Optionally (``story_tail=True``, off by default for
     speed), when the page marks no body, the story's container (``_story_container``: the smallest
     element holding 80% of the text of the page's 100+-character paragraphs) stands in for it, and only
     the lines after the story go (the lede and dek above often sit in a container of their own);
  4. whole lines that are chrome anywhere (``_CHROME_LINES``: "Skip to main content", "Back to top",
     "Rezept drucken", "Diese Seite teilen", gallery counters "3/31", "Image 1 of 3", number-only lines),
     date-only metadata lines ("Published November 20th, 2019 - 07:50 GMT"), publication stamps and
     metadata lines of stamps, bylines and labels ("By: X | Gaming News | Posted: 8 hours ago",
     ``_is_stamp_line``), photo captions that end with a credit ("... (Kyodo News via AP)", "... Photo: Getty",
     ``_is_credited_caption``) and repeated short lines
     (unless the page repeats 8+ distinct lines: a template such as a meal plan, whose repeats are content),
     teaser links under an upper-case label ("READ: ...", ``_LABEL_TEASER_RE``), bylines alone on a line
     ("By SETH BORENSTEIN", ``_BYLINE_RE``), source and widget credits ("via GSM Arena", "Conversation powered
     by Livefyre", ``_CREDIT_LINE_RE``) and a time alone ("9:28 AM ET") are dropped;
  5. photo-gallery runs (item counters "1/31", "2/31", ... with their captions) and, once the story has
     ended (80% of the page's prose above it), everything after a teaser heading ("You might also like",
     "Related stories", "More in ...", "Lesen Sie auch", ... ``_TEASER_HEADING_RE``) or from the first card
     of a list of teaser cards with bylines ("By Ben Pobjie", ``_teaser_cards_start``) or of a ranked list of
     headlines ("1. ...", "2. ...": "Most read", ``_ranked_list_start``) or an author box (a name line and
     a bio that starts with the name, ``_author_bio_start``) go, and so do lines
     with a call to action or site notice there (``_CTA_RE``: newsletter and sign-up pitches, "follow us",
     comment prompts, affiliate and market-data disclaimers, syndication notices "This article was originally
     published on ...", the site's social pages "Like X on Facebook", "Get the latest ..."; above the story's
     end only short lines that address
     the reader: "Sign Up for the MACH newsletter"); code, math and table placeholders there stay; lines above the
     page's ``<h1>`` go when no prose precedes it (menus, breadcrumbs, slogans);
     after the story, teaser headlines that are the whole text of a link leading away from the page, with
     their cards' labels and blurbs (``_linked_teasers``), account and feedback boxes ("Forgot Password",
     "Have you found an error ...") and up to two trailing labels ("SOURCE", "More Weather News",
     ``_drop_trailing_labels``: trafilatura's trailing headings) go;
  6. when the main-content pass lost the story's headline (an ``<h1>`` inside the ``<article>`` that holds
     the story, or an ``<h1>`` of three words or more that the page's head names as its title: ``<title>``,
     ``og:title``, "Headline | Site"), it is put first (``_restore_article_title``), and so is a lost dek under it
     (the page's ``og:description``/``description`` shown as text within 3,000 source characters after an
     ``<h1>``, ``_restore_dek``; ir_chaos's golds keep headline and dek, scrapinghub's articleBody and
     Readability's golds leave them out);
  also before extraction: sign-in/registration forms (a password field) and ``<figcaption>`` elements
  (photo credits, promo captions; captions holding code or math stay).
  When the main-content extractor kept little prose (it sometimes drops the story and keeps the menus),
  the densest prose region of the full page is taken instead (``_densest_prose_span``).
  An optional line classifier (``block_filter=True``, ``assay.stages.web.blocks``) is off by default.
  Pass 8 (issue 12, rules that hold across sites): an inline element named like a widget stays inside its
  sentence (``_inline_in_prose``); a widget block is spared for its size by its text, not its indentation;
  a table of short links is navigation (``_link_grid``); dated bylines (``_is_dated_byline``), empty metadata
  templates ("Posted by at", ``_EMPTY_FIELDS_RE``) and a section label above the headline (``_drop_kicker``) go.
* speed: the page is parsed from its ``<body`` on (the head is half the bytes of a news page; guarded
  against ``<body`` inside head scripts and comments) and without its ``<script>``/``<style>`` elements
  (MathJax ``math/tex`` scripts stay); code, tables, formula images, captions and password
  fields come from one DOM walk; placeholders are Unicode noncharacters (U+FDD0..), so pages need no
  cleaning pass (icon fonts use the private-use area); math markup is found in one walk over "math".
* limits: tag nesting deeper than ``MAX_DEPTH`` (checked in linear time before parsing; lexbor and the
  main-content pass are quadratic in depth) -> ``ExtractTooDeep`` (``web_extract_too_deep``); a
  per-document limit on the extracting thread's CPU time (not the wall clock, so the output does not depend
  on the machine's load), checked between stages and inside the DOM loops -> ``ExtractTimeout``
  (``web_extract_timeout``).

Measured on held-out sites (benchmarks/bench_web.py, test split of ir_chaos, scrapinghub, readability).

``HtmlExtractor`` is the datatrove step (backend ``resiliparse`` or ``trafilatura``).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING
from weakref import ref as _weakref

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.web.blocks import LINK_CLOSE, LINK_OPEN, filter_lines, strip_marks

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

    from resiliparse.parse.html import HTMLTree

# Unicode noncharacters (never meant for interchange, so virtually absent from real pages, unlike the
# private-use characters of icon fonts): the page is scanned for them once and only then cleaned
_PH_OPEN, _PH_CLOSE = "\ufdd0", "\ufdd1"
_PH_RE = re.compile(_PH_OPEN + r"(\d+)" + _PH_CLOSE)
# a code block's placeholder is padded with this noncharacter to its code's length (up to ``_PH_PAD_MAX``) while
# resiliparse's main-content pass runs, and the padding is removed from what it returns: that pass weighs a block
# by its text, and a bare placeholder made a listing followed by two links ("Full program listing") read as a
# link list, dropped with its code (gtk-doc's examples: libxmlsec1-doc lost 516 of 3,236 <pre> lines)
_PH_PAD = "\ufdd4"
_PH_PAD_MAX = 1000

# "language-x", "lang-x", "brush: x", "highlight-source-x" name a language; weaker prefixes
# ("code-", "highlight-", "syntax-", "hljs-") only count when the value is a known language
_LANG_CLASS_RE = re.compile(
    r"(?:^|\s)(language|lang|brush|highlight-source|sourcecode|prettyprint-lang|code|syntax|hljs|highlight)"
    r"[-_:]\s*([A-Za-z0-9_+#.\-]+)", re.I)
_LANG_TOKEN_SPLIT_RE = re.compile(r"[\s;:]+")
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
_IMG_MATH_SRC_HINTS = ("tex", "codecogs", "/math/", "cht=tx", "equation")
_IMG_MATH_CLASS_HINTS = ("tex", "math", "equation", "formula")


# each hint list as one regex of literals: one search of the lower-cased value instead of a generator step per
# hint (a news page's images are checked one by one, about 9 a page)
_IMG_MATH_SRC_HINT_RE = re.compile("|".join(map(re.escape, _IMG_MATH_SRC_HINTS)))
_IMG_MATH_CLASS_HINT_RE = re.compile("|".join(map(re.escape, _IMG_MATH_CLASS_HINTS)))


def _img_math_candidate(src: str, cls: str, alt: str) -> bool:
    """A formula image candidate: a LaTeX image service or tex-ish class, or TeX-looking alt text."""
    if "\\" in alt or "^{" in alt or "_{" in alt:
        return True
    return (_IMG_MATH_SRC_HINT_RE.search(src.lower()) is not None
            or _IMG_MATH_CLASS_HINT_RE.search(cls.lower()) is not None)


_MATH_CLASS_RE = re.compile(r"(^|[\s_-])(tex|latex|math|equation|formula|mwe-math)", re.I)

# class/id words that name a widget: whole words, word prefixes, hyphenated pairs
_WIDGET_WORDS = frozenset(
    "share sharing social newsletter subscribe subscription related promo breadcrumb breadcrumbs byline caption "
    "credit credits sponsor sponsored ads comment comments disqus popup modal signup toolbar pagination pager "
    "consent gdpr outbrain taboola recirc trending "
    # added after a one-word-at-a-time search on the train+dev splits of the three gold corpora (each kept
    # only if mean page F1 did not drop); navheader/navfooter are DocBook's Prev/Up/Home/Next bars
    "header footer masthead navigation navheader navfooter author bio video print feed banner cta skip "
    "tools feedback login signin recommended recommendations "
    # trafilatura's discard vocabulary, one word at a time on train+dev (issue 12, precision): metadata rows
    # ("article__meta": bylines, stamps; 13 pages better), galleries (8), sidebars inside the story (3), tag lists
    # (8 better, 1 worse), teaser touts (3), slides (2: salon-1 0.955 -> 0.986), nav bars (franchise_10 0.886 ->
    # 0.917), embeds and players (3). Left out for their CPU (each adds candidates that lexbor selects and Python
    # checks: "hidden" 1,755 on train+dev pages, as many as "gallery") against small changes on one to three pages
    # each: hidden, timestamp, aside, button; "message" is what forum software names its posts
    "meta gallery sidebar tags tout slide navbar embed embedded player".split())
# "nav" itself is not a widget word: it named ~40% of all candidates on train+dev pages (nav-item, nav-link
# inside menus that the main-content pass drops anyway) and removing it changed no page's F1 by 0.005
_WIDGET_PREFIXES = ("advert", "cookie", "onetrust")
# a class token that names a comment, as resiliparse's comment removal reads it ("comment", "comments",
# "comment-body", "doc-comment"; not "fullcomment" or "commentary"), and what a reader's comment carries
_COMMENT_TOKEN_RE = re.compile(r"(?:^|[-_])comments?(?:$|[-_])", re.I)
_DOC_COMMENT_TAGS = frozenset(("div", "section", "dd", "li", "td"))
_DOC_COMMENT_QUERY = ", ".join(f'{t}[class*="omment"]' for t in sorted(_DOC_COMMENT_TAGS))
_READER_COMMENT_MARKS = ("time, img, form, textarea, button, [class*=author], [class*=avatar], [class*=date], "
                         "[class*=reply], [class*=vcard]")
_WIDGET_PAIRS = ("more-stories", "read-more", "most-popular", "back-to-top", "backtotop", "scroll-to-top")




def _widget_regex(words, prefixes, pairs) -> re.Pattern:
    alts = sorted(words) + [p + r"\w*" for p in prefixes] + list(pairs)
    return re.compile(r"(?:^|[\s_-])(" + "|".join(alts) + r")(?:$|[\s_-])", re.I)


_BOILERPLATE_CLASS_RE = _widget_regex(_WIDGET_WORDS, _WIDGET_PREFIXES, _WIDGET_PAIRS)
_MAX_BOILERPLATE_BLOCK_CHARS = 4000
_MIN_ARTICLE_SENTENCES = 5
# widget words whose blocks go even when they hold running prose: a gallery's captions tell each photo's story in
# sentences, and no page wraps its article in an element named "caption" (train+dev: 2 ir_chaos pages better,
# hugh_4 0.84 -> 0.98, atmosphere_10; none worse)
_PROSE_WIDGET_WORDS = frozenset(("caption",))


# what ends a sentence in running text (a rough count: "e.g. " counts too)
_SENTENCE_ENDS = (". ", "? ", "! ", ".\n", "。", "？", "！")


def _folds_over(text: str, limit: int) -> bool:
    """True when ``" ".join(text.split())`` is over ``limit`` characters as its first ``2 * limit`` characters
    folded already show (that folding is a prefix of the whole one's); False: too short to tell, fold it all.
    Spares folding all of a long text (clean-links' layout table cell: 97,000 characters, 0.8 ms)."""
    return len(text) > 2 * limit and len(" ".join(text[:2 * limit].split())) > limit


def _has_sentence_breaks(text: str, n: int = 1) -> bool:
    """``text`` holds at least ``n`` sentence ends (``_SENTENCE_ENDS``, non-overlapping occurrences of each, as
    ``str.count`` counts them), read only as far as the ``n``-th: every caller asks for a threshold (1 or 5), and
    most texts asked about are prose that reaches it in a few hundred characters, where counting read the whole
    text seven times (train+dev gold pages: 48 -> 14 ms over 1,799 texts, 3.9M characters). A pattern whose
    first character is absent is skipped after one character search."""
    found = 0
    for end in _SENTENCE_ENDS:
        if end[0] not in text:
            continue
        i = text.find(end)
        while i >= 0:  # (no end overlaps itself: ``find`` from i + 1 meets what ``count`` counts)
            found += 1
            if found >= n:
                return True
            i = text.find(end, i + 1)
    return False


_NEGATED_TOKEN_RE = re.compile(r"(?:^|\s)no[-_]\S*")
_LINENO_HINTS = ("linenos", "gutter", "lntd", "lineno", "line-numbers", "hljs-ln", "blob-num", "linenodiv")
# what ``_drop_line_numbers`` scans for: the hints that hold no other hint ("lineno" is in "linenos" and "linenodiv"),
# the same answer with a scan of the class text less per hint left out
_LINENO_SCAN_HINTS = tuple(h for h in _LINENO_HINTS if not any(o != h and o in h for o in _LINENO_HINTS))
# line-number gutters inside a code block (``_Rewriter._code_text``); ``_PRE_MARKUP_SELECTOR``: those or a <br> in any
# <pre>, asked once on pages with ``_PRE_QUERY_MIN`` or more blocks
_CODE_GUTTER_SELECTOR = ".gutter, .linenos, .line-numbers-rows, .lineno, .ln"
_PRE_MARKUP_SELECTOR = "pre br, " + ", ".join("pre " + c for c in _CODE_GUTTER_SELECTOR.split(", "))
_PRE_QUERY_MIN = 8
_LINENO_SELECTOR = ("td.linenos, td.gutter, td.gl, td.blob-num, table.lntable td.lntd:first-child, pre.lineno, "
                    ".linenodiv, .line-numbers-rows, .hljs-ln-numbers, pre .linenos, pre .lnt")
# literal-prefixed patterns let the regex engine skip ahead quickly; single-quoted attributes are
# rare enough to be left to resiliparse's own main-content heuristics
_ATTR_VALUE_RES = (re.compile(r'class="([^"]{0,300})'), re.compile(r'id="([^"]{0,300})'))
# the id values found from their '="' (the search stops at far fewer "=" than "i", a third less CPU: scrapinghub
# train+dev 55 -> 42 us a page); one search resumes where the last value ended, so after a value cut at 300
# characters this one could find an 'id="' that straddles the cut, which the plain pattern skips: then it is used
_ID_VALUE_FROM_EQ_RE = re.compile(r'="(?<=id=")([^"]{0,300})')


def _attr_values(html: str) -> tuple[set[str], set[str]]:
    """The page's distinct double-quoted class values and id values (two regex scans of the source)."""
    rc, ri = _ATTR_VALUE_RES
    ids = _ID_VALUE_FROM_EQ_RE.findall(html)
    if ids and max(map(len, ids)) >= 300:
        ids = ri.findall(html)
    return set(rc.findall(html)), set(ids)


# widget words also looked for as a camelCase part of a class/id ("imageCaption", "photoCaption": captions
# kept as story text on news pages): a capitalised word inside a token is split off. Every widget word
# as a camelCase part gained 4 more train/dev pages (each < 0.005 F1) for ~4% more extraction CPU
_CAMEL_WORDS = ("caption",)
_CAMEL_CAPS = tuple(w.capitalize() for w in _CAMEL_WORDS)


def _camel_split(key: str) -> str:
    """``key`` with a space before each ``_CAMEL_WORDS`` part spelled capitalised (``imageCaption`` ->
    ``image Caption``), so the widget regex sees a word boundary there."""
    for w in _CAMEL_CAPS:
        if w in key:
            key = key.replace(w, " " + w)
    return key


# ``_BOILERPLATE_CLASS_RE`` without re.I, for a key lower-cased first (ASCII keys: the same matches, at about 60%
# of the CPU of re.I's case-folded comparisons)
_BOILERPLATE_CLASS_LOWER_RE = re.compile(_BOILERPLATE_CLASS_RE.pattern)


def _widget_word(key: str) -> str:
    """The widget word that names the element of class and id ``key`` (``class + " " + id``), lower-cased, as
    ``_BOILERPLATE_CLASS_RE`` finds it first, or "" for none: after its negated tokens ("no-share") are left out and
    its ``_CAMEL_WORDS`` parts split off ("imageCaption")."""
    if "no" in key:
        key = _NEGATED_TOKEN_RE.sub(" ", key)  # "no-share", "no_comments": content without widgets
    key = _camel_split(key)
    # re.I folds some non-ASCII letters to ASCII ones ("K", the Kelvin sign, is "k"): those keys take it
    m = _BOILERPLATE_CLASS_LOWER_RE.search(key.lower()) if key.isascii() else _BOILERPLATE_CLASS_RE.search(key)
    return m.group(1).lower() if m is not None else ""


_WIDGET_SUBSTRINGS = _WIDGET_PREFIXES + _WIDGET_PAIRS  # looked for as substrings of the lower-cased values


def _widget_words_in(values: set[str], joined: str | None = None) -> tuple[str, set[str]]:
    """(the values joined, the widget words that occur in them, lower-cased; ``_CAMEL_WORDS`` also as
    camelCase parts: "imageCaption"). ``joined``: the values already joined (the rewriter's ``attr_text``)."""
    if joined is None:
        joined = " ".join(values)
    low = joined.lower()
    found = set(_WIDGET_WORDS.intersection(low.replace("_", " ").replace("-", " ").split()))
    found.update(k for k in _WIDGET_SUBSTRINGS if k in low)
    found.update(w for w, cap in zip(_CAMEL_WORDS, _CAMEL_CAPS) if cap in joined)
    return joined, found


# every word ``_widget_words_in`` may find -> the other such words inside it ("comments" -> "comment",
# "navheader" -> "header"): the only ones that can make it redundant in ``_boilerplate_selector``
_ALL_WIDGET_WORDS = frozenset(_WIDGET_WORDS) | frozenset(_WIDGET_PREFIXES) | frozenset(_WIDGET_PAIRS) | frozenset(_CAMEL_WORDS)
_INNER_WIDGET_WORDS = {w: tuple(k for k in _ALL_WIDGET_WORDS if k != w and k in w) for w in _ALL_WIDGET_WORDS}
_INNER_WIDGET_WORDS = {w: ks for w, ks in _INNER_WIDGET_WORDS.items() if ks}


def _boilerplate_selector(class_vals: set[str], id_vals: set[str], class_text: str | None = None) -> str | None:
    """CSS selector for the widget words (``_BOILERPLATE_CLASS_RE``) that occur in the page's class tokens
    (``[class*="share"]``) and id values (``[id*="share"]``); case-insensitive only for a word the page
    spells with capitals alone. lexbor's cost grows with the number of alternatives, so each word is asked
    only of the attribute it occurs in; candidates are re-checked token-wise by the regex."""
    sel = []
    for attr, vals in (("class", class_vals), ("id", id_vals)):
        joined, found = _widget_words_in(vals, class_text if attr == "class" else None)
        kept: dict[str, bool] = {}  # word -> case-sensitive
        for w in sorted(found, key=len):
            # case-sensitive unless the page spells the word with capitals only, or a camelCase word is
            # spelled capitalised somewhere ("imageCaption" needs [class*="caption" i])
            cs = w in joined and not (w in _CAMEL_WORDS and w.capitalize() in joined)
            # [class*="comment"] already selects every "comments"/"navheader" ("header") candidate (the
            # shorter widget words inside ``w`` are listed once, ``_INNER_WIDGET_WORDS``)
            inner = _INNER_WIDGET_WORDS.get(w)  # (most words hold none: no generator for them)
            if inner is None or not any(k in kept and (cs or not kept[k]) for k in inner):
                kept[w] = cs
        alts = [f'[{attr}*="{w}"]' if cs else f'[{attr}*="{w}" i]' for w, cs in sorted(kept.items())]
        if len(alts) > 1:
            # one attribute test first: most elements have no class (or no id), and lexbor then skips every
            # substring test of the list (train+dev gold pages: the whole-page query 148 -> 125 ms, -15%)
            sel.append(f"[{attr}]:is({', '.join(alts)})")
        else:
            sel += alts
    return ", ".join(sel) if sel else None


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


_MATH_SCAN_MAX = 2000
# the regex engine finds a literal in a page that is not Latin-1 (most pages: one curly quote makes a page two
# bytes a character) faster than ``str.find`` (train+dev gold pages: "math" 0.16 -> 0.11 ms, "<body" 8 -> 5 us
# a page)
_MATH_WORD_RE = re.compile("math")


def _math_markup(html: str) -> set[str]:
    """Which math markups the source may hold: ``math/`` (MathJax 2 scripts), ``katex``, ``mjx-container``,
    ``mwe-math``, ``<math``. Every one handled spells "math" (``katex-mathml``; MathJax 3 is read from its
    ``<math>``), so one walk over the occurrences of "math" answers all of them: a handful of short
    look-arounds instead of one scan of the page per needle (each costs ~1 ms on a 1 MB non-ASCII page).
    Pages with more than ``_MATH_SCAN_MAX`` occurrences get every needle (math-heavy: all checks run)."""
    found: set[str] = set()
    n = 0
    for m in _MATH_WORD_RE.finditer(html):  # = each html.find("math", i + 4), a third faster on non-Latin-1 pages
        i = m.start()
        n += 1
        if n > _MATH_SCAN_MAX:
            return {"math/", "katex", "mjx-container", "mwe-math", "<math"}
        if html.startswith("math/", i):
            found.add("math/")
        pre = html[max(0, i - 6):i]
        if pre.endswith("<") or pre.endswith(":"):  # <math, <m:math (namespaced MathML)
            found.add("<math")
        elif pre.endswith("mwe-"):
            found.add("mwe-math")
        elif pre.endswith("katex-"):
            found.add("katex")
    if "<math" in found and "mjx-container" in html:
        found.add("mjx-container")
    if "<math" in found and "katex" not in found and "katex" in html:  # KaTeX's MathML is a <math>
        found.add("katex")
    return found


# ----------------------------------------------------------------------------------------------
# limits: nesting depth (checked before parsing) and a per-document time limit
# ----------------------------------------------------------------------------------------------
# Blink's HTML parser stops nesting at 512 levels (kMaximumHTMLParserDOMTreeDepth); lexbor's tree builder
# and resiliparse's main-content pass are quadratic in depth (100,000 nested <div> never finish).
MAX_DEPTH = 512
# pages with fewer tags than this are not checked: whatever their depth they parse and extract in about a
# second at worst (4,000 nested <div>: ~0.8 s), and most real pages are below it, so the check costs nothing
_DEPTH_CHECK_MIN_TAGS = 4000
DEFAULT_TIME_LIMIT_S = 20.0


class ExtractLimitError(Exception):
    """A document over an extraction limit; ``reason`` is its reject reason code."""

    reason = "web_extract_limit"


class ExtractTooDeep(ExtractLimitError):
    reason = "web_extract_too_deep"


class ExtractTimeout(ExtractLimitError):
    reason = "web_extract_timeout"


_TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]{0,30})")
_RAWTEXT = frozenset(("script", "style", "textarea", "title", "xmp", "plaintext", "noscript"))
_RAWTEXT_END = {n: re.compile("</" + n, re.I) for n in _RAWTEXT}
_SELF_CLOSING_SIBLINGS = frozenset(("p", "li", "dt", "dd", "option", "tr", "td", "th", "rt", "rp"))
_CLOSES_P = frozenset("address article aside blockquote div dl fieldset footer form h1 h2 h3 h4 h5 h6 header hr "
                      "main nav ol p pre section table ul".split())
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr basefont bgsound frame "
                  "keygen image isindex nextid".split())


def nesting_depth_exceeds(html: str, limit: int = MAX_DEPTH) -> bool:
    """True when the tag nesting of ``html`` may exceed ``limit`` (pages with at most
    ``_DEPTH_CHECK_MIN_TAGS`` "<" are never flagged), in linear time. A vectorised upper bound
    (every ``<x`` +1, every ``</`` -1, running maximum) clears ordinary pages in well under a millisecond;
    only pages over it get an exact stack scan (void elements skipped, closing tags pop to their match)."""
    if html.count("<") <= max(limit, _DEPTH_CHECK_MIN_TAGS):
        return False
    import numpy as np

    raw = np.frombuffer(html.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    lt = np.flatnonzero(raw[:-3] == 60)  # '<'
    c1, c2, c3 = (raw[lt + k] | 32 for k in (1, 2, 3))  # lower-cased bytes after '<'
    step = np.ones(len(lt), np.int8)
    step[c1 == 47] = -1  # '</'
    # tags that never nest, not counted: <!-- and <!doctype, <br>, <img>, <hr>, <meta>, <p>, <li>/<link>
    # and the closing </p>, </li> (an open <p>/<li> is closed by its next sibling)
    step[(c1 == 33) | (c1 == 98) & (c2 == 114) | (c1 == 105) & (c2 == 109) | (c1 == 104) & (c2 == 114)
         | (c1 == 109) & (c2 == 101) & (c3 == 116) | (c1 == 112) & ((c2 == 32) | (c2 == 62))
         | (c1 == 108) & (c2 == 105) | (c1 == 47) & ((c2 == 112) & ((c3 == 62) | (c3 == 32)) | (c2 == 108) & (c3 == 105))] = 0
    if int(np.cumsum(step, dtype=np.int32).max()) <= limit:
        return False
    stack: list[str] = []
    open_count: dict[str, int] = {}
    pos = 0
    while True:
        m = _TAG_RE.search(html, pos)
        if m is None:
            return False
        pos = m.end()
        name = m.group(2).lower()
        if m.group(1):
            if open_count.get(name):  # pop to the matching opening (amortised O(1) per tag)
                while True:
                    top = stack.pop()
                    open_count[top] -= 1
                    if top == name:
                        break
            continue
        if name in _VOID:
            continue
        if name in _RAWTEXT:  # script/style bodies are text, not tags
            end = _RAWTEXT_END[name].search(html, pos)
            pos = len(html) if end is None else end.start()
            continue
        if stack and (stack[-1] == name and name in _SELF_CLOSING_SIBLINGS
                      or stack[-1] == "p" and name in _CLOSES_P):
            open_count[stack.pop()] -= 1
        stack.append(name)
        open_count[name] = open_count.get(name, 0) + 1
        if len(stack) > limit:
            return True


class _WeakNodeCache:
    """A drop-in for resiliparse's node-object cache (``resiliparse.parse.html.node._node_cache``, a
    ``weakref.WeakValueDictionary`` from the node's address to its Python object, which resiliparse reads and
    writes by ``get`` and item assignment only, once per node object it makes: about 100,000 per 200 pages, most
    of them never found again): the same answers (``get`` gives the live object stored under the key, else the
    default), with plain ``weakref.ref`` values and no per-entry removal callback. WeakValueDictionary's item
    assignment makes a ``KeyedRef`` (two Python-level calls) and each object's death runs its Python removal
    callback; here entries of dead objects are dropped in one pass when the table has doubled since the last one."""

    __slots__ = ("data", "limit")

    def __init__(self, items=()):
        self.data: dict = {}
        self.limit = _NODE_CACHE_MIN
        for k, v in items:
            self[k] = v

    def get(self, key, default=None):
        r = self.data.get(key)
        if r is not None:
            o = r()
            if o is not None:
                return o
        return default

    def __setitem__(self, key, value) -> None:
        data = self.data
        if len(data) >= self.limit:
            for k, r in list(data.items()):  # (one C-level copy: no iteration over a table that changes)
                if r() is None and data.get(k) is r:
                    del data[k]
            self.limit = max(_NODE_CACHE_MIN, 2 * len(data))
        data[key] = _weakref(value)

    def __getitem__(self, key):
        o = self.get(key)
        if o is None:
            raise KeyError(key)
        return o

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return sum(1 for r in self.data.values() if r() is not None)


_NODE_CACHE_MIN = 4096
_NODE_CACHE_SET: list = []  # [True] once _install_node_cache ran in this process


def _install_node_cache() -> None:
    """Put a ``_WeakNodeCache`` (with the live entries of the one there) in resiliparse's place, once."""
    import resiliparse.parse.html.node as rnode  # noqa: PLC0415

    cache = getattr(rnode, "_node_cache", None)
    if not isinstance(cache, _WeakNodeCache) and hasattr(cache, "items"):
        rnode._node_cache = _WeakNodeCache(list(cache.items()))


class _Deadline:
    """A limit on the extracting thread's CPU time, cheap to check: a thread's CPU time grows no faster than the
    wall clock, so while less than the limit has passed on the wall clock (``time.monotonic``, read first, about
    60 ns) the CPU time (``time.thread_time``, a system call: about 1.8 us here, and the loops check once per
    element) is not read. Raises exactly where reading the CPU time every time would."""

    __slots__ = ("wall", "cpu")

    def __init__(self, seconds: float):
        self.wall = time.monotonic() + seconds  # (before the CPU time: the wall interval holds the CPU interval)
        self.cpu = time.thread_time() + seconds


def _check_deadline(deadline: "_Deadline | None") -> None:
    """Raise ``ExtractTimeout`` once the thread's CPU time passed ``deadline``."""
    if deadline is not None and time.monotonic() > deadline.wall and time.thread_time() > deadline.cpu:
        raise ExtractTimeout("extraction exceeded its time limit")


# ----------------------------------------------------------------------------------------------
# DOM rewriting
# ----------------------------------------------------------------------------------------------
# every <input>, the password fields picked in Python (``_is_password_input``): lexbor's attribute test per element
# cost more than the few inputs of a page (train+dev scrapinghub+readability: the walk 0.11 -> 0.085 ms a page)
# and of the images with alt text only the formula candidates (``_img_math_candidate``: a TeX-looking alt, a formula
# service's src or a tex-ish class, case-insensitive as its ``lower``), chosen by lexbor: a news page has ~20 photos
# with alt text, each a node object and four attribute reads in ``math`` before it was found no formula
_IMG_MATH_SELECTOR = "img[alt]:is(" + ", ".join(
    ['[alt*="\\\\"]', '[alt*="^{"]', '[alt*="_{"]'] + [f'[src*="{k}" i]' for k in _IMG_MATH_SRC_HINTS]
    + [f'[class*="{k}" i]' for k in _IMG_MATH_CLASS_HINTS]) + ")"
_WALK_SELECTOR = "pre, code, kbd, samp, tt, table, figcaption, input, " + _IMG_MATH_SELECTOR


def _is_password_input(el) -> bool:
    """``el`` (an ``<input>``) matches ``input[type="password" i]``: its type is "password" in ASCII case
    folding (lexbor's ``i``; ``isascii`` first, as ``lower`` also folds non-ASCII letters)."""
    t = el.getattr("type")
    return t is not None and len(t) == 8 and t.isascii() and t.lower() == "password"


# a table holding one of these is a layout table
_TABLE_LAYOUT = "table, pre, ul, ol, form, iframe"
# outside foreign content (<svg>, <math>: their elements may be named "td" anywhere, a <caption> included) and
# templates, the HTML parser puts every td/th of a table without nested tables in a tr, and no tr in a tr: such
# a table's rows are read in one query (``_Rewriter._table_rows``)
_TABLE_LAYOUT_OR_FOREIGN = _TABLE_LAYOUT + ", svg, math, template"


# what a page Doxygen wrote carries: its stylesheet, its section script (1.8 on), its generator tag (head), the
# "Generated by Doxygen" comment at the top of its body. Of the 1,085 pages with a fragment of libeigen3-doc,
# doxygen-doc and wx3.2-doc, each carries the script and the comment, 1,061 the stylesheet (doxygen's manual
# has its own), 711 the generator tag (wx3.2-doc's own header has none)
_DOXYGEN_MARKS = ("doxygen.css", "dynsections.js", 'content="Doxygen', "Generated by Doxygen")


# what a page Haddock wrote carries: its script bundle (2.18 on) or, before it, haddock-util.js (not in the benchmark
# cache: every Haddock page there is 2.25's). All 1,355 pages with a "selflink" anchor of ghc-doc, libghc-aeson-doc
# and libghc-pandoc-doc name haddock-bundle.min.js
_HADDOCK_MARKS = ("haddock-bundle.min.js", "haddock-util.js")
# the kind Doxygen writes after the name in a page's title: "Foo Class Template Reference", "Bar Member List",
# "baz.h File Reference", "Eigen Namespace Reference", "src Directory Reference"
_DOXYGEN_TITLE_KIND_RE = re.compile(
    r"\s+(?:(?:Class|Struct|Union|Interface|Protocol|Exception|Concept|Template|Namespace|Module|File|Directory|Package|"
    r"Enum|Entity|Member|List|Reference)\b\s*)+$")


# what a page javadoc wrote carries: its generator tag (javadoc 9 on: "javadoc/ClassWriterImpl") or, before and
# beside it, the "Generated by javadoc" comment. Every one of the 1,515 pages with a div.caption of groovy-doc (api/,
# javadoc 17) and libcommons-lang3-java-doc carries the tag
_JAVADOC_MARKS = ('content="javadoc', "Generated by javadoc")
# parts of a generator's marks (every mark holds one) that a regex finds in one scan of the page each: a page
# without any of them (nearly every news page) holds no mark, and is told so without one ``in`` scan per mark
# (on a page that is not Latin-1, a literal regex scan costs about half of an ``in`` scan: "javadoc" 70 us
# against 125 us for both marks on a 200 KB news page; Doxygen's four marks 300 us, their two parts 170 us)
_GENERATOR_HINTS = {_DOXYGEN_MARKS: (re.compile("xygen"), re.compile(r"dynsections\.js")),
                    _HADDOCK_MARKS: (re.compile("haddock-"),), _JAVADOC_MARKS: (re.compile("javadoc"),)}


_TABLE_CELL_MAX = 400  # characters of a data table's cell (folded and escaped); a longer one makes a layout table


class _Rewriter:
    def __init__(self, tree: "HTMLTree", html: str = "", deadline: "_Deadline | None" = None, page: str | None = None):
        self.tree = tree
        self.deadline = deadline
        self._tables: list | None = None
        self._walked: tuple | None = None
        self._math_found: set[str] | None = None
        self._title: str | None = None
        self._h1 = None
        self._body = False  # not looked up yet
        self.body_elements: list = []  # every marked article-body element
        self.attr_values = _attr_values(html) if html else (set(), set())
        # distinct class tokens (far fewer than distinct class values on atomic-CSS pages), joined once
        self.class_tokens = set(" ".join(self.attr_values[0]).split())
        self.attr_text = " ".join(self.class_tokens)
        self.html = html
        # the page as given, head included (``html`` is its body without scripts): where ``generated_by`` looks
        self.page = html if page is None else page
        self._generators: dict[tuple[str, ...], bool] = {}
        self.blocks: list[str] = []  # placeholder index -> final text
        self.is_block: list[bool] = []
        self.n_code_blocks = 0
        self.padded = False  # a placeholder carries ``_PH_PAD``
        self.n_inline_code = 0
        self.n_math = 0
        self.n_tables = 0
        self.table_blocks: list = []  # (the <p> that holds a data table's placeholder, the placeholder, its table's text)
        self.captions: frozenset[str] = frozenset()  # javadoc's table captions made headings (``javadoc_captions``)

    def generated_by(self, marks: tuple[str, ...]) -> bool:
        """The page (head included) names one of ``marks``: a documentation generator's stylesheet, script or
        meta tag (``_DOXYGEN_MARKS``, ``_HADDOCK_MARKS``, ``_JAVADOC_MARKS``). Scanned once per page and generator:
        the Doxygen check is asked again for every "header" block the widget layer meets."""
        hit = self._generators.get(marks)
        if hit is None:
            page, hints = self.page, _GENERATOR_HINTS.get(marks)
            hit = self._generators[marks] = ((hints is None or any(h.search(page) for h in hints))
                                             and any(m in page for m in marks))
        return hit

    def _walk(self) -> tuple[list, list, list, list, list, list]:
        """One DOM walk (each costs about as much as the rest of a step) for code blocks, inline code,
        tables, formula image candidates, figure captions and password fields: ``(pres, inline, tables, imgs,
        figcaptions, password_inputs)``, in
        document order, taken before widgets, math and code are rewritten (users check ``doc.contains``
        for nodes removed or replaced since)."""
        if self._walked is None:
            pres, inline, imgs, caps, pwd, self._tables = [], [], [], [], [], []
            doc = self.tree.document
            for el in (doc.query_selector_all(_WALK_SELECTOR).values() if doc is not None else []):
                tag = el.tag
                if tag == "input":
                    if _is_password_input(el):
                        pwd.append(el)
                    continue
                (pres if tag == "pre" else self._tables if tag == "table" else imgs if tag == "img"
                 else caps if tag == "figcaption" else inline).append(el)
            self._walked = (pres, inline, self._tables, imgs, caps, pwd)
        return self._walked

    def title(self) -> str:
        """The text of the page's first ``<h1>``, whitespace-normalised, read after the rewrite (cached)."""
        if self._title is None:
            doc = self.tree.document
            h1 = doc.query_selector("h1") if doc is not None else None
            self._h1 = h1
            self._title = _norm_ws(h1.text or "") if h1 is not None else ""
        return self._title

    def article_title(self) -> str:
        """``title()`` when that ``<h1>`` sits inside an ``<article>`` element that holds a story (800+
        characters, 5+ sentences): the story's own headline, not a site name, section banner or teaser."""
        t = self.title()
        art = self._h1.closest("article") if t else None
        if art is None:
            return ""
        art_text = art.text or ""  # a teaser card or news ticker is an <article> too, without the story
        return t if len(art_text) >= 800 and _has_sentence_breaks(art_text, 5) else ""

    def math_markup(self) -> set[str]:
        """``_math_markup`` of the page source (cached)."""
        if self._math_found is None:
            self._math_found = _math_markup(self.html)
        return self._math_found

    def _article_body(self):
        """The page's marked article body (largest ``_ARTICLE_BODY_*`` element with at least 800 characters
        and 5 sentences), or None. Cached: boilerplate removal and the body restriction share it."""
        if self._body is not False:
            return self._body
        self._body = None
        doc = self.tree.document
        sel = _body_selector(self) if doc is not None else None
        if sel:
            best, best_text = None, ""
            for b in doc.query_selector_all(sel).values():
                t = b.text or ""
                self.body_elements.append(b)
                if len(t) > len(best_text):
                    best, best_text = b, t
            if best is not None and len(best_text) >= 800 and _has_sentence_breaks(best_text, 5):
                self._body = best
        return self._body

    def _token(self, text: str, block: bool) -> str:
        self.blocks.append(text)
        self.is_block.append(block)
        return f"{_PH_OPEN}{len(self.blocks) - 1}{_PH_CLOSE}"

    def _padded(self, tok: str, n: int) -> str:
        """``tok`` padded with ``_PH_PAD`` to ``n`` characters (at most ``_PH_PAD_MAX`` more)."""
        pad = min(n - len(tok), _PH_PAD_MAX)
        if pad <= 0:
            return tok
        self.padded = True
        return tok + _PH_PAD * pad

    def _replace_with_text(self, el, text: str) -> None:
        self._replace(el, self.tree.create_text_node(text))

    def _replace_with_pre(self, el, text: str) -> None:
        """``el`` -> a ``<pre>`` holding ``text`` (a code figure's block, a Doxygen code view)."""
        pre = self.tree.create_element("pre")
        pre.append_child(self.tree.create_text_node(text))
        self._replace(el, pre)

    @staticmethod
    def _replace(el, node) -> bool:
        """``el`` -> ``node`` in the tree; False when it could not be (detached nodes etc.)."""
        try:
            el.replace_with(node)
        except Exception:  # noqa: BLE001 - detached nodes etc.
            return False
        return True

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
        doc_contains = body.contains
        # cheap source checks skip DOM queries for markup the page does not contain
        found = self.math_markup() if html else None
        has = (lambda needle: needle in found) if found is not None else (lambda needle: True)
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
        for m in (body.query_selector_all("math").values() if has("<math") else []):
            display = (m.getattr("display") or "").lower() == "block" or (m.getattr("mode") or "") == "display"
            self._replace_with_text(m, self._math_token(_safe_mathml(m), display))
        # image formulas (candidates from the one DOM walk shared with code and tables)
        for img in self._walk()[3]:
            alt = (img.getattr("alt") or "").strip()
            if not alt or not doc_contains(img):
                continue
            src = img.getattr("src") or ""
            cls = img.getattr("class") or ""
            if not _img_math_candidate(src, cls, alt):
                continue
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
    def _language_candidates(el, inner_code: bool = True):
        """The attribute strings ``_language`` reads, in its order: the element's ``<code>`` child, the
        element, and two ancestors; made one at a time (most blocks name their language on the first two,
        and each ancestor costs a node object). ``inner_code=False``: the caller knows ``el`` holds no
        ``<code>``."""
        inner = el.query_selector("code") if inner_code else None
        if inner is not None:
            yield (inner.getattr("class") or "") + " " + (inner.getattr("data-lang") or "")
        node = el
        for _ in range(3):
            if node is None:
                break
            yield ((node.getattr("class") or "") + " " + (node.getattr("data-lang") or "")
                   + " " + (node.getattr("data-language") or "") + " " + (node.getattr("lang") or ""))
            node = node.parent if hasattr(node, "parent") else None
            if node is not None and not hasattr(node, "getattr"):
                break

    @staticmethod
    def _language(el, inner_code: bool = True) -> str:
        for c in _Rewriter._language_candidates(el, inner_code):
            for m in _LANG_CLASS_RE.finditer(c):
                lang = m.group(2).lower().strip(".;")
                if not lang or lang in ("none", "block", "wrapper", "container", "text-wrapper"):
                    continue
                if m.group(1).lower() in _STRONG_LANG_PREFIXES or lang in _KNOWN_LANGS:
                    return _LANG_ALIASES.get(lang, lang)
            for tok in _LANG_TOKEN_SPLIT_RE.split(c.lower()):
                if tok in _KNOWN_LANGS and tok not in ("text", "c", "r"):
                    return _LANG_ALIASES.get(tok, tok)
        return ""

    def _code_text(self, el, markup: bool = True) -> str:
        """The text of code element ``el``, ``<br>`` as newlines, line-number gutters dropped, blank first and
        last lines off. ``markup=False``: the caller knows ``el`` holds neither (spares two subtree queries)."""
        if markup:
            for br in el.query_selector_all("br").values():
                self._replace_with_text(br, "\n")
            # line-number gutters
            for g in el.query_selector_all(_CODE_GUTTER_SELECTOR).values():
                g.decompose()
        text = el.text or ""
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
        lines = text.split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(line.rstrip() for line in lines)

    def _drop_line_numbers(self, doc) -> None:
        """Remove line-number gutters that sit outside the code's own <pre>: Pygments/Sphinx/MkDocs
        ``table.highlighttable td.linenos``, Rouge/Jekyll ``td.gutter``/``pre.lineno``, Hugo/Chroma
        ``table.lntable`` (first ``td.lntd``), GitHub blob ``td.blob-num``, highlight.js line numbers."""
        if not any(k in self.attr_text for k in _LINENO_SCAN_HINTS):
            return
        for g in doc.query_selector_all(_LINENO_SELECTOR).values():
            if doc.contains(g):
                g.decompose()

    def doxygen_fragments(self) -> None:
        """Doxygen's code view (source listings ``*_source.html``, examples): a ``div.fragment`` of ``div.line``
        rows, led by a ``span.lineno`` number in source listings, without a ``<pre>`` -> a ``<pre>`` of its code,
        one line per row, indentation kept (``&#160;`` and spaces), line numbers left out (with the one
        ``&#160;`` older Doxygen writes after them), which ``code`` then rewrites as it does every ``<pre>``.
        Runs before the page walk and the widget layer (whose "comment" would take Doxygen's ``<span
        class="comment">``). A fragment that holds a ``<pre>`` (Doxygen 1.5-1.7) is left as it is. Only on
        Doxygen's pages (``generated_by``: the page, head included, names its stylesheet, script or generator): other sites' "fragment"
        and "line" classes (slides, verse) are prose."""
        doc = self.tree.document
        if doc is None or "fragment" not in self.class_tokens or not self.generated_by(_DOXYGEN_MARKS):
            return
        for frag in doc.query_selector_all("div.fragment").values():
            _check_deadline(self.deadline)
            if not doc.contains(frag) or frag.query_selector("pre") is not None:
                continue
            rows = list(frag.query_selector_all("div.line").values())
            if not rows:
                continue
            numbered = False
            for n in frag.query_selector_all("span.lineno").values():
                n.decompose()
                numbered = True
            lines = []
            for row in rows:
                t = (row.text or "").replace("\n", "")
                lines.append(t[1:] if numbered and t.startswith("\u00a0") else t)
            self._replace_with_pre(frag, "\n".join(lines))

    def haddock_source_links(self) -> None:
        """Haddock ends each declaration (``p.src``, an instance's ``td.src``) with a ``Source`` link to the
        hyperlinked source (``a.link``) and a ``#`` anchor to itself (``a.selflink``): page chrome that would
        close every signature line ("decode :: FromJSON a => ByteString -> Maybe a Source #"). Both go, only on
        Haddock's pages (``generated_by``: the page, head included, names its script); another site's "src"/"link" classes stay."""
        doc = self.tree.document
        tokens = self.class_tokens
        if (doc is None or "src" not in tokens or not ("selflink" in tokens or "link" in tokens)
                or not self.generated_by(_HADDOCK_MARKS)):
            return
        for a in doc.query_selector_all(".src > a.link, .src > a.selflink").values():
            a.decompose()

    def sphinx_signatures(self) -> None:
        """Sphinx (4.x on) writes a signature's return annotation behind an arrow of its own
        (``<span class="sig-return-icon">&#x2192;</span>``), which resiliparse's main-content pass drops as an
        icon (it drops an element whose text is a lone symbol such as an arrow, whatever its class): "parse(x) ->
        None" came out as "parse(x) None". Its viewcode extension ends every signature with a "[source]" link
        (``span.viewcode-link``): page chrome, like Haddock's "Source". The arrow becomes Python's own return
        annotation, " ->" (the space is what the stylesheet draws), which the pass keeps; the link goes. The
        signature itself (``dt.sig-object``) becomes a code block, and a parameter's type (docutils' classifier) reads
        after " : ". All these class names are Sphinx's (docutils') own."""
        doc = self.tree.document
        tokens = self.class_tokens
        if doc is None or not ("sig-return-icon" in tokens or "viewcode-link" in tokens or "sig-object" in tokens
                               or "classifier" in tokens):
            return
        for el in doc.query_selector_all("span.sig-return-icon").values():
            el.remove_attribute("class")
            el.text = " ->"
        for el in doc.query_selector_all("span.viewcode-link").values():
            if el.parent is not None:
                el.decompose()
        # a parameter's type (docutils' classifier: numpydoc's "name : type"), drawn by Sphinx's basic.css
        # (``.classifier:before {content: ":"}``): without it name and type ran together ("trajTrajectory")
        for el in doc.query_selector_all("dt > span.classifier").values():
            el.text = " : " + " ".join((el.text or "").split())
        # the signature (``dt.sig-object``) is the entry's declaration: a code block, as gi-docgen's and Doxygen's
        # <pre> declarations and Haddock's signature lines are. As prose (a line of identifiers) it made short API
        # entries read as no language (python-mdtraj-doc: 10 of 45 sampled pages under lang_score)
        for dt in doc.query_selector_all("dt.sig-object").values():
            for a in dt.query_selector_all("a.headerlink").values():
                a.decompose()
            txt = " ".join((dt.text or "").split())
            if not txt:
                continue
            dt.text = ""
            pre = self.tree.create_element("pre")
            pre.append_child(self.tree.create_text_node(txt))
            dt.append_child(pre)

    def source_links(self) -> None:
        """A link to the entry's source (``a.srclink``: gi-docgen's "[src]" after every section heading, rustdoc's
        "source" beside each item, Node.js's "[src]"): page chrome, like Haddock's "Source" and Sphinx's
        "[source]" ("Declaration [src]" headed every libjson-glib-doc function page). It goes."""
        doc = self.tree.document
        if doc is None or "srclink" not in self.class_tokens:
            return
        for a in doc.query_selector_all("a.srclink").values():
            if a.parent is not None:
                a.decompose()

    def empty_separators(self) -> None:
        """An empty element whose class names a separator (``sep``, ``separator``) is one the stylesheet draws
        (gi-docgen's headings: ``<a>Json</a><span class="sep"></span><a>Reader</a><span class="sep"></span>
        get_int_value``, with ``span.sep::after {content: "▸"}`` and padding): without it the words around it ran
        together ("JsonReaderget_int_value"). It now reads as one space, what its padding draws. Only empty ones:
        a separator with text of its own keeps it."""
        doc = self.tree.document
        tokens = self.class_tokens
        if doc is None or not ("sep" in tokens or "separator" in tokens):
            return
        for el in doc.query_selector_all(".sep, .separator").values():
            if el.first_child is None and el.tag not in _VOID:
                el.text = " "

    def javadoc_captions(self) -> None:
        """javadoc 17 heads each summary table with a ``div.caption`` ("Methods in p that return X", "Deprecated
        Methods"), which the widget layer's "caption" would take. On javadoc's pages (``generated_by``: the page,
        head included, names its generator) it becomes an ``<h4>`` of its text, unless it restates the heading above it (``_restates``)
        or only repeats the page title's qualified name ("Classes in p used by p" under "Uses of Package p": with
        the name four times, lang3's concurrent/package-use.html fell under dup_9gram): a heading without links,
        which the main-content pass keeps (as a div of links, or a heading of links, it dropped the caption or the
        use table under it: lang3's compare/package-use.html); another site's captions are left to the widget layer.
        Their texts go to ``captions``: the rescues that weigh what the main-content pass kept leave them out (``_uncaptioned``)."""
        doc = self.tree.document
        if doc is None or "caption" not in self.class_tokens or not self.generated_by(_JAVADOC_MARKS):
            return
        captions = set()
        title = doc.query_selector("h1")
        # its words, tags read as spaces (javadoc's title breaks the line before the name: "Uses of Package<br>p")
        title_words = frozenset(re.sub(r"<[^>]*>", " ", title.html or "").split() if title is not None else ())
        for el in doc.query_selector_all("div.caption").values():
            text = " ".join((el.text or "").split())
            heading = el.prev_element
            if heading is not None and heading.tag in _HEADING_TAGS and _restates(text, heading.text or ""):
                continue  # "Constructors" under "Constructor Summary": left to the widget layer, as before
            names = [w for w in text.split() if _QUALIFIED_NAME_RE.fullmatch(w)]
            if len(names) > 1 and all(w in title_words for w in names):
                continue  # "Classes in p used by p" under "Uses of Package p": left to the widget layer, as before
                # ("Packages that use p", one name, stays: without it lang3's mutable/package-use.html read as no
                # language)
            h = self.tree.create_element("h4")
            h.inner_text = text
            el.replace_with(h)
            captions.add(text)
        self.captions = frozenset(captions)

    def code(self) -> None:
        doc = self.tree.document
        if doc is None:
            return
        self._drop_line_numbers(doc)
        pres, inline = self._walk()[:2]
        # on pages with many blocks, one query each tells whether any <pre> holds a <br> or gutter or a <code>,
        # or sits in a <figure> (most pages: none), instead of three subtree queries and an ancestor search per
        # block. Exact: until a block comes up, the rewrite only removes nodes (and adds none of these), so a
        # block holds or sits in what the query at the start finds for it
        many = len(pres) >= _PRE_QUERY_MIN
        pre_markup = not many or doc.query_selector(_PRE_MARKUP_SELECTOR) is not None
        in_figure = not many or doc.query_selector("figure pre") is not None
        pre_code = not many or doc.query_selector("pre code") is not None
        for pre in pres:
            _check_deadline(self.deadline)
            if not doc.contains(pre):
                continue  # a <pre> inside another one: its outer block (earlier in document order, rewritten
                # below or decomposed) took it out of the document
            lang = self._language(pre, pre_code)
            code = self._code_text(pre, pre_markup)
            if not code.strip():
                pre.decompose()
                continue
            fence = "```"
            while fence in code:
                fence += "`"
            self.n_code_blocks += 1
            tok = self._token(f"{fence}{lang}\n{code}\n{fence}", True)
            # keep a <pre> element so the extractor still sees a block, as long as its code (``_PH_PAD``)
            tok = self._padded(tok, len(code))
            pre.inner_text = tok
            # resiliparse's main-content extractor drops <figure> (Jekyll/GitHub Pages wrap code in
            # <figure class="highlight">): put the block in the figure's place
            fig = pre.closest("figure") if in_figure else None
            if fig is not None and fig.query_selector("img, video, picture, svg") is None:
                self._replace_with_pre(fig, tok)
        # in document order, an element comes before its descendants, and rewriting one (inner text or a
        # placeholder) detaches them: inline code inside a <pre> (rewritten above) or inside another inline
        # element is out of the document by the time it comes up, so no ancestor search is needed
        # one query tells whether any inline code holds a <br> (most pages: none), instead of one per element
        any_br = bool(inline) and doc.query_selector("code br, kbd br, samp br, tt br") is not None
        for c in inline:
            _check_deadline(self.deadline)
            if not doc.contains(c):
                continue
            has_br = any_br and c.query_selector("br") is not None
            txt = _drop_break_hints(self._code_text(c) if has_br else (c.text or ""))
            # two or more non-blank lines: a block (a text without a line break is one line)
            if "\n" in txt and sum(1 for ln in txt.split("\n") if ln.strip()) >= 2:
                lang = self._language(c)
                fence = "```"
                while fence in txt:
                    fence += "`"
                self.n_code_blocks += 1
                self._replace_with_text(c, self._padded(self._token(f"{fence}{lang}\n{txt.strip(chr(10))}\n{fence}", True),
                                                        len(txt)))
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
        tables = self._tables if self._tables is not None else doc.query_selector_all("table").values()
        for t in tables:
            _check_deadline(self.deadline)
            if t.parent is None or not doc.contains(t):
                continue
            # one query for the layout test and the test for foreign content (``_TABLE_LAYOUT_OR_FOREIGN``)
            hit = t.query_selector(_TABLE_LAYOUT_OR_FOREIGN)
            if hit is not None and t.query_selector(_TABLE_LAYOUT) is not None:
                continue  # layout table: let the extractor linearise it
            # no nested table (checked above), so every row and cell below belongs to this table
            rows = self._table_rows(t, hit is None)
            if rows is None:
                continue  # a cell holding a paragraph: a layout table
            width = max((len(r) for r in rows), default=0)
            if len(rows) < 2 or width < 2:
                continue
            if _link_grid(t, rows):
                continue  # a grid of links (a footer's "Subscribe | Advertise | Contact Us"): navigation
            if any(_PH_OPEN in c for r in rows for c in r):
                rows = [[self._inline_blocks(c) if _PH_OPEN in c else c for c in r] for r in rows]
            lines = []
            for i, r in enumerate(rows):
                r = r + [""] * (width - len(r))
                lines.append("| " + " | ".join(r) + " |")
                if i == 0:
                    lines.append("|" + "---|" * width)
            self.n_tables += 1
            md = "\n".join(lines)
            tok = self._token(md, True)
            # a <p> keeps the table a block for the extractor
            p = self.tree.create_element("p")
            p.append_child(self.tree.create_text_node(tok))
            if not self._replace(t, p):
                continue
            self.table_blocks.append((p, tok, len(md)))

    def _inline_blocks(self, cell: str) -> str:
        """A table cell's text with the blocks rewritten inside it (a multi-line ``<code>``: javadoc 11's long
        constructor signatures in its summary tables) on one line: a code block as inline code, math as it is.
        Their placeholders, padding included, came out as noncharacters (95 of junit4-doc's 541 pages)."""
        def one_line(m: re.Match) -> str:
            i = int(m.group(1))
            b = self.blocks[i] if i < len(self.blocks) else ""
            if b.startswith("```"):
                code = " ".join(b.strip("`").split("\n", 1)[-1].split())
                tick = "``" if "`" in code else "`"
                return f"{tick}{code}{tick}".replace("|", "\\|")
            return " ".join(b.split()).replace("|", "\\|")

        return _PH_RE.sub(one_line, cell.replace(_PH_PAD, ""))

    @staticmethod
    def _table_rows(t, flat: bool) -> list[list[str]] | None:
        """The non-empty rows of table ``t`` (no nested table) as lists of cell texts (whitespace folded, "|"
        escaped), or None when a cell holds over ``_TABLE_CELL_MAX`` characters. ``flat``: the cells of a row are
        the td/th that follow its tr in one document-order query of "tr, td, th" (what the HTML parser builds);
        otherwise one query of the tr's cells per row."""
        rows = []
        if flat:
            cells = None
            for el in t.query_selector_all("tr, td, th").values():
                if el.tag == "tr":
                    if cells:
                        rows.append(cells)
                    cells = []
                    continue
                raw = el.text or ""
                if _folds_over(raw, _TABLE_CELL_MAX):
                    return None  # (folded, not yet escaped: "\\|" only lengthens it)
                txt = " ".join(raw.split()).replace("|", "\\|")
                if len(txt) > _TABLE_CELL_MAX:
                    return None
                if cells is not None:
                    cells.append(txt)
            if cells:
                rows.append(cells)
            return [r for r in rows if any(r)]
        for tr in t.query_selector_all("tr").values():
            cells = []
            for cell in tr.query_selector_all("td, th").values():
                raw = cell.text or ""
                if _folds_over(raw, _TABLE_CELL_MAX):
                    return None
                txt = " ".join(raw.split()).replace("|", "\\|")
                if len(txt) > _TABLE_CELL_MAX:
                    return None
                cells.append(txt)
            if any(cells):
                rows.append(cells)
        return rows

    def unwrap_layout_lists(self) -> bool:
        """Turn the lists that lay out a documentation page into plain blocks: a ``<ul>``/``<ol>`` with an
        item that holds a code block, a data table or inline code, and javadoc's class hierarchies (nested ``<li
        class="circle">``: package-tree.html). javadoc 8 and groovydoc write the class and every member as
        ``<li class="blockList"><h4>signature</h4><pre>...``, javadoc 11's class-use pages each use's table as
        ``<li class="blockList"><section><h3>Uses of X in p</h3><table>``, javadoc 17's a summary grid of
        ``<code>`` signatures in ``ul.block-list``; teaser and link lists hold none of these. A table in such a
        list is weighed by its text from then on (``_PH_PAD``, as code blocks are): a bare placeholder under a
        heading of links read as a link list. Asked only when the main-content pass kept little prose; the
        caller keeps the new reading only when it has more prose, or as much and more text. Whether any list
        was turned."""
        doc = self.tree.document
        if doc is None:
            return False
        lists, tables, seen = [], [], set()
        pres, inline = self._walk()[:2]
        n_tables = len(self.table_blocks)
        # javadoc's class hierarchies (package-tree.html, overview-tree.html): nested lists of <li class="circle">
        tree = list(doc.query_selector_all("li.circle").values()) if "circle" in self.class_tokens else []
        for i, pre in enumerate([t[0] for t in self.table_blocks] + pres + inline + tree):
            if not doc.contains(pre):
                continue
            n = len(lists)
            el = pre
            while el is not None and el.tag not in ("body", "html", None):
                if i >= n_tables:  # (a table's ancestors are all walked: whether a list holds it)
                    if el in seen:
                        break  # its ancestors were walked for an earlier element
                    seen.add(el)
                if el.tag == "li":
                    lst = el.parent
                    if lst is not None and lst.tag in ("ul", "ol"):
                        lists.append(lst)
                el = el.parent
            if i < n_tables and len(lists) > n:
                tables.append(pre)
        turned = False
        for lst in lists:  # innermost first: an outer list then moves the inner one's blocks
            _check_deadline(self.deadline)
            if not doc.contains(lst):
                continue
            block = self.tree.create_element("div")
            for item in list(lst.child_nodes):
                if item.type == 1 and item.tag == "li":
                    div = self.tree.create_element("div")
                    div.append(*list(item.child_nodes))
                    block.append_child(div)
            lst.replace_with(block)
            turned = True
        if tables:
            padded = {p: (tok, n) for p, tok, n in self.table_blocks}
            for p in tables:
                p.inner_text = self._padded(*padded[p])
        return turned

    def page_title_kept(self, el) -> bool:
        """Doxygen's page header (``<div class="header">``: the summary's section links, then ``div.headertitle``
        with the page's title, "Color.h File Reference", "wxFontList Member List"), which the widget layer's
        "header" would take whole: on Doxygen's pages (``_DOXYGEN_MARKS``) the title stays, the rest of the block
        goes, and its class labels ("abstract", "final": ``span.mlabels``, set apart by CSS) stay words of their
        own; True then. False (nothing changed: the block goes as before) where the block holds no title, on
        another site's pages, and where the page's contents (``div.contents``) already name what the title names
        ("Eigen::Map< PlainObjectType, MapOptions, StrideType >" of "... Member List", "class
        Eigen::TensorDevice< ExpressionType, DeviceType >" under "... Class Template Reference"): the title then
        only repeats a long name once more, which tipped Eigen's small template pages over the duplicated n-gram
        rules (dup_9gram 0 -> 0.141 on Map-members.html) or under line_punct (a line without a stop)."""
        title = el.query_selector("div.headertitle")
        if title is None or not self.generated_by(_DOXYGEN_MARKS):
            return False
        text = title.text or ""
        # the name and its kind, without the groups' links after them nor the class labels
        for extra in title.query_selector_all("div.ingroups, span.mlabels").values():
            text = text.replace(extra.text or "", " ")
        name = _DOXYGEN_TITLE_KIND_RE.sub("", _norm_ws(text))
        contents = self.tree.document.query_selector("div.contents")
        if not name or contents is not None and _names(name, _norm_ws(contents.text or "")):
            return False
        for child in list(el.child_nodes):
            if child.type == 1 and child != title and not child.contains(title):
                child.decompose()
        for labels in title.query_selector_all("span.mlabels").values():
            if labels.parent is not None:
                labels.parent.insert_before(self.tree.create_text_node(" "), labels)
        return True

    def _has_code_elements(self) -> bool:
        """The page walk found a ``<pre>`` or ``<code>`` element (before the widget layer removed any): what a
        doc comment spared by ``_spare_doc_comments`` holds. Pages without one (train+dev gold: 219 of the 222
        with a comment-named class) skip its query of the page."""
        pres, inline = self._walk()[:2]
        return bool(pres) or any(e.tag == "code" for e in inline)

    def _spare_doc_comments(self, doc) -> None:
        """API documentation calls its member descriptions comments (Scaladoc's ``<div class="comment
        cmt">``, "doc-comment"), and both resiliparse's comment removal and the widget layer drop blocks so
        named. A block (not an inline ``<span>``: Wikipedia's hidden "citation-comment" errors) named so that
        holds code and none of a reader comment's marks (author, avatar, date, reply, form) loses the name."""
        # (no block holding code, none is spared: asked first, it spares the token scan on most pages)
        if ("omment" not in self.attr_text or not self._has_code_elements()
                or not any(_COMMENT_TOKEN_RE.search(t) for t in self.class_tokens if "omment" in t)):
            return
        # only the tags asked for (a hyperlinked source listing has thousands of "hs-comment" spans), in document order
        for el in doc.query_selector_all(_DOC_COMMENT_QUERY).values():
            cls = el.getattr("class") or ""
            kept = [t for t in cls.split() if not _COMMENT_TOKEN_RE.search(t)]
            if (len(kept) == len(cls.split()) or el.tag not in _DOC_COMMENT_TAGS or not doc.contains(el)
                    or el.query_selector("code, pre") is None
                    or el.query_selector(_READER_COMMENT_MARKS) is not None):
                continue
            el.setattr("class", " ".join(kept))

    def boilerplate(self) -> None:
        doc = self.tree.document
        if doc is None:
            return
        # sign-in and registration forms (a password field) are never article content
        for inp in self._walk()[5]:
            form = inp.closest("form")
            if form is not None and doc.contains(form) and form.query_selector("pre, math, h1") is None:
                form.decompose()
        for cap in self._walk()[4]:
            # figure captions (photo credits, gallery text) are not article text; those with code or math stay
            if doc.contains(cap) and cap.query_selector("pre, code, math") is None:
                cap.decompose()
        self._spare_doc_comments(doc)
        # regexes over the source find the class tokens and ids that name a widget; lexbor selects them
        sel = _boilerplate_selector(self.class_tokens, self.attr_values[1], self.attr_text)
        if not sel:
            return
        scope = self._article_body() if _SCOPED_BOILERPLATE else None
        candidates = (scope or doc).query_selector_all(sel).values()
        # the ancestor check below (syntax-highlighting spans such as "token comment") only on pages that
        # have code or math at all
        pres, inline = self._walk()[:2]
        may_be_inside = bool(pres or inline) or not self.html or "<math" in self.math_markup()
        in_code = _InCode(sel)
        words_of: dict[str, str] = {}  # class + " " + id -> _widget_word (a page repeats them: about 2 candidates each)
        contains, deadline, known = doc.contains, self.deadline, in_code.known
        for el in candidates:
            if not contains(el):
                continue  # inside a widget removed already
            if deadline is not None:
                _check_deadline(deadline)
            if may_be_inside and el in known:
                continue  # (what the ancestor check below finds: the checks before it only skip)
            # (resiliparse gives tag names lower-cased, SVG's camelCase ones too: no ``lower`` call per candidate)
            tag = el.tag
            if tag in _WIDGET_SPARED_TAGS:
                continue  # an <h1> named after its place ("article-header", "header-title") is the headline
            key = (el.getattr("class") or "") + " " + (el.getattr("id") or "")
            word = words_of.get(key)
            if word is None:
                word = words_of[key] = _widget_word(key)
            if not word:
                continue
            if may_be_inside and in_code(el):
                continue  # syntax-highlighting spans such as "token comment"
            # a block holding a lot of text, or running prose, is more likely a wrapper around the article
            # (e.g. "js-pagination", id="read-more") than a widget (text first: it spares the subtree query)
            txt = el.text or ""
            # its text, not the source's indentation: a player's pretty-printed control bar held 10,022 characters
            # of which 1,017 were text (the same block minified would have gone)
            if len(txt) > _MAX_BOILERPLATE_BLOCK_CHARS and (_folds_over(txt, _MAX_BOILERPLATE_BLOCK_CHARS)
                                                            or len(" ".join(txt.split())) > _MAX_BOILERPLATE_BLOCK_CHARS):
                continue
            if (len(txt) >= 600 and word not in _PROSE_WIDGET_WORDS
                    and _has_sentence_breaks(txt, _MIN_ARTICLE_SENTENCES)):
                continue
            # an inline element in running prose stays: asked before the subtree query below, which it spares (heavy
            # pages: ~40 of the ~70 candidates a page that reach the query are such links); a "header" one after
            # ``page_title_kept``, as that check rewrites the block it keeps
            inline = tag in _PROSE_INLINE_TAGS
            if inline and word != "header" and _inline_in_prose(el, txt):
                continue
            if txt.strip() and el.query_selector("pre, math, article, main, h1") is not None:
                continue  # a text-less block holds no code, formula or headline worth keeping
            if 15 <= len(txt) <= 300 and word == "header" and _is_section_heading(el, txt):
                continue
            if word == "header" and self.page_title_kept(el):
                continue
            if inline and word == "header" and _inline_in_prose(el, txt):
                continue
            el.decompose()


# elements the widget layer never removes, whatever their class
_WIDGET_SPARED_TAGS = frozenset(("html", "body", "main", "article", "pre", "code", "math", "table", "tr", "td", "h1"))
# inline elements that sit inside a sentence: a widget word in their class ("popup" glossary links, "tooltip"
# notes, "author" spans) names what they do, not a widget block; removing one cuts words out of the sentence
_PROSE_INLINE_TAGS = frozenset(("a", "em", "i", "b", "strong", "span", "abbr", "cite", "q", "u", "mark", "font"))
_INLINE_PROSE_MIN = 80  # characters of the parent's text around the element


def _inline_in_prose(el, txt: str) -> bool:
    """``el`` (an inline element) is part of running text: its parent holds ``_INLINE_PROSE_MIN`` more
    characters of text than it, at least twice its own, with a sentence end."""
    if not txt or txt.isspace() or _has_sentence_breaks(txt):
        return False  # empty (an icon), or sentences of its own ("Unlimited Digital Access. $1 for 4 weeks.")
    parent = el.parent
    if parent is None or (parent.tag or "").lower() not in _PROSE_BLOCK_TAGS:
        return False
    ptxt = parent.text or ""
    return len(ptxt) - len(txt) >= max(_INLINE_PROSE_MIN, 2 * len(txt)) and _has_sentence_breaks(ptxt)


_PROSE_BLOCK_TAGS = frozenset(("p", "li", "dd", "em", "i", "b", "strong", "font"))


_BREAK_HINT = "\u200b("


def _drop_break_hints(code: str) -> str:
    """Inline code without the zero-width space that javadoc 11 writes between a method's name and its parameters
    as a line-break hint (``create&#8203;(Ordering.Context context)`` in its summary and class-use tables): no
    character of the code, and it hid the call from ``web__identifier_share``. ``<pre>`` blocks keep it (verbatim:
    javadoc's member signatures)."""
    return code.replace(_BREAK_HINT, "(") if _BREAK_HINT in code else code


_LINK_GRID_CELL_MAX = 40


def _link_grid(t, rows: list[list[str]]) -> bool:
    """Table ``t`` (its cell texts ``rows``) is a grid of short links: every non-empty cell at most
    ``_LINK_GRID_CELL_MAX`` characters and the text of its links 90% of the cells' text or more."""
    cells = [c for r in rows for c in r if c]
    if not cells or any(len(c) > _LINK_GRID_CELL_MAX for c in cells):
        return False
    linked = sum(len(" ".join((a.text or "").split())) for a in t.query_selector_all("a[href]").values())
    return linked >= 0.9 * sum(len(c) for c in cells)


# candidates found inside one pre/code/math element by ``closest`` before the rest of them are asked for by one
# query of its subtree (a query costs about as much as a few dozen ``closest`` calls on a long listing: pandoc's
# sources hold 10-33 comment spans a page, gi-gio's 229-1,484)
_IN_CODE_QUERY_AT = 32


class _InCode:
    """``el.closest("pre, code, math") is not None`` for the widget candidates of one ``boilerplate`` pass (``sel``
    their selector). A hyperlinked source listing has thousands inside one ``<pre>`` (Haddock's ``<span
    class="hs-comment">``), each ``closest`` a selector parse and an ancestor walk: from the ``_IN_CODE_QUERY_AT``-th
    candidate found inside one element, every candidate in that element is known by one query (``known``). Removing a subtree
    changes no ancestor of an element left, so ``known`` stays right while ``boilerplate`` decomposes widgets."""

    __slots__ = ("sel", "known", "hits")

    def __init__(self, sel: str):
        self.sel = sel
        self.known: set = set()
        self.hits: dict = {}  # pre/code/math element -> candidates found inside it by ``closest``

    def __call__(self, el) -> bool:
        if el in self.known:
            return True
        box = el.closest("pre, code, math")
        if box is None:
            return False
        n = self.hits[box] = self.hits.get(box, 0) + 1
        if n == _IN_CODE_QUERY_AT:
            self.known.update(box.query_selector_all(self.sel).values())
        return True


def _names(name: str, text: str) -> bool:
    """``text`` holds ``name`` as a whole name: not inside a longer word ("A" in "Accessor"); a name that ends in a
    bracket needs no boundary there ("Foo< T >" in "class Foo< T >Pseudo expression ...", as Doxygen's text runs
    on)."""
    pattern = re.escape(name)
    if name[0].isalnum() or name[0] == "_":
        pattern = r"(?<!\w)" + pattern
    if name[-1].isalnum() or name[-1] == "_":
        pattern += r"(?!\w)"
    return re.search(pattern, text) is not None


def _is_section_heading(el, txt: str) -> bool:
    """A block that is one link-free heading (``<div class="content header"><h2>Wondering what's so special
    about it?</h2></div>``): a section heading of the story, not a page header or widget title. Asked only
    of blocks named "header" (the one widget word seen on story headings in train/dev)."""
    h = el if (el.tag or "").lower() in ("h2", "h3", "h4") else el.query_selector("h2, h3, h4")
    return (h is not None and el.query_selector("a, ul, ol, nav, form, img, button") is None
            and _norm_ws(h.text or "") == _norm_ws(txt))


# whole lines that are page chrome in any context (issue 17's snippets among them); only exact lines go
_CHROME_LINES = frozenset((
    "skip to main content", "skip to content", "skip to navigation", "skip navigation", "jump to navigation",
    "jump to search", "back to top", "to top", "top of page", "scroll to top", "print recipe", "print this page",
    "share this page", "share this article", "share this", "rezept drucken", "diese seite teilen",
    "das könnte sie auch interessieren", "zum seitenanfang", "nach oben", "seite drucken", "drucken",
    "retour en haut", "haut de page", "volver arriba", "torna su", "voltar ao topo", "cookie settings",
    "accept cookies", "accept all cookies", "you may also like", "recommended for you", "advertisement",
    "anzeige", "publicité", "publicidad", "pubblicità", "advertising", "advertisement:",
    "advertisement - continue reading below", "buy photo", "close", "caption", "autoplay", "replay", "next story",
    "accessibility links", "must watch", "transcript", "related stories", "related tags", "related articles",
    "related", "latest news posts", "contact author", "menu", "subscribe", "comments", "share", "tweet", "email",
    "print", "view comments", "show comments", "leave a comment", "load more", "read more", "see more",
    # more UI phrases seen as whole lines on train+dev pages (none is a whole line of any gold text there)
    "learn more", "about the author", "share this story", "posted!", "show thumbnails", "show captions",
    "hide captions", "jump to navigation jump to search", "from wikipedia, the free encyclopedia", "view all posts",
    "report a typo", "loading comments...", "loading...", "like this:", "font size:", "enlarge this image",
    "toggle caption", "hide caption", "skip advert", "continue reading", "listen to this article", "view more",
    "read full article", "read the full article", "view more news posts", "show more", "load more comments",
    "via giphy", "please wait...", "top", "found this helpful",
    # WordPress (Jetpack) like and share widgets, whose template placeholder is left unfilled without scripts
    "%d bloggers like this:", "%d blogger menyukai ini:", "%d bloggers like this", "share this:", "rate this:"))
# a metadata template whose fields the page's scripts fill in, left empty: "Posted by at", "Labels: ,", "Posted: |",
# "Tags:" (Blogger and WordPress themes): only the labels and their punctuation, two words or a colon at least (a
# lone "By" above a name line is a byline split in two, which Readability's golds keep)
_EMPTY_FIELDS_RE = re.compile(r"(?:(?:posted|published|updated|written|by|at|on|in|labels?|tags?|tagged|filed under|"
                              r"categor(?:y|ies)|author)[\s:,|/•·-]*)+", re.I)
# a prefilter: the last character of a match, its punctuation or the last letter of a label word ("tag" included)
_EMPTY_FIELD_ENDS = frozenset(":,|/•·- tdynlsrg")
# gallery counters and number-only lines ("3/31", "2 of 5", "’17", "1"): no letters, not content
_COUNTER_LINE_RE = re.compile(r"^[\W\d_]*\d[\W\d_]*$|^\W*\d+\s+(?:of|von|de|sur|di)\s+\d+\W*$")
# link teasers and credits on a line of their own: "Also read: ...", "MORE: ...", "Related Story: ...",
# "Photo: ...", "(Image: ...)", "Copyright © ...", "2-min read"
_META_LINE_RE = re.compile(
    r"\(?(?:also read|read also|read more|read next|related|related (?:story|stories|article|articles|link|links|"
    r"coverage)|tags|tagged|tagged with|topics|filed under|categories|hidden categories|main article|"
    r"see also|more|more on this|recommended|don['’]?t miss|up next|watch next|explore further|related roundup|"
    r"more information|further reading|recommended reading|trending|lesen sie auch|mehr zum thema|lire aussi|à lire aussi|leia também|"
    r"photo|photos|image|images|picture|pictures|photo credit|image credit|image source|featured image|"
    r"lead image|top image|header image|credit|credits|foto|bild)"
    r"\s*:|©|(?:copyright|\(c\))\s*(?:[©@]\s*)?(?:\d{4}|.{0,100}(?:all rights reserved|©))|"
    r".{0,40}\b\d{1,2}[- ]min(?:ute)?s? read\W*$", re.I)
# a teaser link under an upper-case label, with no sentence end: "READ: Winter Olympics fast facts", "SEE MORE:
# Two 'Bridgegate' Officials Are Heading To Prison", "DISTANT LIFE: Harvard scientists theorize ...", "NEWS
# SOURCES:Express.co.uk" (train+dev: 14 such lines outside the gold text, 1 inside)
_LABEL_TEASER_RE = re.compile(r"(?:[A-Z][A-Z'’]+ ?){1,3}:\s*\S+\s+\S[^.!?]*|(?:[A-Z][A-Z'’]+ ?){1,3}:\S+")
_LABEL_TEASER_MAX = 150
# "Image 1 of 3", "Photo 2/10", "Slide 3 von 12": gallery navigation
_MEDIA_COUNTER_RE = re.compile(r"(?:image|photo|picture|slide|bild|foto|imagen|immagine)s?\s*\d+\s*"
                               r"(?:of/?|von|de|sur|di|/)"
                               r"\s*\d+$", re.I)
_CHROME_STRIP = " \t•·|>›»«‹^↑▲-–—*#"
# a line that is only a date (and time), optionally "Published"/"Updated ...": page metadata, not text
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE_LINE_RE = re.compile(
    r"(?:(?:published|updated|posted|first posted|first published|last updated|last modified|modified|date)"
    r"\s*(?:on|:)?\s*)?"
    r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
    r"(?:\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+\d{4}|" + _MONTH + r"\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}[./]\d{1,2}[./]\d{2,4})"
    r"(?:\s*(?:,?\s*at|[,|–—-])?\s*\d{1,2}[:.]\d{2}(?:[:.]\d{2})?\s*(?:[ap]\.?m\.?)?\s*"
    r"(?:[A-Z]{2,4}|GMT[+-]?\d*|UTC[+-]?\d*)?)?"
    r"\W*", re.I)


# a byline on a line of its own, optionally dated: "By SETH BORENSTEIN", "By Eric Leister, AccuWeather
# meteorologist", "by Jason Ditz, March 21, 2017", "March 15, 2017 by Kristen Gelineau" (train+dev: 9 such lines
# outside the gold text; inside it only on one readability page, lwn-1's "By Jonathan Corbet")
_BYLINE_RE = re.compile(r"(?:[•·*-]\s*)?(?:(?i:" + _MONTH + r")[^.!?]{0,20}\d{4},?\s+)?[Bb][Yy]:?\s+[A-Z@][^.!?]{1,60}")
_BYLINE_MAX = 80
# source and widget credits on a line of their own: "via GSM Arena", "(via Gizmodo)", "Conversation powered by
# Livefyre", "blog comments powered by", "Featured image from Shutterstock.", "Filed in . Read more about E3"
# (train+dev: 7 such lines outside the gold text, none inside; "... thermostat powered by Cortana" is longer)
_CREDIT_LINE_RE = re.compile(r"(?i:[(\[]?via\s+(?:[^.!?]|\.(?=\w)){2,40}[)\]]?|[^.!?]{0,25}\bpowered by(?:\s+[^\s.!?]+){0,2}|"
                             r"featured image (?:from|by|via|courtesy of)\s[^!?]{2,60}|filed in\s*[.:|].{0,100})")


def _may_be_credit_line(key: str) -> bool:
    """False when ``_CREDIT_LINE_RE`` cannot match ``key``: none of the literals of its branches in it ("via",
    "Via", "owered by", "eatured image", "iled in"), looked for first (half the CPU). Five ``in`` tests cost
    about a third of one search of their alternation, which tries each literal at every position of the line."""
    return ("via" in key or "Via" in key or "owered by" in key or "eatured image" in key
            or "iled in" in key)


# a time alone ("9:28 AM ET"): a stamp's remains
_TIME_LINE_RE = re.compile(r"\d{1,2}:\d{2}\s*[APap]\.?[Mm]\.?(?:\s*[A-Z]{1,4})?")


# a publication stamp ("Published at 9:21 PM PDT on Mar 21, 2017", "Updated Date: Oct 24, 2017 02:54 pm",
# "Posted: 8 hours, 54 mins ago"), alone or in a "|"-separated metadata line with bylines and section labels
# ("By: Derek Strickland | Gaming News | Posted: 1 day, 18 hours ago")
_STAMP_RE = re.compile(
    r"(?:first |last )?(?:published|updated|posted)(?:\s+date)?(?:\s*:|\s+on|\s+at)?\s*"
    r"(?=\d|(?:mon|tue|wed|thu|fri|sat|sun)|" + _MONTH + r"\s*\d)[^!?]{0,30}?"
    r"(?:\d{1,2}:\d{2}|\b" + _MONTH + r"\s+\d|\d{4}|\bago\b)[^!?]{0,30}", re.I)
_STAMP_BYLINE_RE = re.compile(r"by:?\s+[^.!?]{2,40}", re.I)
_STAMP_LINE_MAX = 160
_STAMP_SPLIT_RE = re.compile(r"\||\s[•·–—-]\s")  # "By X | Section", "By X - Mar 21,2017 - Last updated at ..."


def _is_stamp_line(line: str) -> bool:
    """A metadata line: parts separated by "|" or a spaced dash or bullet, each a publication stamp (``_STAMP_RE``), a byline, a label
    of at most 3 words or empty, at least one of them a stamp."""
    stamp = False
    for part in _STAMP_SPLIT_RE.split(line.strip(_CHROME_STRIP)):
        part = part.strip()
        if not part:
            continue
        if _STAMP_RE.fullmatch(part) and (part[-1] != "." or part[-4:].lower() in ("a.m.", "p.m.")):
            stamp = True  # a sentence that starts "Published on Monday, ..." ends with a full stop
        elif not (_STAMP_BYLINE_RE.fullmatch(part) or part.count(" ") < 3 and part[-1:] not in ".!?"):
            return False
    return stamp


# a byline with a date, as a line of its own: "// By Arun Sai Krishnan • Nov 11, 2020", "by Lighthouse IP ／ 2016.12.01",
# "NEWS // Overwatch // By James Chen // 20h ago", "On 6/13/2018 by @lazharichir" (parts split by "|", "//", "／",
# "•"; each a byline, a date or a label of at most three words; at least one byline and one date)
_DATED_BYLINE_MAX = 120
_DATED_BYLINE_SPLIT_RE = re.compile(r"\||//|／|\s[•·–—-]\s|•")
_DATE_PART_RE = re.compile(
    r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+\d{4}|"
    + _MONTH + r"\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}|\d{4}[./-]\d{1,2}[./-]\d{1,2}|\d{1,2}[./]\d{1,2}[./]\d{2,4})"
    r"(?:,?\s*(?:at\s+)?\d{1,2}[:.]\d{2}\s*(?:[ap]\.?m\.?)?(?:\s*[A-Z]{2,4})?)?|"
    r"\d{1,2}\s*(?:h|hrs?|hours?|m|mins?|minutes?|d|days?)\s+ago", re.I)
_ANY_DIGIT_RE = re.compile(r"\d")
_ON_DATE_BY_RE = re.compile(r"(?:posted |published |written )?on\s+(?P<d>.{6,30}?)\s+by\s+\S.{0,40}", re.I)


def _is_dated_byline(line: str) -> bool:
    """A metadata line of a byline and a date (``_DATE_PART_RE``), parts split by ``_DATED_BYLINE_SPLIT_RE``."""
    if not _ANY_DIGIT_RE.search(line):
        return False  # no date (most lines with "by" are sentences without a digit)
    byline = date = False
    for part in _DATED_BYLINE_SPLIT_RE.split(line.strip(_CHROME_STRIP)):
        part = part.strip(" \t/")
        if not part:
            continue
        if part[:3].lower() == "by " and _STAMP_BYLINE_RE.fullmatch(part):
            byline = True
        elif _DATE_PART_RE.fullmatch(part):
            date = True
        elif part.count(" ") < 3 and part[-1:] not in ".!?":
            continue  # a label
        elif (m := _ON_DATE_BY_RE.fullmatch(part)) and _DATE_PART_RE.fullmatch(m.group("d")):
            byline = date = True
        else:
            return False
    return byline and date


# a photo caption outside any caption markup, told by the credit that closes it: "... in Iwaki, Fukushima
# prefecture Monday, Oct. 23, 2017. (Kyodo News via AP)", "[Featured Image by Justin Sullivan/Getty Images]",
# "Climbers are packing big rubbish bags ... Photo: Getty", "... | Foto: Reuters". A parenthesis that only
# credits a source in the text ("told Reuters.", "(via NeoGAF).") or a wire story's "(Reporting by ...;
# Editing by ...)" is no credit. Train+dev (all three corpora): 9 pages better on 8 sites, none worse.
_CREDIT_WORDS = (r"(?:AP Photo|Getty|Shutterstock|Reuters|AFP|EPA|iStock|Alamy|via AP|"
                 r"(?:Photo|photo|Image|image|Picture|picture|Foto|foto|Bild)s?(?:\s*(?:by|credit|courtesy)\b|\s*[:/])|"
                 r"[Cc]redits?\s*:|[Cc]ourtesy(?: of)?\s+[A-Z])")
_CREDIT_PAREN_RE = re.compile(r"[(\[](?![^()\[\]]*(?:[Rr]eporting|[Ee]diting|[Ww]riting|[Aa]dditional))"
                              r"[^()\[\]]{0,80}?" + _CREDIT_WORDS + r"[^()\[\]]{0,80}[)\]]\W*")
_CREDIT_LABEL_RE = re.compile(r"(?:[|•]\s*|\.\s+)(?:Photo|Image|Picture|Foto|Bild|Credit|Photograph)s?"
                              r"(?: credit)?:\s*[^.!?:|]{2,60}\W*$")
_CREDIT_LINE_MAX = 400


def _is_credited_caption(key: str) -> bool:
    """``key`` (a stripped line of at most ``_CREDIT_LINE_MAX`` characters) ends with a photo credit."""
    if _PH_OPEN in key:
        return False
    end = key.rstrip(" .")
    if end[-1:] in ")]":
        i = max(end.rfind("("), end.rfind("["))
        return i >= 0 and _CREDIT_PAREN_RE.fullmatch(end, i) is not None
    return ":" in key[-80:] and _CREDIT_LABEL_RE.search(key, max(0, len(key) - 80)) is not None


# the characters that an ASCII letter of a case-insensitive regex matches and ``str.lower`` does not make that
# letter (dotted and dotless i, long s; the Kelvin sign lower-cases to "k"): on text without them, a literal
# found by the regex is found in the text lower-cased
_FOLD_ONLY_CHARS = ("\u0130", "\u0131", "\u017f")


def _lower_folds_like_re(s: str) -> bool:
    # (``_FOLD_ONLY_CHARS`` spelled out: three ``in`` tests cost a third of ``any`` over a generator)
    return s.isascii() or ("\u0130" not in s and "\u0131" not in s and "\u017f" not in s)


def _may_be_meta_line(key: str) -> bool:
    """False when ``_META_LINE_RE`` cannot match ``key``: every branch needs ":", "©", "copyright", "(c)" or
    "read" ("5 min read"), looked for in ``key`` lower-cased (``_lower_folds_like_re``); spares a regex that
    tries a 40-character look-ahead at every line."""
    if ":" in key or "\u00a9" in key or not _lower_folds_like_re(key):
        return True
    low = key.lower()
    return "read" in low or "copyright" in low or "(c)" in low


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

    has_ph = _PH_OPEN in text
    if has_ph:
        text = _PH_RE.sub(sub_block, text)
    # drop repeated short lines (image captions, teaser copies; not on template pages that repeat many
    # distinct lines, ``_TEMPLATE_MIN_REPEATED``); code is in placeholders
    seen: set[str] = set()
    repeats: list[int] = []  # positions in ``kept`` of repeated lines
    repeated: set[str] = set()
    kept = []
    for line in text.split("\n"):
        key = line.strip()
        n = len(key)
        if not n:  # blank lines (about 40% of them) need none of the checks below
            # a line of white space alone is blank, NBSP included: gtk-doc's empty annotation cell ("&nbsp;")
            # of a one-row parameter table came out as a paragraph "\t\t\xa0" per function, which the
            # duplicate-paragraph signals counted as one paragraph repeated
            if not kept or kept[-1]:  # one blank line of a run: what ``_BLANK_RUN_RE`` would leave of it
                kept.append("")
            continue
        if 30 <= n <= _CREDIT_LINE_MAX and (key[-1] in ")]" or key[-1] == "." and key[-2] in ")]"
                                             or key.find(":", n - 80) >= 0) and _is_credited_caption(key):
            continue
        if n <= 200 and _PH_OPEN not in key:
            if n <= 40 and (key.strip(_CHROME_STRIP).lower() in _CHROME_LINES
                            or not key[:1].isalpha() and _COUNTER_LINE_RE.match(key)
                            or key[-1:].isdigit() and _MEDIA_COUNTER_RE.match(key)
                            or key[-1:].lower() in _EMPTY_FIELD_ENDS and _EMPTY_FIELDS_RE.fullmatch(key)
                            and (" " in key or ":" in key)):
                continue
            if (8 <= n <= 80 and _DATE_LINE_RE.fullmatch(key.lstrip(_CHROME_STRIP))
                    or _may_be_meta_line(key) and _META_LINE_RE.match(key) or n <= 16 and _TIME_LINE_RE.fullmatch(key)):
                continue
            if n <= 120 and _may_be_credit_line(key) and _CREDIT_LINE_RE.fullmatch(key):
                continue
            if n <= _BYLINE_MAX and ("by" in key or "By" in key or "BY" in key) and _BYLINE_RE.fullmatch(key):
                continue
            if (n <= _LABEL_TEASER_MAX and key[1:2].isupper() and key.find(":", 2, 40) > 0
                    and key[-1] not in ".!?" and _LABEL_TEASER_RE.fullmatch(key) and _norm_ws(key) != rw.title()):
                continue
            if n <= _STAMP_LINE_MAX and ("ublished" in key or "pdated" in key or "osted" in key) and _is_stamp_line(key):
                continue
            if n <= _DATED_BYLINE_MAX and ("by" in key or "By" in key) and _is_dated_byline(key):
                continue
            if n >= 20:
                if key in seen:
                    repeats.append(len(kept))
                    repeated.add(key)
                seen.add(key)
        kept.append(line.rstrip(" \t"))  # trailing blanks go (what a [ \t]+\n pass would do)
    if repeats:
        if len(repeated) >= _TEMPLATE_MIN_REPEATED and not rw.n_code_blocks:
            # a template page keeps its repeats, except those with inline code: reference pages repeat
            # "Default: `[]` (Empty list)" per entry, which the duplication rules downstream count. Pages
            # with code blocks are reference documentation, whose per-entry repeats ("Added in: v10.0.0",
            # "History") are chrome to the duplication signals, so they never count as a template
            repeats = [i for i in repeats if "`" in kept[i]]
        drop = set(repeats)
        kept = [ln for i, ln in enumerate(kept) if i not in drop]
    text = "\n".join(kept)
    if has_ph:
        text = _PH_INDENT_RE.sub("\n", text)
    if repeats:  # (the loop keeps one blank line of a run: this scan is needed only when lines went since)
        text = _BLANK_RUN_RE.sub("\n\n", text)
    if has_ph:
        text = _PH_RE.sub(sub, text)
    return text.strip()


# a page without code blocks whose text repeats this many distinct lines follows a template (a meal plan's "Portion Fix
# Containers: 1 Green, 1 Red", a timetable, recipe cards): its repeats are content, kept. Boilerplate repeats a
# few lines (a headline, "World news in pictures"): at most 4 distinct ones on any train/dev page.
_TEMPLATE_MIN_REPEATED = 8
_PH_INDENT_RE = re.compile(r"\n[ \t]*(?=" + _PH_OPEN + ")")
# (``\n\n\n+``, not ``\n{3,}``: a literal prefix lets the regex engine jump between newline runs instead of trying
# the repeat at every character: 27 -> 2.3 us on a 5,000-character page text)
_BLANK_RUN_RE = re.compile(r"\n\n\n+")


def _has_placeholder(line: str) -> bool:
    return _PH_OPEN in line


def _to_str(html: str | bytes) -> str:
    if isinstance(html, bytes):
        from assay.stages.web.warc import decode_html_bytes

        try:
            return decode_html_bytes(html)[0]
        except UnicodeDecodeError:
            return html.decode("utf-8", errors="replace")
    return html


# what ``_body_start`` looks for ("<body", "<script", "<!--") and "<style": each starts with "<" and holds no other
# "<", so a scan meets every occurrence of each, in order
_BODY_OR_HEAD_OPENER_RE = re.compile("<(?:body|s(?:cript|tyle)|!--)")


def _from_body(html: str) -> str:
    """The page from its ``<body`` tag on (``_body_start``)."""
    return html[_body_start(html):]


def _body_start(html: str) -> int:
    """Where the page's ``<body`` tag starts: the head (scripts, styles, metadata: half the bytes of a typical
    news page) holds nothing the extraction reads, and every later scan and the parse cost per byte.
    0 (the whole page) when there is no lower-case ``<body`` or when the match could sit inside a head script
    or comment (``document.write("<body>")``): the last ``<script`` (``<!--``) before it has no ``</script``
    (``-->``) between them. One forward scan up to the first ``<body`` notes the last script and comment openers
    before it (a search for ``<body`` and a backward search of the head for each cost twice as much); the text
    of a script or style, most of a head's characters, it reads from one "<" to the next (``_raw_text_end``)."""
    script = comment = -1
    closed = -1  # the end tag of the last script read to it
    search, find, starts = _BODY_OR_HEAD_OPENER_RE.search, html.find, html.startswith
    m = search(html)
    while m is not None:
        i = m.start()
        c = html[i + 1]
        if c == "b":
            break
        if c == "!":
            comment = i
            m = search(html, i + 4)
            continue
        closer = "/script" if html[i + 2] == "c" else "/style"
        if closer == "/script":
            script = i
        # the "<"s of its text, each read as the scan reads it, to the end tag (after _RAW_TEXT_LT_MAX of them, the
        # scan goes on: markup after a script left open)
        i = find("<", i + 1)
        for _ in range(_RAW_TEXT_LT_MAX):
            if i == -1 or starts(closer, i + 1) or starts("body", i + 1):
                break
            if starts("script", i + 1):
                script = i
            elif starts("!--", i + 1):
                comment = i
            i = find("<", i + 1)
        if i == -1:
            return 0
        if starts("body", i + 1):
            break
        if closer == "/script" and starts(closer, i + 1):
            closed = i
        m = search(html, i)  # (from its end tag, or from the first "<" not read)
    else:
        return 0
    if i <= 0 or html[i + 5:i + 6] not in (">", " ", "\t", "\n", "\r", "/"):
        return 0
    # (a script read to its end tag after the last "<script": that end tag is between them)
    if script != -1 and closed < script and find("</script", script, i) == -1:
        return 0
    if comment != -1 and find("-->", comment, i) == -1:
        return 0
    return i


# an opener of the elements ``_drop_scripts`` drops or empties, with its tag name (group 1) ended as the
# tokenizer ends it, and the rest of its start tag: one match gives the name and where the tag ends (a tag
# without its ">" runs to the page's end)
_RAW_OPEN_RE = re.compile(r"<(s(?:cript|tyle|vg|elect))(?=[> \t\n\r/])[^>]*>?")
_RAW_CLOSER = {name: "</" + name for name in ("script", "style", "svg", "select")}
_RAW_CLOSE_RE = {name: re.compile("</" + name) for name in ("script", "style", "svg", "select")}
_RAW_CLOSE_I_RE = {name: re.compile("</" + name, re.I) for name in ("script", "style", "svg", "select")}
# what an inline <svg> or a <select> leaves in the page: an empty element of the same name (the parse, every
# DOM query and the text passes skip their content anyway; an empty <svg> still marks a figure with a picture)
_RAW_KEEP = {"script": "", "style": "", "svg": "<svg></svg>", "select": "<select></select>"}


# XHTML's self-closing anchor (``<a name="x"/>``: gtk-doc's libxml2 reference) is a start tag to an HTML
# parser: the anchor stays open and the tree builder reopens it in every block that follows, so the rest of
# the page reads as link text and the main-content pass drops it (libxml2's API pages lost all their
# details). In a document that starts with an XML declaration it is closed as the author meant (the scan
# costs about 0.15 ms a page, 4% of a small page's extraction: pages that only name the XHTML namespace,
# half of the readability corpus, are left out). The ``/`` must follow a space or a quote, as in the
# tokenizer: ``<a href=/news/>`` is an unquoted value, not self-closing.
_A_ENDING_IN_SLASH_RE = re.compile(r"<a(\s[^<>]*)/>")


def _is_xml_document(html: str) -> bool:
    return "<?xml" in html[:256]


def _close_self_closing_anchors(html: str) -> str:
    def close(m: re.Match) -> str:
        attrs = m.group(1)
        return f"<a{attrs}></a>" if attrs[-1] in " \t\n\r\f\"'" else m.group(0)

    return _A_ENDING_IN_SLASH_RE.sub(close, html)


# "<"s read one by one in a script's or style's text (``_raw_text_end``, ``_body_start``) before a regex search takes
# over: train+dev news pages hold about 40 in all their scripts' and styles' texts together; markup (a script left
# open, an end tag in upper case) one every 30 characters
_RAW_TEXT_LT_MAX = 100


def _raw_text_end(html: str, pos: int, name: str) -> int:
    """Where ``</name`` (a script's or style's end tag, as written) first occurs in ``html`` from ``pos`` on, or -1:
    from one "<" to the next with ``str.find``. A script's or style's text (two thirds of a news page's characters)
    holds a "<" every few thousand characters, and ``str.find`` of one character runs at ``memchr``'s speed, about
    ten times a regex's or a ``str.find`` of a longer string (they compare character by character)."""
    closer = _RAW_CLOSER[name]
    j = html.find("<", pos)
    for _ in range(_RAW_TEXT_LT_MAX):
        if j == -1 or html.startswith(closer, j):
            return j
        j = html.find("<", j + 1)
    m = _RAW_CLOSE_RE[name].search(html, j) if j != -1 else None
    return m.start() if m is not None else -1


def _drop_scripts(html: str, start: int = 0) -> str:
    """``html`` without its ``<script>`` and ``<style>`` elements (lower-case tags; MathJax ``math/...``
    scripts stay). Inline JSON and code are often most of a page's bytes (yahoo: 860 KB of body, 1,400
    elements), and the parse, the main-content pass and every source scan cost per byte; nothing here
    reads them. Inline ``<svg>`` (icons: about a tenth of a news page's body bytes) and ``<select>`` (option
    lists) are emptied (``_RAW_KEEP``): no text pass reads their content, but DOM reads did (a heading's text
    took an icon's ``<title>``; an article body's text its option list). One scan finds every opener
    (``_RAW_OPEN_RE``) and skips each element's body, so a ``<script`` string inside an earlier script or
    style is skipped with it; an ``<svg>`` or ``<select>`` without an end tag is left to the parser.
    ``start``: read ``html[start:]`` (the body, ``_body_start``) without a copy of it."""
    parts, last = [], start
    search = _RAW_OPEN_RE.search
    m = search(html, start)
    while m is not None:
        i, gt = m.span()  # (``gt``: just after the start tag's ">")
        if html[gt - 1] != ">":  # no ">" to the page's end
            break
        name = m.group(1)
        if name == "script" and "math/" in m.group(0).lower():  # MathJax source: <script type="math/tex">
            m = search(html, gt)
            continue
        # the end tag as written, else in any case
        if name == "script" or name == "style":
            e = _raw_text_end(html, gt, name)
        else:  # (an <svg> or <select>: its markup holds a "<" every few characters, a regex is faster)
            mc = _RAW_CLOSE_RE[name].search(html, gt)
            e = mc.start() if mc is not None else -1
        if e < 0:
            mc = _RAW_CLOSE_I_RE[name].search(html, gt)
            e = mc.start() if mc is not None else -1
        if name == "svg":  # one nested in it closes first (the parser nests them)
            if html[gt - 2] == "/":  # <svg ... />: no content
                m = search(html, gt)
                continue
            inner = html.find("<svg", gt, e) if e > 0 else -1
            while inner > 0:
                e = html.find("</svg", e + 5)
                inner = html.find("<svg", inner + 4, e) if e > 0 else -1
        if e >= 0:
            end = html.find(">", e) + 1 or len(html)
        elif name == "script" or name == "style":  # no end tag: a script or style runs to the page's end
            end = len(html)
        else:  # an <svg> or <select> left open: the parser's to close
            m = search(html, gt)
            continue
        parts.append(html[last:i])
        keep = _RAW_KEEP[name]
        if keep:
            parts.append(keep)
        last = end
        m = search(html, end)
    if not parts:
        return html[start:]
    parts.append(html[last:])
    return "".join(parts)


def _drop_private_chars(text: str) -> str:
    """``text`` without the placeholder and link-mark characters (U+FDD0..U+FDD3)."""
    pos = []
    for ch in _PH_OPEN + _PH_CLOSE + LINK_OPEN + LINK_CLOSE:
        i = text.find(ch)
        while i != -1:
            pos.append(i)
            i = text.find(ch, i + 1)
    if not pos:
        return text
    pos.sort()
    parts, prev = [], 0
    for i in pos:
        parts.append(text[prev:i])
        prev = i + 1
    parts.append(text[prev:])
    return "".join(parts)


_EMPTY_STATS = {"n_code_blocks": 0, "n_inline_code": 0, "n_math": 0, "n_tables": 0}


def _extract_raw(html: str | bytes, main_content: bool, time_limit_s: float | None = None,
                 story_tail: bool = False):
    """Parse, rewrite and extract: ``(text with placeholders and link marks, rewriter)`` or None if empty.
    Raises ``ExtractTooDeep`` (nesting over ``MAX_DEPTH``) or ``ExtractTimeout`` (over ``time_limit_s``).
    Runs with a ``_PageNodeCache`` as resiliparse's node cache."""
    rnode = _resiliparse_node_module()
    prev = rnode._node_cache
    if type(prev) is _PageNodeCache:  # (an extraction already running in another thread: share its cache)
        return _extract_raw_page(html, main_content, time_limit_s, story_tail)
    page = _PageNodeCache()
    rnode._node_cache = page
    try:
        return _extract_raw_page(html, main_content, time_limit_s, story_tail)
    finally:
        if rnode._node_cache is page:
            rnode._node_cache = prev
        page.clear()


class _PageNodeCache(dict):
    """resiliparse's node-object cache (node address -> its Python object; resiliparse asks ``get`` before it
    makes a node object and stores each one it makes) for the length of one extraction: a plain dict, so both
    calls stay in C (with ``_WeakNodeCache`` they were two Python calls per node object: about 340 a page on
    documentation pages, 4-5% of the extraction). It holds the page's node objects until the extraction ends
    and is emptied then (``_extract_raw``), and the process-wide cache is put back: the same node objects
    answer for the same nodes as long as the page is extracted (resiliparse's ``decompose`` detaches a node
    without freeing it, so no address is taken by another node while the tree lives), node objects compare
    and hash by their node, and no object outlives its page in the cache."""

    __slots__ = ()


_RNODE: list = []


def _give_resiliparse_modules_specs() -> None:
    """Give resiliparse's compiled submodules (``resiliparse.parse.html.node`` and its siblings, whose ``__spec__`` is
    None) a module spec that is not initializing. resiliparse imports ``resiliparse.parse.html.node`` (C-level
    ``PyImport_Import``) each time it makes or looks up a node object (``tree.document``, ``.parent``, every
    query result), and CPython's import check reads ``__spec__._initializing``: on None that raises and clears an
    AttributeError, about 0.3 us per node object (a third of its cost; about 130 node objects a news page: 2% of
    ``extract_html`` on scrapinghub)."""
    import importlib.machinery  # noqa: PLC0415
    import sys  # noqa: PLC0415

    import resiliparse.extract.html2text  # noqa: F401, PLC0415  (imported per page by ``_extract_raw_page``)

    for name, module in list(sys.modules.items()):
        if name.startswith("resiliparse.") and module is not None and getattr(module, "__spec__", 0) is None:
            spec = importlib.machinery.ModuleSpec(name, None)
            spec._initializing = False  # as importlib leaves a loaded module's spec
            module.__spec__ = spec


def _resiliparse_node_module():
    """``resiliparse.parse.html.node`` (imported once), with ``_WeakNodeCache`` installed as the process-wide
    node cache."""
    if not _RNODE:
        import resiliparse.parse.html.node as rnode  # noqa: PLC0415

        _give_resiliparse_modules_specs()
        _RNODE.append(rnode)
    if not _NODE_CACHE_SET:
        _install_node_cache()
        _NODE_CACHE_SET.append(True)
    return _RNODE[0]


def _extract_raw_page(html: str | bytes, main_content: bool, time_limit_s: float | None = None,
                      story_tail: bool = False):
    """``_extract_raw`` (with the page's node cache in place)."""
    try:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree
    except ImportError as e:  # pragma: no cover
        raise ImportError("extract_html needs resiliparse: pip install resiliparse==2.0.0") from e

    # CPU time of this thread, not the wall clock: a loaded machine must not change which pages time out (under
    # a load of 7 on 2 cores, nodejs-doc's api/all.html passed 20 wall-clock seconds and a rerun differed)
    deadline = _Deadline(time_limit_s) if time_limit_s else None
    text = _to_str(html)
    if not text or text.isspace():  # (what ``not text.strip()`` says, without copying a page that ends in a newline)
        return None
    # placeholder and link-mark characters must not come from the page itself
    if _PH_OPEN in text:  # one str scan; a lone CLOSE is inert
        text = _drop_private_chars(text)
    xhtml = _is_xml_document(text)
    page, start = text, _body_start(text)
    text = _drop_scripts(page, start)
    if xhtml:
        text = _close_self_closing_anchors(text)
    if nesting_depth_exceeds(text):
        raise ExtractTooDeep(f"tag nesting deeper than {MAX_DEPTH}")
    tree = HTMLTree.parse(text)
    rw = _Rewriter(tree, text, deadline, page=page)
    rw.doxygen_fragments()
    rw.haddock_source_links()
    rw.sphinx_signatures()
    rw.empty_separators()
    rw.source_links()
    rw.javadoc_captions()
    rw.boilerplate()
    rw.math()
    _check_deadline(deadline)
    rw.code()
    rw.tables()
    _check_deadline(deadline)
    kwargs = dict(preserve_formatting=True, list_bullets=True, alt_texts=False, links=False,
                  form_fields=False, noscript=False, comments=False)
    def plain(main: bool) -> str:
        got = extract_plain_text(tree, main_content=main, **kwargs)
        return got.replace(_PH_PAD, "") if rw.padded else got

    if main_content:
        _prune_outside_body(rw)
    out = plain(main_content)
    if main_content:
        prose_main = _prose_chars(out)
        if prose_main < _RESCUE_BELOW and rw.unwrap_layout_lists():
            # resiliparse's main-content pass drops list items: a page laid out as lists (javadoc 8's
            # ul.blockList) came out empty; read it again with those lists as plain blocks
            again = plain(True)
            # more prose, or as much and more text (javadoc's class-use and tree pages: tables, signatures and
            # type names only)
            if _prose_chars(again) > prose_main or (_prose_chars(again) == prose_main
                                                    and len(_uncaptioned(again, rw)) > len(_uncaptioned(out, rw))):
                out, prose_main = again, _prose_chars(again)
        full = None
        if prose_main < _RESCUE_BELOW:
            # little prose survived the main-content heuristic: it may have dropped the article (seen on
            # unseen sites: the story gone, the menus kept). Take the full page's densest prose region
            # when it holds clearly more prose.
            full = plain(False)
            span = _densest_prose_span(full, rw)
            # a short extraction that holds a code block, math or a table is not a lost story (Sphinx's
            # "Source code for x" pages: a title and one listing, whose footer would win the prose span)
            if _prose_chars(span) >= 2 * prose_main + 300 or (len(_uncaptioned(out, rw).strip()) < 100
                                                              and len(full.strip()) > 300 and _PH_OPEN not in out):
                out = span
        else:
            out = _restrict_to_article_body(rw, out, prose_main, story_tail)
        out = _trim_before_title(_cut_teaser_tail(out, rw.html), rw.title())
        if full is not None:
            out = _restore_headed_section(out, full, rw.title())
        # the head (what ``_body_start`` leaves out), or the page's start when it has no separate body: read in
        # ``page`` up to ``head_end`` (a copy of a news page's head, scripts and all, cost 1-2% of the extraction)
        head_end = start or min(len(page), 100_000)
        out, headline = _restore_headline(out, rw, page, head_end)
        out = _restore_dek(_drop_kicker(out, rw, page, head_end), rw, page, headline, head_end)
    _check_deadline(deadline)
    return out, rw


_RESCUE_BELOW = 600


_HEADING_TAGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))

# a fully qualified name ("org.apache.commons.lang3.concurrent")
_QUALIFIED_NAME_RE = re.compile(r"\w+(?:\.\w+)+")


def _restates(caption: str, heading: str) -> bool:
    """A javadoc caption that only restates the summary heading right above it, in the plural: "Constructors"
    under "Constructor Summary", "Nested Classes" under "Nested Class Summary", "Properties" under "Property
    Summary". Kept, those one- and two-word lines took groovy-doc class pages under line_punct and short_lines
    (9 of its pages); the captions that say more ("Methods in p that return X", "Deprecated Methods") stay."""
    words, head = caption.split(), heading.split()
    if len(head) != len(words) + 1 or head[-1] != "Summary":
        return False
    return all(c in (h, h + "s", h + "es") or h.endswith("y") and c == h[:-1] + "ies" for c, h in zip(words, head))


def _uncaptioned(text: str, rw: _Rewriter) -> str:
    """``text`` without the lines that are javadoc table captions (``rw.captions``): a
    caption kept as a heading is not the table it heads, and the rescue's weighing of what the main-content pass
    kept stays what it was without them (groovy-doc's deprecated-list.html: four captions over tables of links
    that the pass drops; counted, they hid the nearly empty reading from the "under 100 characters" rescue)."""
    if not rw.captions:
        return text
    return "\n".join(ln for ln in text.split("\n") if ln.strip() not in rw.captions)


_CJK_CHAR_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SENTENCE_END_CHARS = frozenset(".!?。！？…\"”’)»:")


def _is_prose(line: str) -> bool:
    """A sentence-like line: at least 10 words (or 40 CJK characters) and ending like a sentence."""
    s = line.strip()
    # the cheap tests first: about half of all lines fail on their last character, before any scan
    if len(s) < 40 or s[-1] not in _SENTENCE_END_CHARS or _PH_OPEN in s:
        return False
    # (the first 80 characters of nearly every prose line hold the 9 spaces: counted there first, as str.count costs
    # 1-2 ns a character, the whole line only when they do not)
    return (s.count(" ", 0, 80) >= 9 or s.count(" ") >= 9
            or not s.isascii() and len(_CJK_CHAR_RE.findall(s)) >= 40)


def _prose_chars(text: str) -> int:
    return sum(len(ln) for ln in text.split("\n") if _is_prose(ln))


def _densest_prose_span(text: str, rw: "_Rewriter | None" = None) -> str:
    """The run of lines with the most prose net of everything else (maximum-sum subarray: a prose line
    scores its length, any other non-empty line minus its length and a constant); code, math and table
    placeholders inside the run are kept. With ``rw``, a line holding code blocks scores the length of their
    code (up to ``_PH_PAD_MAX`` each), not of the placeholders: an API page's examples ("Plots", a listing,
    "Basic examples", a listing ...) then join the prose around them (python-mpmath-doc's bessel page kept
    one function's section of 36)."""
    lines = text.split("\n")
    best, best_lo, best_hi = 0.0, 0, -1
    cur, lo = 0.0, 0
    for i, ln in enumerate(lines):
        s = ln.strip()
        if not s:
            continue
        if _PH_OPEN in s and rw is not None:
            v = float(len(s))
            for m in _PH_RE.finditer(s):
                k = int(m.group(1))
                if k < len(rw.blocks) and rw.blocks[k].startswith("```"):
                    v += min(len(rw.blocks[k]), _PH_PAD_MAX) - len(m.group(0))
        elif _is_prose(s) or _PH_OPEN in s:
            v = float(len(s))
        else:
            v = -0.5 * len(s) - 15.0
        if cur <= 0:
            cur, lo = 0.0, i
        cur += v
        if cur > best:
            best, best_lo, best_hi = cur, lo, i
    if best_hi < 0:
        return text
    return "\n".join(lines[best_lo:best_hi + 1])


# headings that open the teaser lists after a story ("You might also like", "Related stories", "More in
# Opinion", "Features" ...), in the languages of the evaluation corpora; matched on the whole short line
_TEASER_HEADING_RE = re.compile(
    r"(?:(?:[\w'’]+ ){0,4}(?:that )?you (?:may|might|would|will) (?:also )?(?:like|enjoy|love|be interested in)|related(?: (?:stories|articles|posts|content|"
    r"news|coverage|links|reading|topics|videos|items))?|more (?:from|in|on|stories|news|articles|like this|to "
    r"explore|videos)\b.{0,40}|similar (?:articles|stories|posts)|recommended(?: for you| stories| articles| "
    r"reading| videos)?|read (?:next|more|also|this next)|what to read next|up next|most (?:popular|read|viewed|"
    r"shared|emailed)(?: stories| articles)?|popular(?: (?:stories|posts|articles|now|on \w+))?|trending(?: now|"
    r" stories| articles)?|top stories|latest (?:news|stories|posts|articles|videos)|editor'?s'? picks?|"
    r"don'?t miss|also (?:read|on \w+)|explore further|around the web|from around the web|"
    r"sponsored(?: stories| content| links)?|promoted(?: stories| content)?|keep reading|recent (?:posts|articles|"
    r"stories)|more stories|today'?s top stories|in other news|you may have missed|about the authors?|author bio|"
    r"das könnte sie auch interessieren|mehr zum thema|lesen sie auch|weitere artikel|ähnliche artikel|"
    r"meistgelesen|(?:à )?lire aussi|sur le même sujet|à voir aussi|te puede interesar|noticias relacionadas|"
    r"leggi anche|potrebbe interessarti|leia também|相关阅读|相关文章|推荐阅读|関連記事|"
    # the same lists named after the site: "Related posts on the Inquisitr", "Trending stories at Newsy.com"
    r"(?:related|trending|popular|recommended|latest) (?:stories|posts|articles|news) (?:on|at|from) .{2,30})\W*", re.I)
_TEASER_HEADING_MAX = 60
_TEASER_MIN_PROSE_BEFORE = 0.8


# a gallery item: "• 3/31 18 October 2017", "2 of 5 Camden set for a makeover" (numerator, denominator)
_GALLERY_ITEM_RE = re.compile(r"^\s*(?:[•*·-]\s*)?(\d{1,3})\s*(?:/|of)\s*(\d{1,3})(?![\d/.:-])")
_GALLERY_MIN_ITEMS = 3


def _drop_galleries(lines: list[str]) -> list[str]:
    """Drop photo-gallery runs: from the first to the last item counter of one gallery ("1/31" .. "31/31",
    at least ``_GALLERY_MIN_ITEMS`` consecutive numbers), plus the caption lines of the last item (indented
    continuation lines). Placeholders inside are kept."""
    items: dict[str, list[tuple[int, str]]] = {}
    for i, ln in enumerate(lines):
        if ln[:12].lstrip(" \t•*·-")[:1].isdigit():
            m = _GALLERY_ITEM_RE.match(ln)
            if m and 0 < int(m.group(1)) <= int(m.group(2)):
                items.setdefault(m.group(2), []).append((i, m.group(1)))
    drop = set()
    for hits in items.values():
        if len(hits) < _GALLERY_MIN_ITEMS:
            continue
        # runs of consecutive numbers (1/31, 2/31, 3/31 ...): a lone "8/10" rating elsewhere is no gallery
        runs, run = [], [hits[0]]
        for h in hits[1:]:
            if int(h[1]) == int(run[-1][1]) + 1:
                run.append(h)
            else:
                runs.append(run)
                run = [h]
        runs.append(run)
        for run in runs:
            if len(run) < _GALLERY_MIN_ITEMS:
                continue
            lo, hi = run[0][0], run[-1][0]
            j = hi + 1
            while j < len(lines) and (not lines[j].strip() or lines[j][:1] in " \t"):
                j += 1
            drop.update(range(lo, j))
    if not drop:
        return lines
    return [ln for i, ln in enumerate(lines) if i not in drop or _PH_OPEN in ln]


# the page's own title in its head: <title>, og:title, twitter:title (a headline named there is the story's)
_CONTENT_ATTR_RE = re.compile(r"""\bcontent\s*=\s*(?:"([^"]{3,500})"|'([^']{3,500})')""", re.I)
_HEADLINE_MIN_SPACES = 2  # a headline has three words or more; a site name ("Fox News", "Engadget") fewer


def _head_titles(head: str, end: int | None = None) -> list[str]:
    """The titles the page's head gives itself (``<title>``, the ``content`` of the ``og:title`` and
    ``twitter:title`` meta tags), unescaped, whitespace-normalised and case-folded (literal finds, no regex
    over the head). ``end``: where the head ends in ``head`` (the whole page, not copied: ``_extract_raw_page``)."""
    import html as _html

    if end is None:
        end = len(head)
    out = []
    i = head.find("<title", 0, end)
    if i >= 0:
        j = head.find(">", i, end)
        k = head.find("<", j, end)
        if 0 <= j < k:
            out.append(head[j + 1:k])
    for key in ("og:title", "twitter:title"):
        i = head.find(key, 0, end)
        if i >= 0:
            m = _CONTENT_ATTR_RE.search(head, head.rfind("<", 0, i), max(i, head.find(">", i, end)))
            if m:
                out.append(m.group(1) or m.group(2))
    return [_norm_ws(_html.unescape(t)).casefold() for t in out if t.strip()]


_SOURCE_H1_LOOKUPS = 16
_H1_OPEN_RE = re.compile("<h1")  # an <h1> start tag's first characters (or <h1x>, told apart by the caller)


def _source_h1_texts(html: str) -> Iterator[str]:
    """The texts of the source's first ``_SOURCE_H1_LOOKUPS`` ``<h1>`` elements (tags dropped, entities
    unescaped, whitespace folded): literal finds, cheaper than a DOM query. One at a time: a reader that stops
    at the first it wants spares the scan of the rest of the page for more."""
    import html as _html

    n = 0
    for m in _H1_OPEN_RE.finditer(html):  # (a regex scan: about half the time of str.find's over a long page)
        at = m.start()
        gt, end = html.find(">", at), html.find("</h1", at)
        if html[at + 3:at + 4] in (">", " ", "\t", "\n", "\r") and 0 <= gt < end:
            inner = _TAG_RE_ANY.sub("", html[gt + 1:end])
            yield _norm_ws(_html.unescape(inner) if "&" in inner else inner)
            n += 1
            if n == _SOURCE_H1_LOOKUPS:
                return


def _headline_in_titles(rw: "_Rewriter", head: str, head_end: int | None, text: str) -> str:
    """The text of the first ``<h1>`` that opens one of the page's head titles (``_head_titles(head, head_end)``:
    "Headline | Site"; not the site's name closing it, "Sessions | Django 3.2 documentation"), of three words or
    more, unless ``text`` already holds it as a line; "" when there is none. The titles are read at the first
    ``<h1>`` of three words: a page without one spares the scans of its head."""
    titles = None
    for t in _source_h1_texts(rw.html):
        if t.count(" ") < _HEADLINE_MIN_SPACES:
            continue
        if titles is None:
            titles = _head_titles(head, head_end)
            if not titles:
                return ""
        if any(ht.startswith(t.casefold()) for ht in titles):
            n = len(t)
            if any(n <= len(ln) <= 2 * n + 10 and _norm_ws(ln) == t for ln in text.split("\n")):
                return ""
            return t
    return ""


def _restore_article_title(text: str, rw: "_Rewriter", head: str = "") -> str:
    """Put the story's headline first when the main-content pass lost it (it keeps the headline on most pages
    and drops it on some, e.g. when it sits in the article's ``<header>`` beside the byline): the page's first
    ``<h1>`` when it sits inside the story's ``<article>`` (``rw.article_title()``), else the first ``<h1>``
    that the page's ``head`` names as its title (``_headline_in_titles``: "Headline | Site")."""
    return _restore_headline(text, rw, head)[0]


def _restore_headline(text: str, rw: "_Rewriter", head: str = "", head_end: int | None = None) -> tuple[str, str]:
    """``_restore_article_title``'s text and the headline it put first ("" when it put none). ``head_end``:
    where the head ends in ``head`` (``_head_titles``)."""
    if not text.strip():
        return text, ""
    title = rw.title()
    if title:
        n = len(title)
        if any(n <= len(ln) <= 2 * n + 10 and _norm_ws(ln) == title for ln in text.split("\n")):
            return text, ""  # there already (whitespace aside)
        title = rw.article_title()
    if not title and head:
        title = _headline_in_titles(rw, head, head_end, text)
    return (title + "\n\n" + text, title) if title else (text, "")


_KICKER_MAX = 30  # characters of a section label above the headline ("Tourism", "Health & Medicine", "News World")
_KICKER_WORDS = 3


def _drop_kicker(text: str, rw: "_Rewriter", head: str, head_end: int | None = None) -> str:
    """Drop a section label (kicker) that opens the text right above the headline: a first line of at most
    ``_KICKER_WORDS`` words and ``_KICKER_MAX`` characters, no sentence end, digit or placeholder, followed by a line
    of three words or more that is the page's first ``<h1>`` or opens one of the head's titles ("Headline | Site")."""
    lines = text.split("\n", 40)  # (the first 40 lines, which are all it reads, and the rest in one piece)
    idx = []
    for i, ln in enumerate(lines[:40]):
        if ln.strip():
            idx.append(i)
            if len(idx) == 2:
                break
    if len(idx) < 2:
        return text
    k, h = lines[idx[0]].strip(), _norm_ws(lines[idx[1]])
    if (len(k) > _KICKER_MAX or k.count(" ") >= _KICKER_WORDS or k[-1] in _SENTENCE_END_CHARS or _PH_OPEN in k
            or _ANY_DIGIT_RE.search(k) or h.count(" ") < _HEADLINE_MIN_SPACES):
        return text
    if h != rw.title():
        low = h.casefold()
        if not any(t.startswith(low) for t in _head_titles(head, head_end)):
            return text
    return "\n".join(lines[idx[1]:])


# the story's dek (standfirst, subheadline): the page's description (``og:description``, ``description``,
# ``twitter:description``) shown as a text node of the body shortly after an ``<h1>``; the main-content pass
# drops it on some pages ("The beloved X-Men star shared the story while doing press for 'Logan.'")
_DESCRIPTION_ATTR_RE = re.compile(r"""(?:name|property)\s*=\s*["']?(?:og:|twitter:)?description\b""", re.I)
_DEK_META_LOOKUPS = 6
_DEK_H1_LOOKUPS = 3
_DEK_MIN_SPACES = 4  # five words or more
_DEK_AFTER_H1 = 3000  # characters of source between the <h1> tag and the dek
_DEK_MAX = 600
_DEK_KEY_CHARS = 60
_INLINE_TAGS = frozenset(("a", "em", "i", "b", "strong", "span", "abbr", "cite", "q", "small", "sup", "sub", "u",
                          "mark", "time", "font"))


def _head_descriptions(head: str, head_end: int | None = None) -> list[str]:
    """The ``content`` of the head's description meta tags (``og:description``, ``description``,
    ``twitter:description``), as written in the source: one literal scan for "description". ``head_end``:
    where the head ends in ``head`` (``_head_titles``)."""
    if head_end is None:
        head_end = len(head)
    out, pos = [], head.find("description", 0, head_end)
    for _ in range(_DEK_META_LOOKUPS):
        if pos < 0:
            break
        start, end = head.rfind("<", 0, pos), head.find(">", pos, head_end)
        if start >= 0 and end > pos and head[start + 1:start + 5].lower() == "meta":
            tag = head[start:end]
            if _DESCRIPTION_ATTR_RE.search(tag):
                m = _CONTENT_ATTR_RE.search(tag)
                if m:
                    out.append(m.group(1) or m.group(2))
        pos = head.find("description", max(pos + 1, end), head_end)
    return out


def _text_run_at(html: str, start: int) -> str:
    """The text that starts at ``start`` in the source, through inline tags, up to the next other tag (at most
    ``_DEK_MAX`` characters), unescaped and whitespace-normalised."""
    import html as _html

    end = start
    while end - start < _DEK_MAX:
        j = html.find("<", end)
        if j < 0:
            end = len(html)
            break
        k = j + 1 + (html[j + 1:j + 2] == "/")
        name_end = k
        while name_end < len(html) and html[name_end].isalnum():
            name_end += 1
        if html[k:name_end].lower() not in _INLINE_TAGS:
            end = j
            break
        end = html.find(">", j) + 1 or len(html)
    return _norm_ws(_html.unescape(_TAG_RE_ANY.sub("", html[start:min(end, start + _DEK_MAX)])))


def _restore_dek(text: str, rw: "_Rewriter", head: str, headline: str = "", head_end: int | None = None) -> str:
    """Put the story's dek back under its headline (the page's first ``<h1>`` or the ``headline`` put back
    before, when the text opens with it; else first) when the
    main-content pass dropped it: a description from the page's ``head`` (``_head_descriptions``) of five words
    or more that the body shows as a text node within ``_DEK_AFTER_H1`` characters after an ``<h1>`` tag;
    the text shown there (``_text_run_at``) goes in."""
    if not head or not text.strip():
        return text
    import html as _html

    body = rw.html
    h1s: list[int] | None = None  # where the first few <h1> tags start in the source (looked up once)
    seen = set()
    for desc in _head_descriptions(head, head_end):
        plain = _norm_ws(_html.unescape(desc))
        if plain in seen or plain.count(" ") < _DEK_MIN_SPACES or plain[:_DEK_KEY_CHARS // 2] in text:
            continue
        seen.add(plain)
        if h1s is None:  # (a regex scan: about half the time of str.find's for "<h1" over a long page)
            h1s = []
            for m in _H1_OPEN_RE.finditer(body):
                h1s.append(m.start())
                if len(h1s) == _DEK_H1_LOOKUPS:
                    break
        for key in dict.fromkeys((desc.strip()[:_DEK_KEY_CHARS], plain[:_DEK_KEY_CHARS])):
            # searched only in the source just after each <h1> tag
            i = next((j for j in (body.find(key, h, h + _DEK_AFTER_H1 + len(key)) for h in h1s) if j >= 0), -1)
            if i < 0:
                continue
            gt = body.rfind(">", 0, i)
            if gt < 0 or body[gt + 1:i].strip():
                continue
            dek = _text_run_at(body, i)
            if dek.count(" ") < _DEK_MIN_SPACES or dek[:_DEK_KEY_CHARS // 2] in text:
                return text
            lines = text.split("\n")
            first = next((j for j, ln in enumerate(lines) if ln.strip()), 0)
            at = first + 1 if _norm_ws(lines[first]) in (rw.title(), headline) else first
            if not at:
                return dek + "\n\n" + text
            return "\n".join(lines[:at] + ["", dek] + ([] if at < len(lines) and not lines[at].strip() else [""])
                             + lines[at:])
    return text


_PROSE_ABOVE_TITLE_MAX = 200


def _trim_before_title(text: str, title: str) -> str:
    """Drop the lines above the page's ``<h1>`` line when at most ``_PROSE_ABOVE_TITLE_MAX`` characters of
    prose come before it (menus, breadcrumbs, "Skip to content", site slogans, top-of-page teasers, one
    promotional sentence: "Get Trading Recommendations ... for just $39 per month."; train+dev 2 pages better,
    none worse); code, math and table placeholders stay."""
    if not title:
        return text
    lines = text.split("\n")
    prose = 0
    for i, ln in enumerate(lines):
        if _is_prose(ln):
            prose += len(ln)
            if prose > _PROSE_ABOVE_TITLE_MAX:
                return text
        if ln and _norm_ws(ln) == title:
            # nothing after the heading: a section heading that ends what the extractor kept (Haddock's
            # "Documentation" under a module's one-line description), not the headline of an article below it
            if not i or not any(x.strip() for x in lines[i + 1:]):
                return text
            return "\n".join([x for x in lines[:i] if _PH_OPEN in x] + lines[i:])
    return text


_HEADED_SECTION_MAX = 400


def _restore_headed_section(text: str, full: str, title: str) -> str:
    """When the kept text ends with the page's ``<h1>`` line (a heading that heads nothing) and the full page
    has at most ``_HEADED_SECTION_MAX`` characters after that heading, those lines are put back under it: the
    main-content pass drops a section this small (a small Haddock module's one signature under ``<h1>
    Documentation``: "readDocx :: PandocMonad m => ReaderOptions -> ByteString -> m Pandoc"), and the densest
    prose region holds no signature. Asked only when the main-content pass kept little prose (``full``: the
    whole page's text)."""
    if not title:
        return text
    kept = text.rstrip()
    last = kept[kept.rfind("\n") + 1:]
    if _norm_ws(last) != title:
        return text
    lines = full.split("\n")
    for i, ln in enumerate(lines):
        if ln and _norm_ws(ln) == title:
            rest = "\n".join(lines[i + 1:]).strip("\n")
            if rest.strip() and len(rest) <= _HEADED_SECTION_MAX:
                return kept + "\n\n" + rest
            return text
    return text


# a teaser card's byline ("By Europe correspondent Lisa Millar", "by Hannah Edensor"): a short line, no
# sentence end, a capitalised word after "by"
_CARD_BYLINE_RE = re.compile(r"\s*(?:[•*·-]\s*)?(?:by|von|par|por)\s+[A-Z][^.!?]{1,60}", re.I)
_CARD_MIN_BYLINES = 2
_CARD_LINE_MAX = 300  # a teaser's headline, label or blurb; a story's own paragraphs run longer


def _teaser_cards_start(lines: list[str], prose: list[int], start: int) -> int | None:
    """Where a list of teaser cards after the story begins: at least ``_CARD_MIN_BYLINES`` byline lines
    (``_CARD_BYLINE_RE``) at or after line ``start`` (where the story has ended: ``_story_end``), every
    text line from the first of them on at most ``_CARD_LINE_MAX`` characters (a story ends once; one
    byline after it is an author's note). The list starts at the first byline's card: the short,
    non-prose lines (headline, number, section label) just above it. None when there is no such list."""
    i = start
    bylines = [j for j in range(i, len(lines)) if len(lines[j]) <= 80 and lines[j].lstrip()[:4].lower().startswith(
        ("by ", "von ", "par ", "por ", "• by")) and _CARD_BYLINE_RE.fullmatch(lines[j].rstrip())]
    if len(bylines) < _CARD_MIN_BYLINES:
        return None
    first = bylines[0]
    if any(len(ln) > _CARD_LINE_MAX for ln in lines[first:] if _PH_OPEN not in ln):
        return None
    j = first
    while j > i and (not lines[j - 1].strip() or not prose[j - 1] and len(lines[j - 1].strip()) <= 120
                     and _PH_OPEN not in lines[j - 1]):
        j -= 1
    return j


_RANK_ITEM_RE = re.compile(r"\s*(\d{1,2})[.)]\s+\S")
_RANK_MIN_ITEMS = 4
_RANK_ITEM_MAX = 150


def _ranked_list_start(lines: list[str], start: int) -> int | None:
    """Where a ranked list of headlines after the story begins ("Most read": "1. Amish builders ...",
    "2. ...", ...): ``_RANK_MIN_ITEMS`` or more consecutive list items numbered 1, 2, 3, ..., each at most
    ``_RANK_ITEM_MAX`` characters, most of them not ending like a sentence (headlines; a story's own
    closing list of steps or points reads as sentences), at or after line ``start`` (where the story has
    ended: ``_story_end``). None when there is none."""
    for i in range(start, len(lines)):
        if lines[i][:4].lstrip()[:1] == "1":
            n, j, headline_like = 0, i, 0
            while j < len(lines):
                s = lines[j].strip()
                if not s:
                    j += 1
                    continue
                m = _RANK_ITEM_RE.match(s)
                if m is None or int(m.group(1)) != n + 1 or len(s) > _RANK_ITEM_MAX or _PH_OPEN in s:
                    break
                n += 1
                headline_like += s[-1] not in _SENTENCE_END_CHARS
                j += 1
            if n >= _RANK_MIN_ITEMS and headline_like * 2 > n:
                return i
    return None


def _story_end(prose: list[int], total: int) -> int:
    """The first line index where ``_TEASER_MIN_PROSE_BEFORE`` of the prose lies above."""
    need, before = _TEASER_MIN_PROSE_BEFORE * total, 0
    for i, n in enumerate(prose):
        if before >= need:
            return i
        before += n
    return len(prose)


_NAME_LINE_RE = re.compile(r"(?:[A-Z][\w'’.-]+ ){1,3}[A-Z][\w'’-]+")
_BIO_MAX = 600


def _author_bio_start(lines: list[str], prose: list[int], start: int) -> int | None:
    """Where an author box after the story begins: a line that is only a name ("Knute Berger", 2-4
    capitalised words) followed by a paragraph of 40-600 characters that starts with the name's first word
    ("Knute Berger is ...", "Ron has been ..."), with no prose after that paragraph, at or after line
    ``start`` (where the story has ended: ``_story_end``). None when there is none."""
    n = len(lines)
    last_prose = max((k for k in range(start, n) if prose[k]), default=-1)
    for i in range(start, n):
        s = lines[i].strip()
        if 4 <= len(s) <= 40 and s[:1].isupper() and _NAME_LINE_RE.fullmatch(s):
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            if j < n:
                bio = lines[j].strip()
                if (40 <= len(bio) <= _BIO_MAX and bio.startswith(s.split(" ", 1)[0] + " ") and bio != s
                        and last_prose <= j):
                    return i
    return None


# a teaser headline after the story: a line of at least ``_LINKED_TEASER_MIN_WORDS`` words, at most
# ``_LINKED_TEASER_MAX`` characters, that is all the text of one link in the page ("Here's how to get fresh
# McDonald's fries every time", "Xbox Scorpio Will Not Need a 4K TV"): trafilatura's link-density test on
# headings and paragraphs, read from the page's source for the few candidate lines only
_LINKED_TEASER_MIN_WORDS = 4
_LINKED_TEASER_MAX = 200
_LINKED_TEASER_LOOKUPS = 3  # occurrences of a line's text looked at in the page's source
_LINKED_TEASER_NEEDLE = 12  # characters of a line searched for in the source, at least
_TAG_RE_ANY = re.compile(r"<[^<>]*>")
# ``_LINKED_TEASER_MIN_WORDS`` words or more (runs of ``\w``): one match, not a list of the words
_MIN_WORDS_RE = re.compile(r"\W*\w+" + r"\W+\w+" * (_LINKED_TEASER_MIN_WORDS - 1))
# a link to another page: an href that is not a jump inside the page (a section heading's own "#anchor"
# permalink, a table of contents)
_LINK_AWAY_RE = re.compile(r"""\shref\s*=\s*["']?[^#\s"'>]""", re.I)


def _anchor_open_before(html: str, pos: int) -> int:
    """Index of the last ``<a`` start tag (not ``<abbr``, ``<article``, ...) before ``pos``; -1 if none."""
    i = pos
    while True:
        i = html.rfind("<a", 0, i)
        if i < 0 or html[i + 2:i + 3] in (" ", ">", "\n", "\t", "\r"):
            return i


def _link_text_at(html: str, key: str, start: int = 0) -> int:
    """Where ``key`` occurs in the page's source, at or after ``start``, as the whole text of one ``<a>``
    element that leads away from the page (``_LINK_AWAY_RE``): the anchor's text, tags dropped, entities
    unescaped and whitespace folded, is ``key`` (``<a href=...><h3>key</h3></a>``, ``<h3><a href=...>key</a>
    </h3>``); -1 if not. The source is searched for the line's start up to its first non-ASCII character
    (what a page may spell as an entity: "girls&#8217; trip"), at least ``_LINKED_TEASER_NEEDLE`` characters."""
    import html as _html

    needle = key
    if not key.isascii():
        cut = next(i for i, ch in enumerate(key) if ord(ch) > 127)
        if cut < _LINKED_TEASER_NEEDLE:
            return -1
        needle = key[:cut]
    pos, tries = html.find(needle, start), 0
    while pos >= 0 and tries < _LINKED_TEASER_LOOKUPS:
        tries += 1
        op = _anchor_open_before(html, pos)
        if op > html.rfind("</a", 0, pos):
            gt = html.find(">", op)
            if 0 <= gt < pos and not _TAG_RE_ANY.sub("", html[gt + 1:pos]).strip() and _LINK_AWAY_RE.search(html, op, gt):
                end = html.find("</a", pos + len(needle))
                if end >= 0 and end - gt <= 4 * len(key) + 200:
                    inner = _TAG_RE_ANY.sub("", html[gt + 1:end])
                    if _norm_ws(_html.unescape(inner) if "&" in inner else inner) == key:
                        return pos
        pos = html.find(needle, pos + 1)
    return -1


# what may precede a link's text inside the link: whitespace and whole tags (``_link_text_at``'s test)
_LINK_TEXT_LEAD_RE = re.compile(r"(?:\s|<[^<>]*>)*")
_LINK_START_INDEX_MIN = 16  # candidate lines on a page that pay for ``_link_text_starts``


def _link_text_starts(html: str, begin: int = 0) -> dict[str, list[int]]:
    """Every position at or after ``begin`` where ``_link_text_at`` may find a link's text, by the 4 characters
    there: after each ``<a`` start tag, the first character that is neither whitespace nor in a whole tag, and
    the tags before it (what ``html[gt + 1:pos]`` may hold). One pass over the anchors instead of a scan of the
    page's tail per line: a line found at none of them is no link's text (``_link_text_at`` returns -1). The
    anchor of a text at or after ``begin`` is the last one before the text, so none before the last anchor
    before ``begin`` is read."""
    starts: dict[str, list[int]] = {}
    i = html.find("<a", max(0, _anchor_open_before(html, begin)))
    while i != -1:
        if html[i + 2:i + 3] in (" ", ">", "\n", "\t", "\r"):
            gt = html.find(">", i)
            if gt < 0:
                break
            end = _LINK_TEXT_LEAD_RE.match(html, gt + 1).end()
            p = html.find("<", gt + 1, end)
            while p != -1:
                starts.setdefault(html[p:p + 4], []).append(p)
                p = html.find("<", p + 1, end)
            starts.setdefault(html[end:end + 4], []).append(end)
        i = html.find("<a", i + 2)
    return starts


def _may_be_link_text(html: str, key: str, start: int, starts: dict[str, list[int]]) -> bool:
    """False when ``_link_text_at(html, key, start)`` is -1 for sure: its needle (``key`` up to its first
    non-ASCII character) begins at none of the link-text positions ``starts`` at or after ``start``."""
    needle = key
    if not key.isascii():
        cut = next(i for i, ch in enumerate(key) if ord(ch) > 127)
        if cut < _LINKED_TEASER_NEEDLE:
            return False
        needle = key[:cut]
    return any(p >= start and html.startswith(needle, p) for p in starts.get(needle[:4], ()))


def _linked_teasers(lines: list[str], prose: list[int], start: int, html: str) -> set[int]:
    """Lines at or after ``start`` (the story's end, ``_story_end``) that are teaser headlines (not prose, at
    least ``_LINKED_TEASER_MIN_WORDS`` words, the whole text of a link: ``_link_text_at``) and, between two
    such headlines, the card's label and blurb (at most two lines of ``_CARD_LINE_MAX`` characters each).
    Placeholders stay. The source is searched from where the story's last prose line lies (lines follow the
    document's order), so a line that is not a link costs a scan of the page's tail only."""
    cands = []
    for i in range(start, len(lines)):
        if prose[i]:
            continue
        s = lines[i].strip()
        if s[:1] in _BULLET_STARTS:
            s = _BULLET_PREFIX_RE.sub("", s)
        if (s and len(s) <= _LINKED_TEASER_MAX and s.count(" ") >= _LINKED_TEASER_MIN_WORDS - 1
                and _PH_OPEN not in s and _MIN_WORDS_RE.match(s)):
            cands.append((i, s))
    if not cands:
        return set()
    cursor = 0
    last = next((j for j in range(min(start, len(lines)) - 1, -1, -1) if prose[j]), None)
    if last is not None:
        cursor = max(0, html.rfind(_line_key(lines[last])[:_BODY_MATCH_ENDS]))
    heads = []
    last_tick = None  # the source's last "`", looked up for the first line with one (a scan of the whole page)
    starts = _link_text_starts(html, cursor) if len(cands) >= _LINK_START_INDEX_MIN else None
    for i, s in cands:
        if "`" in s:
            if last_tick is None:
                last_tick = html.rfind("`")  # inline code reads `x` in a line, <code>x</code> in the source
            if last_tick < cursor:
                continue  # (what ``_link_text_at`` would find: the line is nowhere in the source after ``cursor``)
        if starts is not None and not _may_be_link_text(html, s, cursor, starts):
            continue
        at = _link_text_at(html, s, cursor)
        if at >= 0:
            heads.append(i)
            cursor = at
    drop = set(heads)
    for a, b in zip(heads, heads[1:]):
        mid = [j for j in range(a + 1, b) if lines[j].strip()]
        if len(mid) <= 2 and all(len(lines[j]) <= _CARD_LINE_MAX and _PH_OPEN not in lines[j] for j in mid):
            drop.update(mid)
    return drop


# trailing labels: what trafilatura's precision mode drops as trailing headings ("SOURCE", "Discussion", "More
# Weather News", "Gamer Guide", "Right Internal Skyscraper, Site wide"): at most ``_TRAILING_LABEL_LINES`` last
# lines of at most ``_TRAILING_LABEL_WORDS`` words, Latin script, in title case (every word of four letters or
# more capitalised: a label, not a reference page's last item "Length of original object"), no identifier
# ("GOutputStream", "h5g_link"), neither a sentence end, a colon nor list or placeholder markup, on
# pages with ``_TRAILING_LABEL_MIN_PROSE`` characters of prose
_TRAILING_LABEL_LINES = 2
_TRAILING_LABEL_WORDS = 5
_TRAILING_LABEL_MIN_PROSE = 600
_TRAILING_LABEL_END = tuple('.!?"”’)»:;,')


def _drop_trailing_labels(lines: list[str], total: int) -> list[str]:
    """``lines`` without their trailing labels (``_TRAILING_LABEL_*``); ``lines`` itself when none goes."""
    if total < _TRAILING_LABEL_MIN_PROSE:
        return lines
    end = len(lines)
    for _ in range(_TRAILING_LABEL_LINES):
        j = end - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        s = lines[j].strip() if j >= 0 else ""
        if (not s or not s[0].isalnum() or not s.isascii() or s.endswith(_TRAILING_LABEL_END)
                or ":" in s or "_" in s or s.count(" ") >= _TRAILING_LABEL_WORDS
                or any(len(w) >= 4 and not w[0].isupper() or not w.isupper() and any(c.isupper() for c in w[1:])
                       for w in s.split())):
            break
        end = j
    return lines if end == len(lines) else lines[:end]


def _teaser_heading_at(lines: list[str], start: int) -> int | None:
    """Index of the first teaser heading (``_TEASER_HEADING_RE``, a line of at most ``_TEASER_HEADING_MAX``
    characters) at or after ``start``; None if none. Only the lines below the story's end are read (the
    headings above it never cut)."""
    for i in range(start, len(lines)):
        ln = lines[i]
        if (0 < len(ln) <= 2 * _TEASER_HEADING_MAX and len(s := ln.strip()) <= _TEASER_HEADING_MAX and s
                and _TEASER_HEADING_RE.fullmatch(s.strip(_CHROME_STRIP))):
            return i
    return None


def _cut_teaser_tail(text: str, html: str = "") -> str:
    """Drop photo galleries (``_drop_galleries``), what follows a teaser heading ("You might also like",
    "Related stories", ...) or begins a list of teaser cards with bylines (``_teaser_cards_start``) once the
    story has ended (at least ``_TEASER_MIN_PROSE_BEFORE`` of the page's prose lies above it, ``_story_end``),
    or begins a ranked headline list (``_ranked_list_start``) or an author box (``_author_bio_start``) there,
    and calls to action after the story (``_drop_calls_to_action``). Code,
    math and table placeholders below the heading are kept. One pass computes every line's prose length."""
    split = text.split("\n")
    lines = _drop_galleries(split)
    prose = [len(ln) if _is_prose(ln) else 0 for ln in lines]
    total = sum(prose)
    end = None  # ``_story_end`` of ``prose`` as it is now (None: not known, or under 300 characters of prose)
    if total >= 300:
        # the first teaser heading below the story, or the first card of a teaser list, whichever is higher
        end = _story_end(prose, total)
        cuts = [i for i in (_teaser_heading_at(lines, end), _teaser_cards_start(lines, prose, end),
                            _ranked_list_start(lines, end), _author_bio_start(lines, prose, end)) if i is not None]
        if cuts:
            i = min(cuts)
            keep = list(range(i)) + [j for j in range(i + 1, len(lines)) if _PH_OPEN in lines[j]]
            lines, prose = [lines[j] for j in keep], [prose[j] for j in keep]
            total = sum(prose)
            end = _story_end(prose, total) if total >= 300 else None
        if html:
            drop = _linked_teasers(lines, prose, len(lines) if end is None else end, html)
            if drop:
                keep = [j for j in range(len(lines)) if j not in drop]
                lines, prose = [lines[j] for j in keep], [prose[j] for j in keep]
                total, end = sum(prose), None
    lines = _drop_trailing_labels(_drop_calls_to_action(lines, prose, total, text, end), total)
    return text if lines is split else "\n".join(lines)


# calls to action and site notices that follow a story ("Sign up now for the ... newsletter", "Follow us
# on Twitter", affiliate and market-data disclaimers, "We pay for your stories!"); an author's own contact
# line ("Follow him on Twitter ...") is gold text on some pages and not on others, so it stays
_CTA_RE = re.compile(
    r"(?i:\b(?:sign(?:ing)? up (?:now|here|today)|subscribe (?:now|here|today|to (?:our|the) )|newsletter|"
    r"like us on|follow us\b|download (?:the|our) .{0,30}\bapp\b|we pay for your stories|"
    r"may (?:receive|earn) (?:a )?(?:compensation|commission)|affiliate (?:links?|commission)|links to online "
    r"retail|quotes (?:are )?delayed|all rights reserved|terms of (?:use|service)|privacy policy|click here|"
    r"(?:post|leave) a comment|join the (?:discussion|conversation)|a link has been posted to your|"
    r"you (?:may|might) also like these|"
    # the site's own social pages ("Just hit 'Like' on our Digital Spy Facebook page", "Join our Facebook page",
    # "Like Truthdig on Facebook", "We're also on Facebook"); an author's "Follow him on Twitter" stays
    r"(?:on|join) our [^.!?]{0,40}(?:facebook|twitter|instagram)\b|like [\w.]+ on facebook\b|"
    r"we're (?:also )?on (?:facebook|twitter)\b|"
    # account and feedback boxes ("Forgot Password", "Please choose a screen name", "Sign in to comment", "Have
    # you found an error or omission in our reporting? Tell us here.", "Give us feedback")
    r"forgot (?:your )?password|reset your password|sign in to comment|screen name|have you found an error|"
    r"give us feedback|story idea we should)|"
    # at a line's start: syndication notices ("This article was originally published on The Conversation.",
    # "Originally published on TeslaMondo."; a reference "[originally published in 1966]" stays) and pointers to
    # more of the site ("Get the latest Microsoft stock price here.", "Read more from Alfredo, our Technology
    # Contributor.", "Visit CNN.com/sport for more news and videos")
    r"^\s*(?:(?:(?:this|the) (?:article|story|post) )?(?:was )?(?:originally|first) (?:published|appeared) "
    r"(?:on|in|at)\b|(?:this|the) (?:article|story|post) was (?:published|updated)\b|get the latest\b|read more from\b|"
    r"visit \S+ for more\b))")
_CTA_MAX_LINE = 800
_CTA_SHORT_LINE = 120
# above the story's end only a short non-prose line with a newsletter pitch or a share notice that addresses the
# reader goes ("Sign Up for the MACH newsletter", "Get Data Sheet, Fortune's technology newsletter", "A link
# has been posted to your Facebook feed."): a subheading such as "Why newsletters still matter" stays
_CTA_HEAD_RE = re.compile(r"(?i:newsletter|a link has been posted to your)")
_CTA_ADDRESS_RE = re.compile(r"(?i:\b(?:sign(?:ing)? up|subscribe|your?|our|added|join|get)\b)")
# a literal of every ``_CTA_RE`` branch (lower case): pages holding none skip the line scan
_CTA_KEYS = ("sign up", "signing up", "subscribe", "newsletter", "like us on", "follow us", "download", "we pay for",
             "may receive", "may earn", "affiliate", "links to online", "quotes", "all rights reserved", "terms of",
             "privacy policy", "click here", "a comment", "join the", "a link has been posted", "also like these",
             "originally", "first published", "first appeared", "was published", "was updated", "on our ", "join our ",
             "on facebook", "re also on", "get the latest", "read more from", "visit ", "password", "sign in to comment",
             "screen name", "found an error", "give us feedback", "story idea")


# ``_CTA_KEYS`` and "we're on " ("We're on Twitter"): a literal of every branch of ``_CTA_RE``, for one line
_CTA_LINE_KEYS = _CTA_KEYS + ("we're on ",)


def _may_be_cta_line(line: str, keys: tuple[str, ...] | list[str] = _CTA_LINE_KEYS) -> bool:
    """False when ``_CTA_RE`` cannot match ``line``: none of ``keys`` (``_CTA_LINE_KEYS``, or those of them that
    the text the line comes from holds) in it lower-cased (``_lower_folds_like_re``); about a fifth of the
    regex's cost per line."""
    if not _lower_folds_like_re(line):
        return True
    low = line.lower()
    return any(k in low for k in keys)


def _drop_tail_calls_to_action(text: str) -> str:
    """``_drop_calls_to_action`` on a text (its lines and their prose lengths)."""
    lines = text.split("\n")
    prose = [len(ln) if _is_prose(ln) else 0 for ln in lines]
    kept = _drop_calls_to_action(lines, prose, sum(prose), text)
    return text if kept is lines else "\n".join(kept)


def _drop_calls_to_action(lines: list[str], prose: list[int], total: int, text: str | None = None,
                          end: int | None = None) -> list[str]:
    """Drop lines (up to ``_CTA_MAX_LINE`` characters) holding a call to action or site notice
    (``_CTA_RE``) once the story has ended: at least ``_TEASER_MIN_PROSE_BEFORE`` of the page's prose lies
    above the line (``prose``: each line's length if it is prose, else 0); above that point only short
    non-prose lines (``_CTA_SHORT_LINE``) with a newsletter pitch or share notice (``_CTA_HEAD_RE``) that
    address the reader (``_CTA_ADDRESS_RE``: "Sign Up for the MACH newsletter", "A link has been posted to
    your Facebook feed."; train+dev: 5 ir_chaos pages better on 4 sites, none
    worse; one readability page worse, whose Readability.js reference keeps "SIGN UP FOR OUR NEWSLETTER").
    Lines are searched only when the text holds a literal of the regex (``_CTA_KEYS``): the regex is slow
    on a whole page; ``text``, the page the lines come from, spares joining them for that check. ``end``:
    ``_story_end(prose, total)`` when the caller has it. Returns ``lines`` itself when nothing goes."""
    if total < 300:
        return lines
    i = _story_end(prose, total) if end is None else end
    drop = set()
    low = "\n".join(lines[i:]).lower()
    keys = [k for k in _CTA_KEYS if k in low]
    if keys:
        # a line's text lower-cased is a piece of ``low`` (which joins them at "\n", in no literal): its lines are
        # tested for the literals found there only, not all 40 (about 5 us a line of a long tail)
        if "we're on " in low:
            keys.append("we're on ")
        drop = {j for j in range(i, len(lines)) if 0 < len(lines[j]) <= _CTA_MAX_LINE and _PH_OPEN not in lines[j]
                and _may_be_cta_line(lines[j], keys) and _CTA_RE.search(lines[j])}
    # literals of ``_CTA_HEAD_RE`` first, in the page's ``text`` when given (no join, no lower-casing)
    head = "\n".join(lines[:i]) if text is None else text
    if "ewsletter" in head or "EWSLETTER" in head or "posted to your" in head:
        drop.update(j for j in range(i) if 0 < len(lines[j]) <= _CTA_SHORT_LINE and not prose[j]
                    and _CTA_HEAD_RE.search(lines[j]) and _CTA_ADDRESS_RE.search(lines[j]))
    return [ln for j, ln in enumerate(lines) if j not in drop] if drop else lines


# class names and ids that mark an article's body on common publishing systems (schema.org, WordPress,
# Drupal, news CMSs); trafilatura's BODY_XPATH has the same idea
_ARTICLE_BODY_CLASSES = frozenset((
    "article-body", "article__body", "articleBody", "article-content", "article__content", "article-text",
    "articleText", "story-body", "story-content", "storytext", "entry-content", "post-content", "post-body",
    "post-entry", "td-post-content", "c-entry-content", "field-name-body", "body-text", "content-body",
    "article-body-text", "caas-body", "zn-body__paragraph"))
_ARTICLE_BODY_IDS = frozenset(("article-body", "articleBody", "story-body"))
_BULLET_STARTS = frozenset("•-*·0123456789")
_BULLET_PREFIX_RE = re.compile(r"^\s*(?:[•\-*·]|\d{1,3}[.)])\s+")


def _norm_ws(s: str) -> str:
    return " ".join(s.split())


_SCOPED_BOILERPLATE = True


def _body_selector(rw: "_Rewriter") -> str | None:
    sel = [f".{c}" for c in _ARTICLE_BODY_CLASSES & rw.class_tokens]
    sel += [f"#{i}" for i in _ARTICLE_BODY_IDS & rw.attr_values[1]]
    if not sel and "articleBody" in rw.html:  # schema.org microdata (one page scan, only when needed)
        sel.append('[itemprop="articleBody"]')
    return ", ".join(sel) if sel else None


# the main-content pass sometimes drops an inline element inside a paragraph (a dash in <strong>, a linked
# word: "growth<strong>—</strong>a" -> "growtha"), so a long line also counts as inside the body when its
# first and last characters are found there, in order and about the line's length apart
_BODY_MATCH_ENDS = 40


def _find_ends(body_text: str, key: str, pos: int) -> int:
    """Where ``key`` starts in ``body_text`` allowing small losses inside it: its first and last
    ``_BODY_MATCH_ENDS`` characters in order, spanning the line's length within 10% (+20); -1 if not."""
    head, tail = key[:_BODY_MATCH_ENDS], key[-_BODY_MATCH_ENDS:]
    first = body_text.find(head)
    if first < 0:
        return -1  # most lines outside the body: one scan
    for start in (max(pos, first), first):
        at = body_text.find(head, start)
        while at >= 0:
            end = body_text.find(tail, at + len(head))
            if end >= 0 and abs(end + len(tail) - at - len(key)) <= 0.1 * len(key) + 20:
                return at
            at = body_text.find(head, at + 1)
    return -1


# before the main-content pass, remove what lies around a marked article body (``_prune_outside_body``) unless
# the long paragraphs outside it hold more than 1 - this share of the story's text
_PRUNE_BODY_SHARE = 0.7


def _prune_outside_body(rw: "_Rewriter") -> None:
    """Before the main-content pass (whose cost grows with the page's text), on a page with a marked article
    body (``_Rewriter._article_body``): remove what ``_restrict_to_article_body`` would drop anyway, the element
    siblings of the body and of its ancestors. Kept: subtrees holding a marked body (the restriction reads every
    one), the page's first ``<h1>`` (``title``, ``article_title``) or a placeholder (code, math and tables outside
    the body stay). A page whose story runs on outside the marked body is left whole: nothing goes when its
    paragraphs of ``_STORY_PARAGRAPH_MIN``+ characters outside the body hold more than 1 - ``_PRUNE_BODY_SHARE``
    of their text and the body's. Train+dev: 6 pages of 416 better, 2 worse by at most 0.0014 (short lines outside
    the body that matched the body's text as substrings: ticker symbols, section labels, a title line)."""
    body = rw._article_body()
    doc = rw.tree.document
    if body is None or doc is None:
        return
    h1 = doc.query_selector("h1")  # ``title``'s (read later, after the rewrite)
    marked = [b for b in rw.body_elements if b is not body and doc.contains(b)]
    placeholders = bool(rw.blocks)  # a subtree's text is read only when the page has code, math or tables

    def goes(sib) -> bool:
        return not ((h1 is not None and sib.contains(h1)) or (marked and any(sib.contains(b) for b in marked))
                    or (placeholders and _PH_OPEN in (sib.text or "")))

    drop = []
    node = body
    while True:
        par = node.parent
        if par is None or par.tag in ("html", "#document", None):
            break
        sib = node.prev_element  # element siblings only: no node objects for the text between them
        while sib is not None:
            if goes(sib):
                drop.append(sib)
            sib = sib.prev_element
        sib = node.next_element
        while sib is not None:
            if goes(sib):
                drop.append(sib)
            sib = sib.next_element
        node = par
    if not drop:
        return
    outside = 0  # one <p> query for the page (one per element to remove cost half as much again)
    for p in doc.query_selector_all("p").values():
        if not body.contains(p):
            n = len(p.text or "")
            if n >= _STORY_PARAGRAPH_MIN:
                outside += n
    if outside > (1 - _PRUNE_BODY_SHARE) * (outside + len(body.text or "")):
        return
    for d in drop:
        d.decompose()


def _restrict_to_article_body(rw: "_Rewriter", out: str, prose_total: int, story_tail: bool = False) -> str:
    """When the page marks its article body (``_ARTICLE_BODY_CLASSES``/``_IDS``, ``itemprop=articleBody``)
    and that element holds most of the extracted prose, drop the extracted lines that lie outside it
    (galleries, teaser lists, sign-up boxes around the story), keeping the page's <h1>. When it marks none,
    the story's container (``_story_container``) stands in for it with ``story_tail``, and only the lines
    after the story go (teaser lists, "next article" boxes, notices): the lede and dek often sit in a
    container of their own."""
    doc = rw.tree.document
    if doc is None or prose_total < 300:
        return out
    rw._article_body()
    # read the bodies' text now, after the rewrite (inline code in backticks, placeholders), as extracted
    texts = [b.text or "" for b in rw.body_elements if doc.contains(b)]
    if texts:
        return _restrict_to_texts(out, texts, prose_total, rw.title())
    cont = _story_container(doc) if story_tail else None
    if cont is None:
        return out
    return _drop_after_story(out, _norm_ws(cont.text or ""), prose_total, rw.title())


def _line_key(line: str) -> str:
    """An extracted line as it reads in an element's whitespace-normalised text (list bullets off)."""
    st = line.strip()
    if st and st[0] in _BULLET_STARTS:
        st = _BULLET_PREFIX_RE.sub("", st)
    return _norm_ws(st) if "  " in st or "\t" in st or "\xa0" in st else st


def _drop_after_story(out: str, story_text: str, prose_total: int, title: str) -> str:
    """Drop the lines after the last one found in ``story_text`` (searched from the end: a few lookups)
    when the lines up to it hold 70%+ of the extracted prose; blank lines, placeholders and the ``title``
    line stay."""
    lines = out.split("\n")
    last = -1
    for i in range(len(lines) - 1, -1, -1):
        key = _line_key(lines[i])
        if key and (key in story_text or len(key) >= 2 * _BODY_MATCH_ENDS and _find_ends(story_text, key, 0) >= 0):
            last = i
            break
    if last < 0 or last == len(lines) - 1 or sum(len(ln) for ln in lines[:last + 1] if _is_prose(ln)) < 0.7 * prose_total:
        return out
    return "\n".join(lines[:last + 1] + [ln for ln in lines[last + 1:]
                                          if not ln.strip() or _PH_OPEN in ln or (title and _norm_ws(ln) == title)])


_STORY_PARAGRAPH_MIN = 100  # characters of a <p> that counts as story text
_STORY_LEVELS = 4  # a paragraph's text counts for its parent and that many ancestors in all
_STORY_SHARE = 0.8


def _story_container(doc):
    """The smallest element (a paragraph's parent up to ``_STORY_LEVELS`` ancestors up) that holds at least
    ``_STORY_SHARE`` of the text of the page's paragraphs of ``_STORY_PARAGRAPH_MIN``+ characters; None
    when that is ``<body>`` or no paragraph is that long. One ``<p>`` query per page."""
    parents: dict = {}
    total = 0
    for p in doc.query_selector_all("p").values():
        n = len(p.text or "")
        if n >= _STORY_PARAGRAPH_MIN:
            total += n
            par = p.parent
            parents[par] = parents.get(par, 0) + n
    score = dict(parents)
    for par, n in parents.items():  # distinct parents only: each node looked up costs a Python object
        for _ in range(_STORY_LEVELS - 1):
            par = par.parent if par is not None else None
            if par is None:
                break
            score[par] = score.get(par, 0) + n
    best, best_n = None, 0
    for el, n in score.items():
        if n >= _STORY_SHARE * total and (best is None or n < best_n):
            best, best_n = el, n
    if best is None or (best.tag or "").lower() in ("body", "html"):
        return None
    return best


def _restrict_to_texts(out: str, texts: list[str], prose_total: int, title: str) -> str:
    """Drop the lines of ``out`` not found in ``texts`` when the lines found hold 70%+ of the extracted
    prose; blank lines, placeholders and the ``title`` line stay."""
    body_text = " \n ".join(_norm_ws(t) for t in texts)
    lines = out.split("\n")
    inside = []
    prose_in = 0
    pos = 0  # extracted lines follow document order: look after the previous hit first (linear, not
    # lines x body length on long pages)
    for ln in lines:
        key = _line_key(ln)
        ok = False
        if key:
            at = body_text.find(key, pos)
            if at < 0:  # none starts at pos or later: the first one, if any, ends before pos + len(key) - 1
                at = body_text.find(key, 0, pos + len(key) - 1)
            if at < 0 and len(key) >= 2 * _BODY_MATCH_ENDS:
                at = _find_ends(body_text, key, pos)
            if at >= 0:
                ok, pos = True, at
        inside.append(ok)
        if ok and _is_prose(ln):
            prose_in += len(ln)
    if prose_in < 0.7 * prose_total:
        return out
    kept = [ln for ln, ok in zip(lines, inside)
            if ok or not ln.strip() or _PH_OPEN in ln or (title and _norm_ws(ln) == title)]
    return "\n".join(kept)


def extract_marked_lines(html: str | bytes) -> list[str]:
    """Non-empty lines of the main-content text before the line classifier, link text marked with
    ``blocks.LINK_OPEN``/``LINK_CLOSE``, placeholder lines (code, math, tables) left out: the classifier's
    training input (``benchmarks/train_web_blocks.py``)."""
    raw = _extract_raw(html, True)
    if raw is None:
        return []
    return [ln for ln in raw[0].split("\n") if ln.strip() and not _has_placeholder(ln)]


def extract_html_detailed(html: str | bytes, url: str | None = None, *, main_content: bool = True,
                          block_filter: bool = False, story_tail: bool = False,
                          time_limit_s: float | None = DEFAULT_TIME_LIMIT_S) -> tuple[str, dict]:
    """``extract_html`` plus counters ``{"n_code_blocks", "n_inline_code", "n_math", "n_tables"}``.
    ``block_filter`` drops chrome lines with the line classifier of ``assay.stages.web.blocks`` (off by
    default: +0.005 dev F1 for ~20% more CPU, which breaks the 5x-trafilatura speed target; see bench_web).
    ``story_tail`` drops the lines after the story on pages that mark no article body (``_story_container``;
    off by default: train+dev F1 ir_chaos +0.0015/+0.0019, scrapinghub +0.0007, readability +0.0012, for
    ~3-4% more CPU, which took the same-run speed ratio on scrapinghub and readability below 5x; since the
    caption and call-to-action rules only +0.0004 on ir_chaos train+dev, 19 pages better and 3 worse, one by
    0.10 (technobuffalo: the story goes on in a container after a gallery), and -0.0007 on ir_chaos dev;
    see bench_web's ``assay+tail``). Raises ``ExtractTooDeep`` / ``ExtractTimeout`` (``ExtractLimitError.reason`` is the reject reason)."""
    use_filter = main_content and block_filter
    raw = _extract_raw(html, main_content, time_limit_s, story_tail)
    if raw is None:
        return "", dict(_EMPTY_STATS)
    out, rw = raw
    if use_filter:
        out = strip_marks(filter_lines(out, keep_line=_has_placeholder))
    stats = {"n_code_blocks": rw.n_code_blocks, "n_inline_code": rw.n_inline_code, "n_math": rw.n_math,
             "n_tables": rw.n_tables}
    # count only what survived extraction
    kept = {int(i) for i in _PH_RE.findall(out)} if _PH_OPEN in out else ()  # (most pages have none: no regex scan)
    result = _restore(out, rw)
    stats["n_code_blocks_kept"] = sum(1 for i in kept if rw.blocks[i].startswith("```"))
    stats["n_math_kept"] = sum(1 for i in kept if rw.blocks[i].startswith("$"))
    return result, stats


def extract_html(html: str | bytes, url: str | None = None) -> str:
    """Main text of an HTML page as Markdown-ish plain text, keeping code blocks (fenced, verbatim),
    inline code, math (LaTeX) and tables. Returns "" for empty pages and for pages over a limit (nesting
    deeper than ``MAX_DEPTH``, over the time limit); ``extract_html_detailed`` raises those as
    ``ExtractLimitError`` with a reason code (the ``HtmlExtractor`` step records it)."""
    try:
        return extract_html_detailed(html, url)[0]
    except ExtractLimitError:
        return ""


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
    an extractor crash -> ``reject_reason="web_extraction_error"``; tag nesting deeper than ``MAX_DEPTH``
    -> ``web_extract_too_deep``; over ``time_limit_s`` -> ``web_extract_timeout``.

    Args:
        backend: ``resiliparse`` (default, keeps code/math) or ``trafilatura`` (FineWeb settings).
        main_content: resiliparse main-content (boilerplate) detection.
        max_html_chars: HTML longer than this is cut before parsing (giant pages).
        time_limit_s: per-document limit on the extracting thread's CPU time, seconds (None: no limit).
    """

    name = "🧹 assay HTML extract"
    type = "✂️ - EXTRAC"

    def __init__(self, backend: str = "resiliparse", main_content: bool = True, max_html_chars: int = 5_000_000,
                 time_limit_s: float | None = DEFAULT_TIME_LIMIT_S):
        super().__init__()
        self.time_limit_s = time_limit_s
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
                        text, st = extract_html_detailed(html, meta.get("url"), main_content=self.main_content,
                                                         time_limit_s=self.time_limit_s)
                    else:
                        text = extract_html_trafilatura(html, meta.get("url"))
                        st = {"n_code_blocks_kept": text.count("```") // 2, "n_math_kept": 0, "n_tables": 0,
                              "n_inline_code": 0}
                except ExtractLimitError as e:
                    text, st = "", None
                    meta["reject_reason"] = e.reason
                    meta["extract__error"] = str(e)[:300]
                    self.stat_update(f"reject/{e.reason}")
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
