"""Fixtures for the output tests: synthetic multilingual documents, a locally trained BPE tokenizer,
and a fake run directory produced by real datatrove executors (two phases, two tasks each)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from datatrove.data import Document
from datatrove.pipeline.base import PipelineStep

ALPHABETS = {
    "en": "abcdefghijklmnopqrstuvwxyz",
    "de": "abcdefghijklmnopqrstuvwxyzäöüß",
    "ru": "абвгдежзийклмнопрстуфхцчшщыэюя",
    "zh": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明",
}
CODE_WORDS = ["def", "return", "for", "in", "if", "else", "import", "class", "self", "value", "items", "range", "print", "len", "data", "result", "None", "True"]


def make_words(rng: np.random.Generator, lang: str, n: int) -> list[str]:
    alpha = ALPHABETS[lang]
    vocab = []
    for _ in range(400):
        k = int(rng.integers(1, 3)) if lang == "zh" else int(rng.integers(2, 9))
        vocab.append("".join(alpha[int(j)] for j in rng.integers(0, len(alpha), size=k)))
    ranks = np.arange(1, len(vocab) + 1)
    p = (1.0 / ranks) / (1.0 / ranks).sum()
    return [vocab[int(j)] for j in rng.choice(len(vocab), size=n, p=p)]


def make_text(rng: np.random.Generator, source: str, lang: str, n_words: int) -> str:
    if source == "code":
        lines = []
        for _ in range(max(1, n_words // 8)):
            ws = [CODE_WORDS[int(j)] for j in rng.integers(0, len(CODE_WORDS), size=6)]
            lines.append("    " * int(rng.integers(0, 3)) + " ".join(ws) + "(x, y):")
        return "\n".join(lines) + "\n"
    words = make_words(rng, lang, n_words)
    sep = "" if lang == "zh" else " "
    paras, i = [], 0
    while i < len(words):
        k = int(rng.integers(20, 80))
        paras.append(sep.join(words[i : i + k]) + ("。" if lang == "zh" else "."))
        i += k
    return "\n\n".join(paras)


def make_documents(n: int = 480, seed: int = 7) -> list[Document]:
    """Documents as they leave the decision step: source, language, tier, reason, signals."""
    rng = np.random.default_rng(seed)
    docs = []
    langs = ["en", "en", "en", "de", "ru", "zh"]
    for i in range(n):
        source = ["web", "web", "code", "pdf"][i % 4]
        lang = "en" if source == "code" else langs[int(rng.integers(0, len(langs)))]
        text = make_text(rng, source, lang, int(rng.integers(30, 400)))
        score = float(rng.random())
        md = {
            "source": source,
            "lang__code": None if source == "code" else lang,
            "lang__score": float(0.5 + rng.random() / 2),
            "quality__score": score,
            "gopher__n_words": len(text.split()),
        }
        if source == "code":
            md["code__language"] = "python"
            md["path"] = f"repo{i % 5}/mod_{i}.py"
            md["repo"] = f"org/repo{i % 5}"
        else:
            md["url"] = f"https://example.org/{source}/{i}"
        if source == "pdf":
            md["pdf__pages"] = int(rng.integers(1, 30))
        # outcome
        u = rng.random()
        reject = {"web": "warc_truncated_record", "code": "code_binary", "pdf": "pdf_encrypted"}[source]
        if u < 0.05:
            md["reject_reason"] = reject
            text = ""
            md["decision__reason"] = reject
        elif u < 0.13:
            md["dedup__is_duplicate"] = True
            md["dedup__cluster_id"] = f"doc-{max(0, i - 4)}"
            md["decision__reason"] = "dedup_minhash"
        elif u < 0.28:
            md["decision__reason"] = f"{source}_min_words"
        elif u < 0.33:
            md["tier"] = "low"
            md["decision__reason"] = "tier_low"
        else:
            md["decision__reason"] = None
        # the decision compiler gives each reason its stage (the writers never guess it from the spelling)
        md["decision__stage"] = {reject: "reject", "dedup_minhash": "dedup", f"{source}_min_words": "rules",
                                 "tier_low": "tier", None: None}[md["decision__reason"]]
        if md["decision__reason"] in (None, "tier_low") and "tier" not in md:
            md["tier"] = "high" if score > 0.66 else ("medium" if score > 0.33 else "low")
        elif "tier" not in md and md["decision__reason"] is not None and not md.get("reject_reason"):
            md["tier"] = "medium"
        docs.append(Document(text=text, id=f"doc-{i}", metadata=md))
    return docs


class ListReader(PipelineStep):
    """Yields this rank's share of a fixed document list (what a reader would produce)."""

    name = "list reader"
    type = "📖 - READER"

    def __init__(self, docs: list[Document]):
        super().__init__()
        self.docs = docs

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        for d in self.docs[rank::world_size]:
            self.stat_update("documents")
            yield Document(text=d.text, id=d.id, metadata=dict(d.metadata))


class MarkRejects(PipelineStep):
    """Counts reject reasons the way signal steps do (``reject/<reason>``); never drops."""

    name = "reject marker"
    type = "🔬 - SIGNALS"

    def run(self, data, rank: int = 0, world_size: int = 1):
        for d in data:
            if d.metadata.get("reject_reason"):
                self.stat_update(f"reject/{d.metadata['reject_reason']}")
            yield d


class StoreRows(PipelineStep):
    """Minimal signal store: one Parquet part per rank with id, text, source and all metadata."""

    name = "store"
    type = "💾 - STORE"

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def run(self, data, rank: int = 0, world_size: int = 1):
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = []
        for d in data:
            rows.append({"id": d.id, "text": d.text, **{k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in d.metadata.items()}})
            self.stat_update("documents_stored")
            yield d
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        keys = sorted({k for r in rows for k in r})
        pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows]), f"{self.folder}/part-{rank:05d}-00000.parquet")


class StoreReader(PipelineStep):
    name = "store reader"
    type = "📖 - READER"

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        import pyarrow.parquet as pq

        for p in sorted(Path(self.folder).glob("part-*.parquet"))[rank::world_size]:
            for r in pq.read_table(p).to_pylist():
                self.stat_update("documents")
                md = {k: v for k, v in r.items() if k not in ("id", "text") and v is not None or k == "decision__reason"}
                yield Document(text=r["text"] or "", id=r["id"], metadata=md)


class CountDecisions(PipelineStep):
    """Stands in for the decision step: the decisions are precomputed; count them like a filter."""

    name = "decide"
    type = "🔻 - FILTER"

    def run(self, data, rank: int = 0, world_size: int = 1):
        for d in data:
            self.stat_update("total")
            r = d.metadata.get("decision__reason")
            if r:
                self.stat_update("dropped", f"dropped_{r}")
            else:
                self.stat_update("forwarded")
            yield d


def train_bpe(path: Path, texts: list[str], vocab_size: int = 800) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(str(path))
    return path


@pytest.fixture(scope="session")
def documents() -> list[Document]:
    return make_documents()


@pytest.fixture(scope="session")
def bpe_tokenizer(tmp_path_factory, documents) -> Path:
    d = tmp_path_factory.mktemp("tok")
    return train_bpe(d / "tokenizer.json", [x.text for x in documents if x.text])


def run_fake(run_dir: Path, docs: list[Document], *, tokenizer_path: str | None, tasks: int = 2, **writer_kw) -> Path:
    """Two phases through datatrove's LocalPipelineExecutor, laid out like a real run directory."""
    from datatrove.executor.local import LocalPipelineExecutor

    from assay.stages.output.normalize import TextNormalizer
    from assay.stages.output.shards import ExclusionWriter, ShardWriter

    run_dir = Path(run_dir)
    LocalPipelineExecutor(
        pipeline=[ListReader(docs), MarkRejects(), TextNormalizer(), StoreRows(str(run_dir / "signals"))],
        tasks=tasks, workers=1, logging_dir=str(run_dir / "logs" / "signals"),
    ).run()
    LocalPipelineExecutor(
        pipeline=[
            StoreReader(str(run_dir / "signals")),
            CountDecisions(),
            ShardWriter(str(run_dir / "output"), tokenizer_path=tokenizer_path, **writer_kw),
            ExclusionWriter(str(run_dir / "excluded"), tokenizer_path=tokenizer_path),
        ],
        tasks=tasks, workers=1, logging_dir=str(run_dir / "logs" / "decide"),
    ).run()
    return run_dir


TIER_WEIGHTS = {"high": 2.0, "medium": 1.0, "low": 0.5}


@pytest.fixture(scope="session")
def fake_run(tmp_path_factory, documents, bpe_tokenizer) -> Path:
    from assay.pipeline.manifest import build_manifest

    run_dir = tmp_path_factory.mktemp("run")
    inputs_dir = tmp_path_factory.mktemp("inputs")
    (inputs_dir / "a.txt").write_text("input a\n")
    (inputs_dir / "sub").mkdir()
    (inputs_dir / "sub" / "b.bin").write_bytes(bytes(range(256)))
    run_fake(run_dir, documents, tokenizer_path=str(bpe_tokenizer), max_shard_bytes=40_000, row_group_rows=16)
    recipe = {"name": "fake", "output": {"tokenizer_path": str(bpe_tokenizer)}}
    build_manifest(run_dir, recipe=recipe, recipe_hash="ab" * 32, inputs=[inputs_dir], tier_weights=TIER_WEIGHTS)
    return run_dir
