"""Helpers shared by benchmarks/bench_pack.py and tests/pack: a byte-level BPE tokenizer trained
locally with the `tokenizers` library (nothing downloaded), and runs of shipped recipes."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

REPO_ROOT = Path(__file__).resolve().parents[1]


def local_training_texts(limit: int = 400) -> list[str]:
    """Texts on every machine: this repository's own Python sources and docs (code and English prose)."""
    files = sorted(REPO_ROOT.glob("stages/**/*.py")) + sorted(REPO_ROOT.glob("pipeline/*.py")) + sorted(REPO_ROOT.glob("docs/*.md"))
    return [f.read_text(encoding="utf-8", errors="replace") for f in files[:limit]]


def train_bpe(path: Path, texts: Iterable[str], vocab_size: int = 2000) -> Path:
    """A byte-level BPE tokenizer with ``<|endoftext|>`` as its only special token, saved as JSON."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(texts), trainer=trainer)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))
    return path


def run_shipped(recipe: str, output: Path, *, tokenizer: Path | None = None, overrides: list[str] | None = None,
                tasks: int = 2, workers: int = 2) -> Path:
    """Run a shipped recipe (``default``, ``code``) into ``output`` with exact token counts."""
    from assay.pipeline.recipe import load_recipe
    from assay.pipeline.runner import apply_cli_overrides, run_recipe

    sets = list(overrides or [])
    if tokenizer is not None:
        sets.append(f"output.tokenizer_path={tokenizer}")
    rec = apply_cli_overrides(load_recipe(recipe, sets), executor="local", workers=workers, tasks=tasks)
    run_recipe(rec, output)
    return Path(output)
