"""LLM annotation against a local OpenAI-compatible server (real HTTP on 127.0.0.1)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assay.classifiers.annotate import RUBRICS, annotate_texts, build_messages, parse_score


class FakeOpenAI(BaseHTTPRequestHandler):
    calls: list = []
    fail_once: set = set()

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.calls.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        user = body["messages"][-1]["content"]
        if "FLAKY" in user and "FLAKY" not in FakeOpenAI.fail_once:
            FakeOpenAI.fail_once.add("FLAKY")
            self.send_response(500)
            self.end_headers()
            return
        if "ALWAYS500" in user:
            self.send_response(500)
            self.end_headers()
            return
        if "MUMBLE" in user:
            reply = "I cannot decide."
        else:
            # a deterministic "judge": textbook-like words raise the score
            n = sum(user.count(w) for w in ("theorem", "explain", "example", "definition"))
            reply = f"The extract is about a topic.\nEducational score: {min(5, n)}"
        data = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                        "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def server():
    FakeOpenAI.calls = []
    FakeOpenAI.fail_once = set()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_parse_score_and_prompt():
    assert parse_score("blah\nEducational score: 4", "edu") == 4
    assert parse_score("Educational score: 2 ... Educational score: 3", "edu") == 3
    assert parse_score("no score here", "edu") is None
    assert parse_score("final: 5", "code") == 5
    msgs = build_messages("x" * 10_000, "code", max_chars=100)
    assert msgs[0]["role"] == "system" and "x" * 100 in msgs[1]["content"] and "x" * 101 not in msgs[1]["content"]
    assert set(RUBRICS) == {"edu", "code"}


def test_annotate_texts_retries_and_survives_failures(server):
    texts = ["A definition and an example explain the theorem. Another example.",
             "Buy now! Cheap!",
             "FLAKY but an example",
             "ALWAYS500",
             "MUMBLE"]
    res = annotate_texts(texts, endpoint=server, model="judge", rubric="edu", concurrency=2, timeout=5, api_key="k")
    assert [r[0] for r in res] == [5, 0, 1, None, None]
    assert res[3][2] == "http_500" and res[4][2] == "unparsable_reply"
    assert all(c["auth"] == "Bearer k" and c["body"]["model"] == "judge" for c in FakeOpenAI.calls)
    # flaky doc retried once, always-failing doc retried up to 3 times
    assert sum("FLAKY" in c["body"]["messages"][-1]["content"] for c in FakeOpenAI.calls) == 2
    assert sum("ALWAYS500" in c["body"]["messages"][-1]["content"] for c in FakeOpenAI.calls) == 3


def test_annotate_cli_then_train_on_llm_labels(server, tmp_path):
    import pydoc_data.topics as topics

    from assay.classifiers.__main__ import main
    from assay.classifiers.data import build_source

    inp = tmp_path / "sample.jsonl"
    good = [v[:1500] + " This definition and example explain the theorem." for _, v in sorted(topics.topics.items())]
    import random

    rng = random.Random(0)
    vocab = ("shop deals free shipping click here subscribe login cart best price sale offer coupon "
             "cookie policy sign up newsletter menu home contact share tweet like follow").split()
    bad = [" ".join(rng.choice(vocab) for _ in range(120)) for _ in range(60)]
    with open(inp, "w") as f:
        for i, t in enumerate(good + bad):
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    out = tmp_path / "annotated.jsonl"
    rc = main(["annotate", "--endpoint", server, "--model", "judge", "--rubric", "edu", "--input", str(inp),
               "--output", str(out), "--concurrency", "4"])
    assert rc == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == len(good) + len(bad)
    assert all(r["rubric"] == "edu" and r["annotator_model"] == "judge" for r in rows)
    assert all(r["label"] == 1 for r in rows[: len(good)]) and all(r["label"] == 0 for r in rows[len(good):])
    # the same trainer reads LLM scores as labels (FineWeb-Edu: score >= 3)
    exs, card = build_source({"builder": "labelled", "path": str(out), "score_field": "score", "score_threshold": 3}, tmp_path)
    assert len(exs) == len(rows) and {e.label for e in exs} == {0, 1}
    cfg = tmp_path / "edu.yaml"
    cfg.write_text(f"name: edu\nlabel_source: llm_annotation\nlabelled: [{{builder: labelled, path: '{out}', "
                   f"score_field: score, score_threshold: 3}}]\nholdout: 0.3\n"
                   f"fasttext: {{dim: 8, epoch: 5, lr: 0.2, minCount: 1, bucket: 10000}}\nquantize: null\n")
    assert main(["train", "--config", str(cfg), "--out", str(tmp_path / "m"), "--quiet"]) == 0
    card = json.loads((tmp_path / "m" / "edu.card.json").read_text())
    assert card["label_source"] == "llm_annotation" and card["metrics"]["holdout"]["roc_auc"] > 0.9
