#!/usr/bin/env bash
# Measures start-to-/ping: starts a kuiperd binary in a fresh base folder on
# a free port and prints the milliseconds until GET /ping answers 200,
# polling every 5 ms. Usage: scripts/startup.sh path/to/kuiperd [runs]
set -euo pipefail
[ -x "${1:-}" ] || { echo "usage: scripts/startup.sh path/to/kuiperd [runs]" >&2; exit 2; }
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
runs="${2:-5}"
for i in $(seq "$runs"); do
  base="$(mktemp -d)"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  start=$(date +%s%N)
  KuiperBaseKey="$base" KUIPER__BASIC__RESTIP=127.0.0.1 KUIPER__BASIC__RESTPORT="$port" \
    KUIPER__SOURCE__HTTPSERVERPORT=0 KUIPER__BASIC__CONSOLELOG=false "$bin" >/dev/null 2>&1 &
  pid=$!
  until curl -fs "http://127.0.0.1:$port/ping" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then echo "kuiperd exited before answering /ping" >&2; exit 1; fi
    sleep 0.005
  done
  end=$(date +%s%N)
  echo "run $i: $(( (end - start) / 1000000 )) ms"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$base"
done
