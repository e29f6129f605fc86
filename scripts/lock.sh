#!/usr/bin/env bash
# Regenerate requirements.lock (every transitive dependency pinned) from pyproject.toml.
# torch is resolved as the CPU wheel in /opt/wheels (scripts/torch-cpu.txt), so the lock gets its
# dependencies and never the CUDA build's nvidia-* packages, and torch itself is left out of the lock:
# scripts/install.sh installs it with pip first.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q "uv==0.13.9"
python3 -m uv pip compile pyproject.toml --extra test --extra cluster --extra metrics --python-version 3.11 \
  --find-links /opt/wheels --overrides scripts/torch-cpu.txt --no-emit-package torch \
  --no-header --output-file requirements.lock
