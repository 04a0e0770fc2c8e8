"""A link to an entry's source (``a.srclink``: gi-docgen's "[src]", rustdoc's "source") is page chrome and goes;
a link of another class with the same text stays."""
import pytest

from assay.stages.web.extract import extract_html

_BODY = ("<p>Retrieves the integer value of the current position of the reader. The reader must be positioned on a "
         "scalar node holding an integer, or the call fails and sets the error.</p>")


def _page(link_class: str) -> str:
    return (f'<html><body><section id="main"><h4 id="description">Description <a class="{link_class}" '
            f'href="https://example.org/json-reader.c#L894">[src]</a></h4>{_BODY}</section></body></html>')


def test_source_link_dropped_other_class_kept():
    assert "Description" in extract_html(_page("srclink")).splitlines()
    assert "Description [src]" in extract_html(_page("external")).splitlines()


@pytest.mark.slow
def test_gi_docgen_section_headings(debian_doc):
    page = next(debian_doc("libjson-glib-doc").rglob("method.Reader.get_int_value.html"))
    lines = extract_html(page.read_bytes()).splitlines()
    assert "Declaration" in lines and "Description" in lines
    assert not any("[src]" in ln for ln in lines)
