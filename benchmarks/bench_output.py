"""Output stage throughput against named anchors, measured in the same run (medians of repeats).

    .venv/bin/python benchmarks/bench_output.py [--docs N] [--repeats R]

Data: real multilingual web text (TurkuNLP register corpora: ar, ca, hi, id, pt, ur) from
../shared/data, repeated with fresh ids up to --docs documents (falls back to synthetic text
when the shared data is absent). Anchors:
  * writing:       datatrove ParquetWriter (zstd, metadata expanded to columns), one file per rank
  * normalisation: ftfy.fix_text with its default config
  * token counts:  `tokenizers` encode_batch with a BPE trained here on the same text (exact)
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "multilingual" / "turku_register_core"


def load_texts() -> tuple[list[tuple[str, str]], str]:
    out = []
    if SHARED.is_dir():
        for lang in ("ar", "ca", "hi", "id", "pt", "ur"):
            with gzip.open(SHARED / f"{lang}.tsv.gz", "rt", encoding="utf-8", errors="replace") as f:
                for line in f:
                    t = line.rstrip("\n").split("\t")[-1].strip()
                    if t:
                        out.append((lang, t))
        return out, "TurkuNLP register corpora (real web text, 6 languages)"
    import random

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzé") for _ in range(rng.randint(2, 9))) for _ in range(500)]
    return [("en", " ".join(rng.choice(words) for _ in range(rng.randint(50, 600)))) for _ in range(2000)], "synthetic"


def make_docs(texts, n):
    from datatrove.data import Document

    tiers = ["high", "medium", "low"]
    return [
        Document(
            text=texts[i % len(texts)][1],
            id=f"doc-{i}",
            metadata={"source": "web", "lang__code": texts[i % len(texts)][0], "tier": tiers[i % 3], "decision__reason": None,
                      "url": f"https://example.org/{i}", "quality__score": (i % 97) / 97, "gopher__n_words": i % 1000},
        )
        for i in range(n)
    ]


def copy_docs(docs):
    from datatrove.data import Document

    return [Document(text=d.text, id=d.id, metadata=dict(d.metadata)) for d in docs]


def timeit(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from datatrove.pipeline.writers import ParquetWriter
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from assay.stages.output.normalize import TextNormalizer, normalize_text
    from assay.stages.output.shards import ShardWriter
    from assay.stages.output.tokens import count_tokens

    texts, origin = load_texts()
    docs = make_docs(texts, args.docs)
    mb = sum(len(d.text.encode()) for d in docs) / 1e6
    tmp = Path(tempfile.mkdtemp(prefix="bench_output_"))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([t for _, t in texts], trainers.BpeTrainer(vocab_size=8000, show_progress=False,
                                                                   initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok_path = tmp / "tok.json"
    tok.save(str(tok_path))
    print(f"data: {origin}; {len(docs):,} documents, {mb:.1f} MB of text; 1 process; medians of {args.repeats} runs\n")

    def run_step(step):
        def go():
            for _ in step.run(iter(copy_docs(docs))):
                pass
        return go

    def dt_writer():
        out = tmp / "dt"
        shutil.rmtree(out, ignore_errors=True)
        w = ParquetWriter(str(out), compression="zstd", expand_metadata=True)
        return run_step(w)()

    def ours(tokenizer=None, n=0):
        def go():
            out = tmp / f"ours{n}"
            shutil.rmtree(out, ignore_errors=True)
            run_step(ShardWriter(str(out), tokenizer_path=tokenizer, max_shard_bytes=16 * 2**20))()
        return go

    rows = []
    t_anchor = timeit(dt_writer, args.repeats)
    rows.append(("write", "datatrove ParquetWriter zstd (anchor)", t_anchor, 1.0))
    t = timeit(ours(None, 1), args.repeats)
    rows.append(("write", "ShardWriter (estimate, shuffle, hive, atomic)", t, t_anchor / t))
    t = timeit(ours(str(tok_path), 2), args.repeats)
    rows.append(("write", "ShardWriter (exact tokenizer)", t, t_anchor / t))

    import ftfy

    raw = [d.text for d in docs]
    t_anchor = timeit(lambda: [ftfy.fix_text(x) for x in raw], args.repeats)
    rows.append(("normalize", "ftfy.fix_text default config (anchor)", t_anchor, 1.0))
    t = timeit(lambda: [normalize_text(x) for x in raw], args.repeats)
    rows.append(("normalize", "normalize_text", t, t_anchor / t))
    t = timeit(run_step(TextNormalizer()), args.repeats)
    rows.append(("normalize", "TextNormalizer step", t, t_anchor / t))

    t_anchor = timeit(lambda: count_tokens(raw, str(tok_path)), args.repeats)
    rows.append(("tokens", "tokenizers encode_batch, exact (anchor)", t_anchor, 1.0))
    t = timeit(lambda: count_tokens(raw), args.repeats)
    rows.append(("tokens", "utf8-width estimate", t, t_anchor / t))

    print(f"{'task':<10} {'implementation':<48} {'seconds':>8} {'docs/s':>9} {'MB/s':>7} {'speed vs anchor':>16}")
    for task, name, secs, ratio in rows:
        print(f"{task:<10} {name:<48} {secs:>8.3f} {len(docs) / secs:>9,.0f} {mb / secs:>7.1f} {ratio:>15.2f}x")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
