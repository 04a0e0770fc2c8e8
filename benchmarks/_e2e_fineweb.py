"""datatrove's FineWeb example pipeline, for benchmarks/bench_e2e.py (runs in its OWN virtualenv).

    <fineweb-venv>/bin/python benchmarks/_e2e_fineweb.py --input WARC_DIR --work DIR --lid lid.176.ftz \
        [--tasks 2] [--workers 2]

Follows datatrove's ``examples/fineweb.py``: WarcReader -> Trafilatura(favour_precision) ->
LanguageFilter(en, 0.65) -> GopherRepetitionFilter -> GopherQualityFilter ->
C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQualityFilter -> JsonlWriter, then the four
MinHash stages (signature, buckets, cluster, filter; 14 buckets x 8 hashes, 5-grams). Every filter
writes what it removes (``removed/<n>_<stage>/``), as the example does. Left out because they
download data at run time (this benchmark never reaches a hub): ``URLFilter`` (block lists),
``TokensCounter`` (GPT-2 tokenizer), and ``PIIFormatter`` (a formatter, not a filter). Adjusted:
``LanguageFilter`` reads a local ``lid.176`` model (labels ``en``); Trafilatura's per-page timeout is
10 s instead of 1 s (on a shared machine the 1 s timeout drops large pages at random); MinHash hashes with ``sha1`` (datatrove's
``xxhash`` path fails on ``str`` with xxhash 4.x); word tokenisation is datatrove's spaCy
``spacy.blank("en")`` (no model download).

Nothing from assay is imported here: this file must run with datatrove alone.
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--lid", required=True, help="local fastText lid.176 model (.bin or .ftz)")
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--extract-timeout", type=float, default=10.0,
                    help="Trafilatura's per-page timeout (datatrove's default 1 s drops large pages at random on "
                         "a busy machine)")
    args = ap.parse_args()

    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
    )
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter
    from datatrove.utils.hashing import HashConfig
    from datatrove.utils.lid import FT176LID
    from datatrove.utils.typeshelper import Languages

    lid_path = os.path.abspath(args.lid)

    class LocalFT176(FT176LID):
        """FT176LID reading a local model file instead of downloading lid.176.bin."""

        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(lid_path)
            return self._model

    # lid.176 labels are ISO 639-1 ("en"); datatrove's Languages.english is "eng" (GlotLID's)
    lang_filter = LanguageFilter(
        languages=["en"],
        exclusion_writer=JsonlWriter(f"{args.work}/removed/2_non_english"),
    )
    lang_filter.model = LocalFT176(["en"])

    w = args.work
    LocalPipelineExecutor(
        pipeline=[
            WarcReader(args.input, glob_pattern="*.warc.gz", default_metadata={"dump": "bench_e2e"}),
            Trafilatura(favour_precision=True, timeout=args.extract_timeout),
            lang_filter,
            GopherRepetitionFilter(exclusion_writer=JsonlWriter(f"{w}/removed/3_gopher_rep")),
            GopherQualityFilter(exclusion_writer=JsonlWriter(f"{w}/removed/4_gopher_qual")),
            C4QualityFilter(filter_no_terminal_punct=False, exclusion_writer=JsonlWriter(f"{w}/removed/5_c4")),
            FineWebQualityFilter(exclusion_writer=JsonlWriter(f"{w}/removed/6_fineweb_qual")),
            JsonlWriter(f"{w}/filtered"),
        ],
        tasks=args.tasks,
        workers=args.workers,
        logging_dir=f"{w}/logs/base",
    ).run()

    cfg = MinhashConfig(hash_config=HashConfig(precision=64, hash_fc="sha1"), num_buckets=14, hashes_per_bucket=8,
                        n_grams=5)
    LocalPipelineExecutor(
        pipeline=[JsonlReader(f"{w}/filtered"),
                  MinhashDedupSignature(output_folder=f"{w}/minhash/signatures", config=cfg,
                                        language=Languages.english)],
        tasks=args.tasks, workers=args.workers, logging_dir=f"{w}/logs/mh1",
    ).run()
    LocalPipelineExecutor(
        pipeline=[MinhashDedupBuckets(input_folder=f"{w}/minhash/signatures", output_folder=f"{w}/minhash/buckets",
                                      config=cfg)],
        tasks=cfg.num_buckets, workers=args.workers, logging_dir=f"{w}/logs/mh2",
    ).run()
    LocalPipelineExecutor(
        pipeline=[MinhashDedupCluster(input_folder=f"{w}/minhash/buckets", output_folder=f"{w}/minhash/remove_ids",
                                      config=cfg)],
        tasks=1, logging_dir=f"{w}/logs/mh3",
    ).run()
    LocalPipelineExecutor(
        pipeline=[JsonlReader(f"{w}/filtered"),
                  MinhashDedupFilter(input_folder=f"{w}/minhash/remove_ids",
                                     exclusion_writer=JsonlWriter(f"{w}/removed/7_dedup")),
                  JsonlWriter(f"{w}/output")],
        tasks=args.tasks, workers=args.workers, logging_dir=f"{w}/logs/mh4",
    ).run()


if __name__ == "__main__":
    sys.exit(main())
