#!/usr/bin/env bash
# Optional system services some tests use: headless Chromium (report rendering), a one-node Slurm
# cluster on loopback (.ci/slurm-setup.sh). Needs root and apt; elsewhere it says so and those
# tests skip with a clear reason.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null; then
  echo "services: not root or no apt-get; report-rendering and Slurm tests will skip"
  exit 0
fi
if ! command -v chromium >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "services: chromium install failed; report-rendering test will skip"
fi
if [ -f .ci/slurm-setup.sh ]; then
  bash .ci/slurm-setup.sh || echo "services: slurm setup failed; slurm tests will skip"
fi
exit 0
