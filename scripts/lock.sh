#!/usr/bin/env bash
# Regenerate requirements.lock (every transitive dependency pinned) from pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q "uv==0.13.9"
python3 -m uv pip compile pyproject.toml --extra test --extra cluster --python-version 3.11 \
  --no-header --output-file requirements.lock
