#!/usr/bin/env bash
# Install the runner the way users do and run it once (CI: .ci/run; docs/install.md "What CI checks").
#   bash scripts/smoke_install.sh highest         pip install runner-*.whl into a fresh venv: pip resolves
#                                                 pyproject's ranges to the newest releases they admit today
#   bash scripts/smoke_install.sh lowest          uv installs every dependency pyproject names at the oldest release
#                                                 its range admits (the lower bounds really work)
#   bash scripts/smoke_install.sh tool            uv tool install runner-*.whl: only `runner` on PATH
# No lock and no --no-deps: what the index serves today is what is tested, so the next release inside a range
# that breaks the runner fails here, not in a user's first run. Then, from a folder that is not the clone and
# against the test server on 127.0.0.1 (nothing else but the package index is reached): `runner --version`,
# an EVE run of every task with a two-judge panel whose every sample must be scored, and `runner view`,
# `rescore`, `report`, `audit` and `rejudge` on it.
set -euo pipefail
mode="${1:-highest}"
case "$mode" in highest | lowest | tool) ;; *) echo "usage: $0 highest|lowest|tool" >&2; exit 2 ;; esac
root="$(cd "$(dirname "$0")/.." && pwd)"
uv="$root/.venv/bin/uv"  # scripts/install.sh puts the pinned uv there
work="$(mktemp -d)"
server=""
cleanup() { [ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
say() { echo "smoke_install[$mode]: $*" >&2; }

# The wheel, built from a copy (an in-place build would write build/ and *.egg-info into the clone).
mkdir -p "$work/src"
cp -r "$root"/{pyproject.toml,setup.py,README.md,runner,conf} "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$work/src/conf/local"
"$uv" build -q --wheel --out-dir "$work/dist" "$work/src"
wheel="$(ls "$work"/dist/runner-*.whl)"

start=$SECONDS
case "$mode" in
  highest)
    python3 -m venv "$work/venv"
    "$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" > "$work/pip.log" 2>&1 \
      || { tail -n 40 "$work/pip.log" >&2; exit 1; }
    bin="$work/venv/bin" ;;
  lowest)
    # Each dependency pyproject.toml names, at the lower bound of its range (what those need: the newest).
    python3 - "$root/pyproject.toml" > "$work/oldest.txt" <<'PY'
import re, sys, tomllib
for requirement in tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]:
    name, low = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?.*?>=\s*([^,;\s]+)", requirement).groups()
    print(f"{name}=={low}")
PY
    "$uv" venv -q -p python3 "$work/venv"
    "$uv" pip install -q --python "$work/venv/bin/python" -c "$work/oldest.txt" "$wheel"
    bin="$work/venv/bin" ;;
  tool)
    UV_TOOL_DIR="$work/tools" UV_TOOL_BIN_DIR="$work/bin" "$uv" tool install -q -p python3 "$wheel"
    bin="$work/bin" ;;
esac
python="$bin/python"
[ -x "$python" ] || python="$(head -1 "$bin/runner" | sed 's/^#!//')"
versions="$("$python" -c 'import importlib.metadata as m
print(", ".join(f"{p} {m.version(p)}" for p in ("litellm", "hydra-core", "omegaconf", "mcp", "wandb", "datasets",
                                                 "httpx", "rich", "jinja2")))')"
say "installed in $((SECONDS - start)) s: $versions"
if [ "$mode" = tool ] && [ -e "$bin/python" ]; then
  echo "smoke_install: a tool install put more than runner on PATH" >&2; exit 1
fi

# The test server: judges say "correct", the model answers B.
"$root/.venv/bin/python" "$root/tests/fake_llm.py" --port 0 --default B \
  --rule '"judgement"' '{"judgement": "correct", "explanation": "matches"}' > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q READY "$work/server.log" && break; sleep 0.1; done
url="$(sed -n 's/^READY //p' "$work/server.log")"
[ -n "$url" ] || { cat "$work/server.log" >&2; exit 1; }

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=offline WANDB_SILENT=true RUNNER_CACHE_DIR="$work/cache"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
runner="$bin/runner"
check() {  # check WHAT COMMAND...: run it; on failure show its output and stop
  local what=$1; shift
  if ! "$@" > "$work/out.txt" 2> "$work/err.txt"; then
    echo "smoke_install[$mode]: FAILED: $what: $*" >&2; tail -n 30 "$work/out.txt" "$work/err.txt" >&2; exit 1
  fi
}
check "--version" "$runner" --version
grep -qx "runner [0-9][0-9.]*" "$work/out.txt"
judge() { echo "{name:$1,model:openai/$1,api_base:'$url',api_key:k,concurrency:4,max_retries:1,timeout:10}"; }
check "an EVE run with a two-judge panel" "$runner" model=openai-compatible model.api_base="$url" \
  model.api_key=k benchmark.limit=2 "judges.panel=[$(judge judge1),$(judge judge2)]" progress=false \
  hydra.run.dir="$work/run"
"$python" - "$work/run/results.json" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))
for name, block in results["tasks"].items():
    assert block["n"] > 0 and not block.get("n_errors"), (name, block)
sent = sum(u["requests"] for u in results["usage"].values())
assert sent > 0, results["usage"]
print(f"{len(results['tasks'])} tasks scored, {sent} requests")
EOF
check "runner view" "$runner" view "$work/run"
[ -s "$work/run/view/index.html" ]
check "runner rescore" "$runner" rescore "$work/run"
printf '{"id": "%s", "task": "open_ended", "label": "correct"}\n' \
  "$("$python" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["id"])' \
    "$work/run/samples/open_ended.jsonl")" > "$work/labels.jsonl"
check "runner audit" "$runner" audit "$work/run" --labels "$work/labels.jsonl"
check "runner rejudge" "$runner" rejudge "$work/run" "judges.panel=[$(judge judge3)]" \
  'benchmark.tasks=[open_ended]' hydra.run.dir="$work/rejudged"
check "runner report" "$runner" report "$work"
if [ "$mode" = highest ]; then
  # The call layer's fast paths reach into litellm: with the newest litellm too, each must give what
  # litellm's public path gives (tests/test_direct_calls.py compares both on every failure the server makes).
  "$python" -m pip install -q --disable-pip-version-check pytest > "$work/pip.log" 2>&1 \
    || { tail -n 20 "$work/pip.log" >&2; exit 1; }
  cd "$root"
  check "the fast paths against litellm's own" "$python" -m pytest -q -p no:cacheprovider \
    tests/test_direct_calls.py tests/test_call_fast_paths.py
fi
say "passed in $((SECONDS - start)) s"
