#!/usr/bin/env bash
# Authentication cost on GET /rules/{id}/status: single runs of
# BenchmarkRuleStatusAuth with authentication off and on, alternated (off
# then on, then on then off, ...) so that a change of the machine's load
# hits both sides alike, compared with benchstat; then the in-process
# interleaved benchmark and the verifier's own cost. Usage:
#   scripts/bench_auth.sh [rounds]   (default 10; output in $OUT, default /tmp/bench_auth)
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-10}"
out="${OUT:-/tmp/bench_auth}"
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da
mkdir -p "$out"
go test -c -o "$out/server.test" ./internal/server/
: > "$out/alternated.txt"
for i in $(seq 1 "$rounds"); do
  order="off on"
  if [ $((i % 2)) = 0 ]; then order="on off"; fi
  for a in $order; do
    (cd internal/server && "$out/server.test" -test.run XXX -test.bench "BenchmarkRuleStatusAuth\$/auth=$a" \
      -test.benchtime 10000x) >> "$out/alternated.txt"
  done
done
go run "golang.org/x/perf/cmd/benchstat@${benchstat_version}" -col /auth "$out/alternated.txt"
go test -run XXX -bench BenchmarkRuleStatusAuthInterleaved -benchtime=10000x -count="$rounds" ./internal/server/ | tee "$out/interleaved.txt"
go test -run XXX -bench Verify -benchtime=10000x -count=5 ./internal/auth/ | tee "$out/verify.txt"
