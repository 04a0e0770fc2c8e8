"""Small PDFs built with pymupdf for the PDF tests (no data copied from ../shared/data)."""

from __future__ import annotations

import pymupdf

LOREM = (
    "The committee reviewed the annual report on regional water supply and found that consumption "
    "rose by four percent while losses in the distribution network fell. Engineers replaced old "
    "pipes in three districts and installed meters in most new buildings. The report recommends "
    "further investment in storage capacity, better forecasting of summer demand, and a public "
    "campaign that explains how households can save water during dry months."
)


def page_text(i: int) -> str:
    return f"Section {i + 1}. " + LOREM + f" Page marker {i + 1} ends here."


def text_pdf(path, texts: list[str], *, fontsize: float = 11) -> str:
    d = pymupdf.open()
    for t in texts:
        p = d.new_page(width=595, height=842)
        p.insert_textbox(pymupdf.Rect(50, 50, 545, 792), t, fontsize=fontsize)
    d.save(str(path))
    d.close()
    return str(path)


def two_column_pdf(path, left: list[str], right: list[str], title: str = "A Title Spanning Both Columns") -> str:
    """Title across the page, then two columns of paragraphs (right column written first)."""
    d = pymupdf.open()
    p = d.new_page(width=595, height=842)
    p.insert_textbox(pymupdf.Rect(50, 40, 545, 70), title, fontsize=14)
    for x0, x1, paras in ((310, 545, right), (50, 285, left)):
        y = 90
        for para in paras:
            p.insert_textbox(pymupdf.Rect(x0, y, x1, y + 200), para, fontsize=9)
            y += 220
    d.save(str(path))
    d.close()
    return str(path)


def scanned_pdf(path, texts: list[str], *, dpi: int = 100, invisible_layer: list[str] | None = None,
                blank_pages: int = 0) -> str:
    """Image-only pages (rendered text), optional invisible text layer, optional blank pages."""
    src = pymupdf.open()
    for t in texts:
        p = src.new_page(width=595, height=842)
        p.insert_textbox(pymupdf.Rect(50, 50, 545, 792), t, fontsize=12)
    out = pymupdf.open()
    for i, p in enumerate(src):
        pix = p.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
        np_ = out.new_page(width=595, height=842)
        np_.insert_image(np_.rect, stream=pix.tobytes("png"))
        if invisible_layer:
            np_.insert_textbox(pymupdf.Rect(50, 50, 545, 792), invisible_layer[i], fontsize=12, render_mode=3)
    for _ in range(blank_pages):
        out.new_page(width=595, height=842)
    out.save(str(path))
    out.close()
    src.close()
    return str(path)


def encrypted_pdf(path) -> str:
    d = pymupdf.open()
    p = d.new_page()
    p.insert_text((72, 72), "secret text")
    d.save(str(path), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    d.close()
    return str(path)


ZERO_PAGE_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)
