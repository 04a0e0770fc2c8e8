"""LLM annotation (the FineWeb-Edu / Stack-Edu recipe): score a sample of documents with an
instruction model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM in
production) using an additive 0-5 rubric, and write labelled JSONL that ``train`` reads with the
``labelled`` builder (``score_field: score, score_threshold: 3``).

    python -m assay.classifiers annotate --endpoint http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct \
        --rubric edu --input sample.jsonl --output annotated.jsonl

One failing request (HTTP 5xx, timeout, unparsable reply) never aborts the run: it is retried,
then written with ``score: null`` and an ``error`` field (the trainer skips such rows).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

RUBRICS: dict[str, dict[str, str]] = {
    "edu": {
        "system": "You are a careful annotator of web text for an educational-quality dataset.",
        "prompt": (
            "Read the extract below and rate its educational value for students from primary school "
            "to university with an additive 5-point scale:\n"
            "- Add 1 point if the extract gives some basic information relevant to an educational "
            "topic, even if it also contains advertisements or other irrelevant material.\n"
            "- Add another point if it addresses parts of an educational topic but is disorganised or "
            "mixes educational and non-educational content.\n"
            "- Award a third point if it is appropriate for education and introduces key concepts "
            "coherently, even if it is not comprehensive.\n"
            "- Grant a fourth point if it is highly relevant and beneficial for learning, like a "
            "textbook section or tutorial, with clear writing and little extraneous content.\n"
            "- Give a fifth point if it is outstanding for teaching: detailed reasoning, clear "
            "explanations, and no irrelevant content.\n\n"
            "Extract:\n<<<\n{text}\n>>>\n\n"
            "Briefly justify your rating in at most 80 words, then end with the line "
            "\"Educational score: <points>\" where <points> is an integer from 0 to 5."
        ),
        "score_pattern": r"educational score\s*[:=]\s*([0-5])",
    },
    "code": {
        "system": "You are a careful reviewer of source code for an educational code dataset.",
        "prompt": (
            "Review the code extract below and rate it with an additive 5-point scale:\n"
            "- Add 1 point if it is valid code in a real programming language (not data, "
            "configuration or auto-generated boilerplate).\n"
            "- Add another point if it addresses practical programming concepts, even without comments.\n"
            "- Award a third point if it is readable and reasonably commented, suitable for learning "
            "basic concepts such as variables, control flow, functions or data structures.\n"
            "- Grant a fourth point if it is self-contained and well structured, like an exercise, "
            "tutorial or textbook example.\n"
            "- Give a fifth point if it is outstanding for teaching programming: well written, easy to "
            "follow, with clear step-by-step explanations.\n\n"
            "Code:\n<<<\n{text}\n>>>\n\n"
            "Briefly justify your rating in at most 80 words, then end with the line "
            "\"Educational score: <points>\" where <points> is an integer from 0 to 5."
        ),
        "score_pattern": r"educational score\s*[:=]\s*([0-5])",
    },
}


def build_messages(text: str, rubric: str, *, max_chars: int = 6000) -> list[dict]:
    r = RUBRICS[rubric]
    return [{"role": "system", "content": r["system"]},
            {"role": "user", "content": r["prompt"].format(text=text[:max_chars])}]


def parse_score(reply: str, rubric: str) -> int | None:
    """The rubric's final score line; falls back to a last standalone 0-5 digit. None if absent."""
    if not isinstance(reply, str):
        return None
    m = re.findall(RUBRICS[rubric]["score_pattern"], reply, flags=re.I)
    if m:
        return int(m[-1])
    tail = reply.strip()[-40:]
    m = re.findall(r"(?<![\d.])([0-5])(?![\d.])", tail)
    return int(m[-1]) if m else None


async def _annotate_async(texts: list[str], *, endpoint: str, model: str, rubric: str, concurrency: int,
                          max_chars: int, api_key: str | None, timeout: float, retries: int = 3,
                          temperature: float = 0.0, max_tokens: int = 256) -> list[tuple[int | None, str | None, str | None]]:
    import httpx  # noqa: PLC0415

    url = endpoint.rstrip("/")
    if not url.endswith("/chat/completions"):
        url = url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    sem = asyncio.Semaphore(max(1, concurrency))

    async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
        async def one(text: str) -> tuple[int | None, str | None, str | None]:
            payload = {"model": model, "messages": build_messages(text, rubric, max_chars=max_chars),
                       "temperature": temperature, "max_tokens": max_tokens}
            err = None
            for attempt in range(retries):
                async with sem:
                    try:
                        resp = await client.post(url, json=payload)
                        if resp.status_code >= 500 or resp.status_code == 429:
                            err = f"http_{resp.status_code}"
                        elif resp.status_code >= 400:
                            return None, None, f"http_{resp.status_code}"
                        else:
                            reply = resp.json()["choices"][0]["message"]["content"]
                            score = parse_score(reply, rubric)
                            if score is None:
                                err = "unparsable_reply"
                            else:
                                return score, reply, None
                    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as e:
                        err = f"{type(e).__name__}"
                await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt))
            return None, None, err

        return list(await asyncio.gather(*(one(t) for t in texts)))


def annotate_texts(texts: list[str], *, endpoint: str, model: str, rubric: str = "edu", concurrency: int = 8,
                   max_chars: int = 6000, api_key: str | None = None, timeout: float = 60.0,
                   retries: int = 3) -> list[tuple[int | None, str | None, str | None]]:
    """(score 0-5 or None, raw reply, error) per text."""
    if rubric not in RUBRICS:
        raise ValueError(f"unknown rubric {rubric!r}; known: {sorted(RUBRICS)}")
    return asyncio.run(_annotate_async(texts, endpoint=endpoint, model=model, rubric=rubric, concurrency=concurrency,
                                       max_chars=max_chars, api_key=api_key, timeout=timeout, retries=retries))


def annotate_file(input_path: str, output_path: str, *, endpoint: str, model: str, rubric: str = "edu",
                  text_field: str = "text", limit: int = 0, threshold: float = 3.0, concurrency: int = 8,
                  max_chars: int = 6000, api_key: str | None = None, timeout: float = 60.0) -> dict:
    """Annotate ``input_path`` (JSONL/Parquet) into ``output_path`` JSONL with ``score``/``label`` fields."""
    from assay.classifiers.data import _read_records  # noqa: PLC0415

    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    recs = []
    for rec in _read_records(Path(input_path)):
        if isinstance(rec.get(text_field), str) and rec[text_field].strip():
            recs.append(rec)
            if limit and len(recs) >= limit:
                break
    results = annotate_texts([r[text_field] for r in recs], endpoint=endpoint, model=model, rubric=rubric,
                             concurrency=concurrency, max_chars=max_chars, api_key=api_key, timeout=timeout)
    n_ok = 0
    Path(output_path).parent.mkdir(parents=True, exist_ok=True)
    with open(output_path, "w", encoding="utf-8") as f:
        for rec, (score, reply, err) in zip(recs, results):
            out = dict(rec)
            out.update({"score": score, "label": None if score is None else int(score >= threshold),
                        "annotator_model": model, "rubric": rubric})
            if reply is not None:
                out["annotation"] = reply[:2000]
            if err is not None:
                out["error"] = err
            else:
                n_ok += 1
            f.write(json.dumps(out, ensure_ascii=False) + "\n")
    return {"read": len(recs), "annotated": n_ok, "failed": len(recs) - n_ok, "output": str(output_path)}
