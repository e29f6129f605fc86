#!/usr/bin/env bash
# A real Ray head node on this machine, for the cluster tests (tests/test_clusters.py) and for trying
# `launcher=ray launcher.address=...` by hand. It listens on 127.0.0.1 only:
#
#   GCS 127.0.0.1:6390 (launcher.address=auto finds it), Ray client ray://127.0.0.1:10091, workers on 20000-20999,
#   2 CPUs, no dashboard, started from $ROOT/cwd with a bare environment (PATH and HOME only), so a job sees
#   what a cluster's job sees: not the submitting shell's folder or variables.
#
#   bash scripts/ray_local.sh start    # idempotent: starts the head unless it runs; waits until clients can connect
#   bash scripts/ray_local.sh stop     # ends only the head this script started (the pid it recorded, then its group)
#   bash scripts/ray_local.sh status   # exit 0 when the head runs
#
# Ray >= 2.59 turns token authentication on for clusters it starts: the head reads (or creates) the token in
# ~/.ray/auth_token, and a client needs RAY_AUTH_MODE=token with the same token (docs/sweeps.md). State and the
# log live under $RUNNER_RAY_ROOT (default /tmp/runner-ray); RAY=... names the `ray` command (default: .venv's).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${RUNNER_RAY_ROOT:-/tmp/runner-ray}
RAY=${RAY:-$PWD/.venv/bin/ray}
PIDFILE=$ROOT/head.pid

say() { echo "ray_local: $*" >&2; }
running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
answers() { (exec 3<>/dev/tcp/127.0.0.1/10091) 2>/dev/null; }

start() {
  [ -x "$RAY" ] || { say "$RAY is missing: bash scripts/install.sh cluster"; return 1; }
  if running && answers; then say "up: ray://127.0.0.1:10091 (RAY_AUTH_MODE=token)"; return 0; fi
  running && stop
  mkdir -p "$ROOT/cwd" "$HOME/.ray"
  [ -s "$HOME/.ray/auth_token" ] || RAY_AUTH_MODE=token "$RAY" get-auth-token --generate >/dev/null 2>&1 || true
  # --block: this process stays the parent of every daemon of the head and ends them when it gets SIGTERM.
  (cd "$ROOT/cwd" && exec setsid env -i PATH="$PATH" HOME="$HOME" LANG=C.UTF-8 RAY_AUTH_MODE=token \
     RAY_USAGE_STATS_ENABLED=0 "$RAY" start --head --block --node-ip-address=127.0.0.1 --port=6390 \
     --ray-client-server-port=10091 --min-worker-port=20000 --max-worker-port=20999 --num-cpus=2 \
     --include-dashboard=false --disable-usage-stats --temp-dir="$ROOT/tmp" \
     </dev/null >"$ROOT/head.log" 2>&1) &
  echo $! >"$PIDFILE"
  for _ in $(seq 1200); do
    if ! running; then say "ray start failed: $ROOT/head.log"; tail -5 "$ROOT/head.log" >&2; return 1; fi
    if answers && grep -q "Ray runtime started" "$ROOT/head.log"; then
      say "up: ray://127.0.0.1:10091 (RAY_AUTH_MODE=token)"; return 0
    fi
    sleep 0.1
  done
  say "the head did not answer within 120 s: $ROOT/head.log"; return 1
}

stop() {
  [ -s "$PIDFILE" ] || { say "not started by this script"; return 0; }
  local pid
  pid=$(cat "$PIDFILE")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  kill -KILL -- "-$pid" 2>/dev/null || true  # whatever of its process group is left
  rm -f "$PIDFILE"
  say "stopped"
}

status() {
  if running && answers; then say "up: ray://127.0.0.1:10091"; else say "down"; return 1; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
