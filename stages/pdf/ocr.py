"""VLM OCR of the pages the router sent to OCR, through datatrove's inference runner.

Backends (``server``):

* ``"none"`` (default): no model. Pages routed to OCR fall back to their text layer, or end with the
  page reason ``pdf_ocr_unavailable`` when the layer has no usable text; the step records the stat
  ``ocr_backend_unavailable`` (per document that wanted OCR) so the run summary says so.
* ``"endpoint"``: an existing OpenAI-compatible server (``endpoint="http://host:port"``, ``model`` =
  served model name); datatrove's ``EndpointServer``.
* ``"vllm"``: the step starts ``vllm serve <model>`` itself (datatrove's ``VLLMServer``; needs
  ``pip install -e .[ocr]`` and a GPU), e.g. ``model: allenai/olmOCR-2-7B-1025-FP8`` or a local path.

Per page: render with pymupdf (longest side ``max_side``, PNG for text/line art, JPEG for
image-dominated pages or oversized PNGs), olmOCR-style prompt (Markdown, LaTeX math, HTML tables,
YAML front matter with rotation fields), then

* content retries: when the answer has an artifact (``assay.stages.pdf.artifacts.detect_artifacts``:
  truncation, loops, wrong page vs a trustworthy text layer, ...) the page is retried with the next
  temperature of ``temperatures`` (rising ladder), up to ``max_attempts`` answers;
* rotation correction: front matter ``is_rotation_valid: false`` + ``rotation_correction: 90|180|270``
  re-renders the page rotated and asks again (``rotation_retries`` times, not counted as content
  attempts);
* transport retries: HTTP 5xx, connection errors and timeouts (``request_timeout_s``) are retried
  ``http_retries`` times with exponential backoff and then count as one failed attempt of that page.
  datatrove's ``InferenceRunner._send_request`` re-raises ``ServerError`` on one HTTP 500, which
  aborts the whole task (``_handle_record`` re-raises it), and its raw localhost client has no
  timeout. ``_ResilientRunner._send_request`` below replaces it (the one place we extend datatrove);
* fallback: after the last attempt the page keeps its text layer (status ``fallback``) or, without a
  usable layer, the reason ``pdf_ocr_failed``.

Every page ends as ``ocr``, ``text`` (router chose the text layer), ``fallback``, or a reason code
(``pdf_ocr_failed``, ``pdf_ocr_unavailable``); ``pdf__page_status`` lists them. Memory is bounded by
``max_docs_in_flight`` (documents inside the runner), ``max_pages_in_flight`` (rendered images
alive) and ``max_requests_in_flight``.

Signals: ``pdf__page_status`` (JSON), ``pdf__ocr_backend``, ``pdf__ocr_ok_pages``,
``pdf__ocr_fallback_pages``, ``pdf__ocr_failed_pages``, ``pdf__ocr_requests``,
``pdf__ocr_retried_pages``, ``pdf__ocr_rotated_pages``, ``pdf__failed_page_share`` ((fallback +
failed) / pages), ``pdf__empty_page_share``, ``pdf__ocr_languages`` (front-matter languages).
A document whose assembled text is empty gets ``reject_reason = "pdf_no_text"``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import queue
import re
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from assay.stages.pdf import _isolate
from assay.stages.pdf._pdfdoc import OCR_PAGES, PAGE_SEP, open_pdf, page_texts, pdf_media, pdf_source, text_stats

OLMOCR_PROMPT = (
    "Attached is one page of a document that you must process. Just return the plain text representation of "
    "this document as if you were reading it naturally. Convert equations to LaTeX and tables to HTML.\n"
    "If there are any figures or charts, label them with the following markdown syntax "
    "![Alt text describing the contents of the figure](page_startx_starty_width_height.png)\n"
    "Return your output as markdown, with a front matter section on top specifying values for the "
    "primary_language, is_rotation_valid, rotation_correction, is_table, and is_diagram parameters."
)
DEFAULT_TEMPERATURES = (0.1, 0.2, 0.4, 0.6, 0.8)

STATUS_TEXT = "text"
STATUS_OCR = "ocr"
STATUS_FALLBACK = "fallback"
REASON_OCR_FAILED = "pdf_ocr_failed"
REASON_OCR_UNAVAILABLE = "pdf_ocr_unavailable"
REASON_NO_TEXT = "pdf_no_text"
PDF_OCR_REASON_CODES = (REASON_OCR_FAILED, REASON_OCR_UNAVAILABLE, REASON_NO_TEXT)

_FRONT_RE = re.compile(r"^\s*---\s*\n(.*?)\n---\s*(?:\n|$)", re.DOTALL)


# ----------------------------------------------------------------------------------------------
# plain helpers
# ----------------------------------------------------------------------------------------------
def render_page_image(src: bytes | str, page_no: int, *, max_side: int = 1288, rotate: int = 0,
                      image_format: str = "auto", image_coverage: float | None = None,
                      jpeg_quality: int = 85, max_png_bytes: int = 1_500_000) -> tuple[bytes, str, float]:
    """Render one page: ``(image bytes, mime type, ink share)``; deterministic for equal inputs."""
    import numpy as np
    import pymupdf

    with _isolate.FORK_LOCK:
        d = open_pdf(src)
        try:
            page = d.load_page(page_no)
            r = page.rect
            zoom = float(max_side) / max(r.width, r.height, 1.0)
            mat = pymupdf.Matrix(zoom, zoom).prerotate(rotate % 360)
            pix = page.get_pixmap(matrix=mat, alpha=False)
            a = np.frombuffer(pix.samples, dtype=np.uint8)
            ink = float((a < 200).mean()) if a.size else 0.0
            fmt = image_format
            if fmt == "auto":
                fmt = "jpeg" if (image_coverage or 0.0) >= 0.5 else "png"
            if fmt == "png":
                data = pix.tobytes("png")
                if len(data) > max_png_bytes:
                    fmt = "jpeg"
            if fmt == "jpeg":
                data = pix.tobytes("jpg", jpg_quality=jpeg_quality)
        finally:
            d.close()
    return data, ("image/png" if fmt == "png" else "image/jpeg"), ink


def build_payload(image: bytes, mime: str, *, temperature: float, max_tokens: int, prompt: str = OLMOCR_PROMPT) -> dict:
    b64 = base64.b64encode(image).decode("ascii")
    return {
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": prompt},
            {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{b64}"}},
        ]}],
        "max_tokens": int(max_tokens),
        "temperature": float(temperature),
    }


def parse_olmocr_output(text: str) -> tuple[dict[str, Any], str]:
    """Split the olmOCR YAML front matter from the Markdown body."""
    m = _FRONT_RE.match(text or "")
    if not m:
        return {}, (text or "").strip()
    fm: dict[str, Any] = {}
    for line in m.group(1).splitlines():
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        v = v.strip().strip("'\"")
        if v.lower() in ("true", "false"):
            fm[k.strip()] = v.lower() == "true"
        elif re.fullmatch(r"-?\d+", v):
            fm[k.strip()] = int(v)
        elif v.lower() in ("null", "none", ""):
            fm[k.strip()] = None
        else:
            fm[k.strip()] = v
    return fm, text[m.end():].strip()


def usable_text(text: str | None) -> bool:
    if not text:
        return False
    st = text_stats(text)
    return st["words"] >= 3 and st["chars"] >= 10 and st["garb"] < 0.5


def finalize_document(doc: Document, page_results: dict[int, dict], backend: str) -> dict[str, int]:
    """Assemble the document text from text-layer pages and OCR results; write the OCR signals.

    Returns counts (for stats). ``page_results`` maps page index -> result of ``PdfOcr._ocr_page``
    (``{"status": "ocr", "text": ...}`` or ``{"status": "failed", ...}``); OCR pages missing from it
    had no backend.
    """
    layer = page_texts(doc) or []
    routes = json.loads(doc.metadata.get("pdf__route") or "[]") or ["text"] * len(layer)
    n = len(layer)
    statuses: list[str] = []
    finals: list[str] = []
    c = {"ok": 0, "fallback": 0, "failed": 0, "unavailable": 0, "requests": 0, "retried": 0, "rotated": 0}
    langs: list[str] = []
    ocr_meta: dict[int, dict] = {}
    for i in range(n):
        lt = layer[i] if i < len(layer) else ""
        if i >= len(routes) or routes[i] != "ocr":
            statuses.append(STATUS_TEXT)
            finals.append(lt)
            continue
        res = page_results.get(i)
        if res is None:
            if usable_text(lt):
                statuses.append(STATUS_FALLBACK)
                finals.append(lt)
                c["fallback"] += 1
            else:
                statuses.append(REASON_OCR_UNAVAILABLE)
                finals.append("")
                c["unavailable"] += 1
            continue
        c["requests"] += int(res.get("requests", 0))
        c["retried"] += 1 if res.get("content_attempts", 0) > 1 else 0
        c["rotated"] += 1 if res.get("rotation") else 0
        if res.get("status") == STATUS_OCR:
            statuses.append(STATUS_OCR)
            finals.append(res["text"])
            c["ok"] += 1
            if res.get("language"):
                langs.append(str(res["language"]))
        elif usable_text(lt):
            statuses.append(STATUS_FALLBACK)
            finals.append(lt)
            c["fallback"] += 1
        else:
            statuses.append(REASON_OCR_FAILED)
            finals.append("")
            c["failed"] += 1
        ocr_meta[i] = {**res, "final_text": finals[-1]}
    m = pdf_media(doc)
    if m is not None:
        m.metadata[OCR_PAGES] = ocr_meta
    doc.text = PAGE_SEP.join(t.strip() for t in finals if t and t.strip())
    md = doc.metadata
    md["pdf__page_status"] = json.dumps(statuses)
    md["pdf__ocr_backend"] = backend
    md["pdf__ocr_ok_pages"] = c["ok"]
    md["pdf__ocr_fallback_pages"] = c["fallback"]
    md["pdf__ocr_failed_pages"] = c["failed"] + c["unavailable"]
    md["pdf__ocr_requests"] = c["requests"]
    md["pdf__ocr_retried_pages"] = c["retried"]
    md["pdf__ocr_rotated_pages"] = c["rotated"]
    md["pdf__failed_page_share"] = round((c["fallback"] + c["failed"] + c["unavailable"]) / n, 4) if n else 0.0
    md["pdf__empty_page_share"] = round(sum(1 for t in finals if not t.strip()) / n, 4) if n else 0.0
    md["pdf__ocr_languages"] = ",".join(sorted(set(langs)))
    if not doc.text.strip() and not md.get("reject_reason"):
        md["reject_reason"] = REASON_NO_TEXT
    return c


# ----------------------------------------------------------------------------------------------
# datatrove runner extension
# ----------------------------------------------------------------------------------------------
def _make_runner_class():
    from datatrove.pipeline.inference.run_inference import InferenceRunner
    from datatrove.pipeline.inference.types import InferenceError, InferenceResult, ServerError

    class _ResilientRunner(InferenceRunner):
        """InferenceRunner whose transport layer retries 5xx / timeouts instead of aborting the task.

        Replaces ``InferenceRunner._send_request`` (datatrove 0.10.1: one HTTP 500 raises ServerError,
        which ``_handle_record`` re-raises and the task dies; the localhost raw client never times
        out). After ``http_retries`` failed tries the request raises ``InferenceError`` and the page
        falls back; a permanently failed server (start-up failure) fails fast.
        """

        http_retries: int = 3
        http_backoff_s: float = 1.0
        request_timeout_s: float | None = 120.0

        async def _send_request(self, server, payload: dict, semaphore: asyncio.Semaphore) -> InferenceResult:
            payload["model"] = self.config.model_name_or_path
            for key, value in self.config.default_generation_params.items():
                payload.setdefault(key, value)
            kind = "unknown"
            for attempt in range(self.http_retries + 1):
                ready = server._server_ready
                if ready.done() and ready.exception() is not None:
                    self.stat_update("http/server_down", unit="request")
                    raise InferenceError(None, f"server unavailable: {ready.exception()}", payload=None)
                async with semaphore:
                    try:
                        coro = server.make_request(dict(payload))
                        if self.request_timeout_s:
                            response = await asyncio.wait_for(coro, timeout=self.request_timeout_s)
                        else:
                            response = await coro
                        choice = response["choices"][0]
                        usage = response.get("usage") or {}
                        self.stat_update("successful_requests", unit="request")
                        self.stat_update("prompt_tokens", value=usage.get("prompt_tokens", 0), unit="request")
                        self.stat_update("completion_tokens", value=usage.get("completion_tokens", 0), unit="request")
                        msg = choice.get("message") or {}
                        text = (msg.get("content") if self.config.use_chat else choice.get("text")) or ""
                        return InferenceResult(text=text, finish_reason=choice.get("finish_reason") or "stop",
                                               usage=usage, reasoning=msg.get("reasoning_content") or "")
                    except asyncio.CancelledError:
                        raise
                    except asyncio.TimeoutError:
                        kind = "timeout"
                    except ServerError:
                        kind = "http_5xx"
                    except InferenceError as e:
                        err = str(e.error)
                        if "BadRequestError" in err:
                            self.stat_update("http/bad_request", unit="request")
                            raise
                        kind = "http_5xx" if re.search(r"status 5\d\d", err) else "http_error"
                    except (ConnectionError, OSError):
                        kind = "connection"
                    except (KeyError, IndexError, TypeError, ValueError):
                        kind = "bad_response"
                self.stat_update(f"http/{kind}", unit="request")
                if attempt < self.http_retries:
                    await asyncio.sleep(self.http_backoff_s * (2 ** attempt))
            self.stat_update("failed_requests", unit="request")
            raise InferenceError(None, f"{kind} after {self.http_retries + 1} tries", payload=None)

    return _ResilientRunner


class _Collector:
    """Stands in for the runner's DiskWriter: finalises each document and hands it to the step."""

    def __init__(self, finalize, out_q: "queue.Queue"):
        self.finalize = finalize
        self.out_q = out_q

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, document: Document, rank: int = 0, chunk_index: int | None = None, **kwargs):
        self.out_q.put(("doc", self.finalize(document)))

    def close_file(self, *args, **kwargs):
        pass


_SENTINEL = ("end", None)


class PdfOcr(PipelineStep):
    """OCR pages routed to ``ocr`` by ``PdfRouter`` with a VLM; assemble document text from pages.

    Args:
        server: ``"none"`` | ``"endpoint"`` | ``"vllm"``.
        endpoint: base URL of an OpenAI-compatible server (``server="endpoint"``).
        model: served model name (endpoint) or model path / hub id (vllm).
        max_side: longest side of the rendered page in pixels.
        image_format: ``"auto"`` (PNG, JPEG for image-dominated pages), ``"png"`` or ``"jpeg"``.
        max_tokens: generation budget per page.
        temperatures: rising temperature ladder for content retries.
        max_attempts: answers per page before falling back.
        rotation_retries: rotation-corrected re-renders per page.
        request_timeout_s, http_retries, http_backoff_s: transport retry policy.
        max_docs_in_flight, max_pages_in_flight, max_requests_in_flight: memory / concurrency bounds.
        render_workers: page-rendering processes (spawned); 0 renders in a thread of this process.
        render_timeout_s: a page whose render takes longer fails its OCR (text-layer fallback).
        check_text_layer: compare answers with a trustworthy text layer (catches wrong-page answers).
        model_max_context, model_kwargs, server_log_folder, server_start_timeout_s: vLLM server settings.
        endpoint_ready_timeout_s: how long to wait for an endpoint's ``/v1/models`` before its pages fall back.
        api_key: bearer token for remote endpoints (https endpoints need the ``openai`` package).
    """

    name = "🔍 PDF VLM OCR"
    type = "🔢 - SIGNALS"

    def __init__(
        self,
        server: str = "none",
        endpoint: str | None = None,
        model: str | None = None,
        max_side: int = 1288,
        image_format: str = "auto",
        max_tokens: int = 4096,
        temperatures: list[float] | None = None,
        max_attempts: int = 4,
        rotation_retries: int = 1,
        request_timeout_s: float = 180.0,
        http_retries: int = 3,
        http_backoff_s: float = 1.0,
        max_docs_in_flight: int = 32,
        max_pages_in_flight: int = 256,
        max_requests_in_flight: int = 256,
        render_workers: int = 4,
        render_timeout_s: float = 120.0,
        check_text_layer: bool = True,
        prompt: str | None = None,
        model_max_context: int = 16384,
        model_kwargs: dict | None = None,
        server_log_folder: str | None = None,
        server_start_timeout_s: float = 900.0,
        endpoint_ready_timeout_s: float = 30.0,
        api_key: str | None = None,
    ):
        super().__init__()
        if server not in ("none", "endpoint", "vllm"):
            raise ValueError(f"server must be none|endpoint|vllm, got {server!r}")
        if server == "endpoint" and not endpoint:
            raise ValueError("server='endpoint' needs endpoint='http://host:port'")
        if server == "vllm" and not model:
            raise ValueError("server='vllm' needs model=<path or hub id>")
        self.server = server
        self.endpoint = endpoint
        self.model = model or "olmocr"
        self.max_side = int(max_side)
        self.image_format = image_format
        self.max_tokens = int(max_tokens)
        self.temperatures = tuple(float(t) for t in (temperatures or DEFAULT_TEMPERATURES))
        self.max_attempts = int(max_attempts)
        self.rotation_retries = int(rotation_retries)
        self.request_timeout_s = float(request_timeout_s) if request_timeout_s else None
        self.http_retries = int(http_retries)
        self.http_backoff_s = float(http_backoff_s)
        self.max_docs_in_flight = int(max_docs_in_flight)
        self.max_pages_in_flight = int(max_pages_in_flight)
        self.max_requests_in_flight = int(max_requests_in_flight)
        self.render_workers = int(render_workers)
        self.render_timeout_s = float(render_timeout_s)
        self.check_text_layer = bool(check_text_layer)
        self.prompt = prompt or OLMOCR_PROMPT
        self.model_max_context = int(model_max_context)
        self.model_kwargs = dict(model_kwargs or {})
        self.server_log_folder = server_log_folder
        self.server_start_timeout_s = float(server_start_timeout_s)
        self.endpoint_ready_timeout_s = float(endpoint_ready_timeout_s)
        self.api_key = api_key

    # -- per page ---------------------------------------------------------------------------------
    async def _render(self, loop, pool, src, i: int, rotation: int, icov):
        kwargs = dict(max_side=self.max_side, rotate=rotation, image_format=self.image_format, image_coverage=icov)
        try:
            return await asyncio.wait_for(loop.run_in_executor(pool, partial(render_page_image, src, i, **kwargs)),
                                          timeout=self.render_timeout_s)
        except BrokenProcessPool:
            # the worker died (hostile page, OOM): render this page in-process instead of failing the stage
            return await loop.run_in_executor(None, partial(render_page_image, src, i, **kwargs))

    async def _ocr_page(self, doc: Document, i: int, generate, *, page_sem, render_pool, loop) -> dict:
        from assay.stages.pdf.artifacts import detect_artifacts, trustworthy_text_layer

        src = pdf_source(doc)
        layer = page_texts(doc) or []
        lt = layer[i] if i < len(layer) else ""
        ref = lt if (self.check_text_layer and trustworthy_text_layer(lt)) else None
        feats = {}
        try:
            feats = json.loads(doc.metadata.get("pdf__pages") or "[]")[i]
        except (IndexError, ValueError, TypeError):
            pass
        rotation = 0
        rot_left = self.rotation_retries
        history: list[dict] = []
        requests = 0
        content_attempts = 0
        ink = None
        rendered: tuple | None = None  # (rotation, image, mime): reused across content retries
        async with page_sem:
            while content_attempts < self.max_attempts:
                temp = self.temperatures[min(content_attempts, len(self.temperatures) - 1)]
                if rendered is None or rendered[0] != rotation:
                    rendered = None
                    try:
                        img, mime, ink = await self._render(loop, render_pool, src, i, rotation, feats.get("icov"))
                    except Exception as e:  # noqa: BLE001 - page cannot be rendered: no OCR possible
                        history.append({"error": f"render: {type(e).__name__}: {e}"[:200]})
                        break
                    rendered = (rotation, img, mime)
                payload = build_payload(rendered[1], rendered[2], temperature=temp, max_tokens=self.max_tokens,
                                        prompt=self.prompt)
                requests += 1
                content_attempts += 1
                try:
                    res = await generate(payload)
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # noqa: BLE001 - transport gave up (after its own retries)
                    history.append({"t": temp, "error": str(getattr(e, "error", e))[:120]})
                    continue
                fm, body = parse_olmocr_output(res.text)
                corr = fm.get("rotation_correction")
                if fm.get("is_rotation_valid") is False and corr in (90, 180, 270) and rot_left > 0:
                    rot_left -= 1
                    content_attempts -= 1  # a rotation fix is not a content failure
                    rotation = (rotation + int(corr)) % 360
                    history.append({"t": temp, "rotate": corr})
                    continue
                fired = detect_artifacts(body, finish_reason=res.finish_reason, text_layer=ref, ink=ink)
                history.append({"t": temp, "finish": res.finish_reason, "artifacts": fired})
                if not fired:
                    return {"status": STATUS_OCR, "text": body, "finish_reason": res.finish_reason, "ink": ink,
                            "requests": requests, "content_attempts": content_attempts, "rotation": rotation,
                            "language": fm.get("primary_language"), "history": history}
        return {"status": "failed", "text": None, "ink": ink, "requests": requests,
                "content_attempts": content_attempts, "rotation": rotation, "history": history}

    async def _rollout(self, doc: Document, generate, page_sem=None, render_pool=None, **_) -> dict:
        routes = json.loads(doc.metadata.get("pdf__route") or "[]")
        todo = [i for i, r in enumerate(routes) if r == "ocr"]
        if doc.metadata.get("reject_reason") or not todo:
            return {"pages": {}}
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(*(self._ocr_page(doc, i, generate, page_sem=page_sem, render_pool=render_pool,
                                                        loop=loop) for i in todo), return_exceptions=True)
        pages = {}
        for i, r in zip(todo, results):
            if isinstance(r, BaseException):
                if isinstance(r, asyncio.CancelledError):
                    raise r
                r = {"status": "failed", "text": None, "requests": 0, "content_attempts": 0,
                     "history": [{"error": f"{type(r).__name__}: {r}"[:200]}]}
            pages[i] = r
        return {"pages": pages}

    # -- finishing ---------------------------------------------------------------------------------
    def _finish(self, doc: Document, page_results: dict[int, dict], backend: str) -> Document:
        if doc.metadata.get("reject_reason") or doc.metadata.get("source", "pdf") != "pdf" or "pdf__pages" not in doc.metadata:
            return doc
        c = finalize_document(doc, page_results, backend)
        if c["unavailable"] or (backend == "none" and c["fallback"]):
            self.stat_update("ocr_backend_unavailable")
        for k in ("ok", "fallback", "failed", "unavailable", "retried", "rotated"):
            if c[k]:
                self.stat_update(f"pages/{k}", value=c[k])
        if c["requests"]:
            self.stat_update("ocr_requests", value=c["requests"])
        if doc.metadata.get("reject_reason") == REASON_NO_TEXT:
            self.stat_update(f"reject/{REASON_NO_TEXT}")
        return doc

    def _finalize_from_runner(self, doc: Document) -> Document:
        results = doc.metadata.pop("ocr_rollouts", None) or [{}]
        doc.metadata.pop("__no_rollouts_remove", None)
        pages = (results[0] or {}).get("pages", {}) if results else {}
        return self._finish(doc, pages, self.server)

    @staticmethod
    def _ensure_routes(data):
        """Route pages here when no PdfRouter ran before this step (needs PdfTextLayer's features)."""
        from assay.stages.pdf.routing import route_features

        for doc in data:
            md = doc.metadata
            if "pdf__route" not in md and md.get("pdf__pages") and not md.get("reject_reason"):
                routes, _ = route_features(json.loads(md["pdf__pages"]), bool(md.get("pdf__scanner_hint")))
                md["pdf__route"] = json.dumps(routes)
                md["pdf__ocr_pages"] = routes.count("ocr")
                md["pdf__ocr_share"] = round(routes.count("ocr") / len(routes), 4) if routes else 0.0
            yield doc

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        data = self._ensure_routes(data)
        if self.server == "none":
            for doc in data:
                self.stat_update("documents")
                yield self._finish(doc, {}, "none")
            return
        if self.server == "vllm":
            try:
                import vllm  # noqa: F401
            except ImportError as e:
                raise ImportError("server='vllm' needs vLLM: pip install -e '.[ocr]' (GPU machine)") from e
        import pymupdf  # noqa: F401

        from datatrove.pipeline.inference.run_inference import InferenceConfig

        if self.server == "vllm":  # model load + compile: poll every 5 s up to server_start_timeout_s
            ready_delay, ready_attempts = 5.0, max(1, int(self.server_start_timeout_s / 5.0))
        else:  # an existing endpoint: poll /v1/models every second up to endpoint_ready_timeout_s
            ready_delay, ready_attempts = 1.0, max(1, int(self.endpoint_ready_timeout_s))
        cfg = InferenceConfig(
            server_type=self.server, model_name_or_path=self.model, model_max_context=self.model_max_context,
            use_chat=True, endpoint_url=self.endpoint, api_key=self.api_key,
            max_concurrent_generations=self.max_requests_in_flight, max_concurrent_documents=self.max_docs_in_flight,
            request_timeout=self.request_timeout_s, model_kwargs=self.model_kwargs or None,
            server_log_folder=self.server_log_folder, metric_interval=300,
            server_start_timeout_sec=self.server_start_timeout_s,
            server_ready_max_attempts=ready_attempts, server_ready_delay_sec=ready_delay,
        )
        out_q: queue.Queue = queue.Queue()
        runner_cls = _make_runner_class()
        page_sem_holder: dict = {}

        def shared_context():
            page_sem_holder["sem"] = asyncio.Semaphore(self.max_pages_in_flight)
            return {"page_sem": page_sem_holder["sem"], "render_pool": render_pool}

        if self.render_workers > 0:
            # rendering is CPU-bound and MuPDF holds the GIL: separate processes (spawned, so no fork of
            # this multi-threaded process) give real parallelism and isolate hostile pages
            import multiprocessing

            render_pool = ProcessPoolExecutor(max_workers=self.render_workers,
                                              mp_context=multiprocessing.get_context("spawn"))
        else:
            render_pool = ThreadPoolExecutor(max_workers=1)
        runner = runner_cls(rollout_fn=self._rollout, config=cfg, output_writer=_Collector(self._finalize_from_runner, out_q),
                            shared_context=shared_context, metadata_key="ocr_rollouts")
        runner.http_retries = self.http_retries
        runner.http_backoff_s = self.http_backoff_s
        runner.request_timeout_s = self.request_timeout_s
        runner.stats = self.stats  # the runner's request stats (http/*, tokens) land in this step's stats

        def counted(it):
            for d in it:
                self.stat_update("documents")
                yield d

        def worker():
            try:
                asyncio.run(runner.run_async(counted(data), rank))
                out_q.put(_SENTINEL)
            except BaseException as e:  # noqa: BLE001 - handed to the consuming thread
                out_q.put(("error", e))

        th = threading.Thread(target=worker, name="pdf-ocr-runner", daemon=True)
        th.start()
        try:
            while True:
                kind, item = out_q.get()
                if kind == "doc":
                    yield item
                elif kind == "error":
                    raise item
                else:
                    break
        finally:
            th.join(timeout=60)
            render_pool.shutdown(wait=True, cancel_futures=True)
