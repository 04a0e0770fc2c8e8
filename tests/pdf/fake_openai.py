"""A local OpenAI-compatible chat server (real HTTP on 127.0.0.1, random port) for OCR tests.

Answers are scripted per page image: the key is the sha1 of the image bytes inside the request's
data URL (tests compute it with ``assay.stages.pdf.ocr.render_page_image`` and the same parameters the
step uses). Each key maps to a list of actions consumed in order (the last one repeats):

``{"text": ..., "finish_reason": "stop"}``   a normal answer
``{"status": 500}`` / ``{"status": 503}``     an HTTP error
``{"sleep": 2.0, "text": ...}``                answer after a delay (client timeouts)
``{"close": True}``                            drop the connection without answering

Unknown images get ``default`` (a callable ``(key, payload) -> action`` or an action dict).
Every request is recorded in ``requests`` as ``(key, temperature, max_tokens, model)``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def image_key(image: bytes) -> str:
    return hashlib.sha1(image).hexdigest()


def olmocr_answer(body: str, *, lang: str = "en", rotation_valid: bool = True, correction: int = 0,
                  is_table: bool = False) -> str:
    return (f"---\nprimary_language: {lang}\nis_rotation_valid: {rotation_valid}\n"
            f"rotation_correction: {correction}\nis_table: {is_table}\nis_diagram: False\n---\n{body}")


class FakeOpenAIServer:
    def __init__(self, default=None, model: str = "olmocr-test"):
        self.scripts: dict[str, list[dict]] = {}
        self.default = default if default is not None else {"text": olmocr_answer("Generic page text.")}
        self.model = model
        self.requests: list[tuple[str, float, int, str]] = []
        self._lock = threading.Lock()
        self._counters: dict[str, int] = {}
        self.active = 0
        self.max_active = 0
        self.httpd: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------------
    def script(self, image: bytes, actions: list[dict]) -> str:
        key = image_key(image)
        self.scripts[key] = list(actions)
        return key

    def _next_action(self, key: str, payload: dict) -> dict:
        with self._lock:
            if key in self.scripts:
                i = self._counters.get(key, 0)
                self._counters[key] = i + 1
                acts = self.scripts[key]
                return acts[min(i, len(acts) - 1)]
        d = self.default
        return d(key, payload) if callable(d) else d

    def temperatures(self, key: str) -> list[float]:
        return [t for k, t, _, _ in self.requests if k == key]

    # -- http -----------------------------------------------------------------------------------
    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, obj) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(n) or b"{}")
                if not self.path.rstrip("/").endswith("/v1/chat/completions"):
                    self._send(404, {"error": "not found"})
                    return
                key = "noimage"
                for part in payload.get("messages", [{}])[0].get("content", []):
                    if isinstance(part, dict) and part.get("type") == "image_url":
                        url = part["image_url"]["url"]
                        key = image_key(base64.b64decode(url.split(",", 1)[1]))
                with server._lock:
                    server.requests.append((key, payload.get("temperature"), payload.get("max_tokens"),
                                            payload.get("model")))
                act = server._next_action(key, payload)
                with server._lock:
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    time.sleep(act.get("sleep", 0.0) or 0.02)
                finally:
                    with server._lock:
                        server.active -= 1
                if act.get("close"):
                    self.close_connection = True
                    try:
                        self.connection.shutdown(2)
                    except OSError:
                        pass
                    return
                status = act.get("status", 200)
                if status != 200:
                    self._send(status, {"error": {"message": f"injected {status}"}})
                    return
                text = act.get("text", "")
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "model": server.model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": act.get("finish_reason", "stop")}],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": max(1, len(text) // 4),
                              "total_tokens": 1000 + len(text) // 4},
                })

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
