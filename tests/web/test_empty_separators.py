"""An empty element whose class names a separator is drawn by the stylesheet (gi-docgen's heading path
``Json ▸ Reader ▸ get_int_value``): it must not glue the words around it."""
import pytest

from assay.stages.web.extract import extract_html

_PROSE = ("<p>Retrieves the integer value of the current position of the reader. The reader must be "
          "positioned on a scalar node holding an integer, or the call fails and sets the error.</p>")


def _page(heading: str) -> str:
    return f"<html><body><section id='main'><header><h1>{heading}</h1></header>{_PROSE}</section></body></html>"


_GI = ('<a href="index.html">Json</a><span class="sep"></span><a href="class.Reader.html">Reader</a>'
       '<span class="sep"></span>get_int_value')


def test_empty_separator_reads_as_space():
    out = extract_html(_page(_GI))
    assert "Json Reader get_int_value" in out.splitlines()


def test_other_empty_spans_and_separators_with_text_unchanged():
    """An empty span of another class is left alone (it draws nothing we know of), and so is a separator
    element that carries its own text."""
    out = extract_html(_page(_GI.replace('class="sep"', 'class="icon"')))
    assert "JsonReaderget_int_value" in out.splitlines()
    out = extract_html(_page(_GI.replace('<span class="sep"></span>', '<span class="sep">.</span>')))
    assert "Json.Reader.get_int_value" in out.splitlines()


@pytest.mark.slow
def test_gi_docgen_method_page(debian_doc):
    root = debian_doc("libjson-glib-doc")
    page = next(root.rglob("method.Reader.get_int_value.html"))
    out = extract_html(page.read_bytes())
    assert out.splitlines()[0] == "Json Reader get_int_value"
    assert "JsonReaderget_int_value" not in out
