#!/usr/bin/env bash
# Builds the rekuiper container image from prebuilt static binaries
# (deploy/docker/Dockerfile.prebuilt: nothing to pull) and smoke-checks it.
#
#   scripts/image.sh                         # build linux binaries, image, check
#   scripts/image.sh dist/v2.1.0/kuiper-v2.1.0-linux-amd64.tar.gz
#
# With an archive of scripts/release.sh its bin/ and etc/ go into the image;
# without, the binaries are built here for linux/$(go env GOARCH), stamped
# as release.sh stamps them. The smoke check runs the image with two named
# volumes and fails unless: `kuiperd -version` prints the version and
# commit; the daemon runs as uid 65532; the image's health check passes;
# GET /ping answers on the published port; a confKey, a stream and a rule
# created over REST deliver rows; and after the container is removed, a new
# one on the same volumes still has them and runs the rule again.
#
# Environment: RUNTIME (podman or docker; default: the first whose `info`
# answers), TAG (rekuiper:dev), RUN_OPTS (extra `run` flags), SMOKE=0 (build
# only), BUILD=0 (smoke-check the image TAG already names, no build),
# CA_BUNDLE (/etc/ssl/certs/ca-certificates.crt), ZONEINFO
# (/usr/share/zoneinfo), VERSION (as release.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "image.sh: $*" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

rt="${RUNTIME:-}"
if [ -z "$rt" ]; then
  for c in podman docker; do
    if command -v "$c" >/dev/null && "$c" info >/dev/null 2>&1; then rt="$c"; break; fi
  done
fi
[ -n "$rt" ] || die "no container runtime answers (podman info / docker info); set RUNTIME"
tag="${TAG:-rekuiper:dev}"
read -r -a run_opts <<<"${RUN_OPTS:-}"
ctx="$(mktemp -d)"
cleanup_ctx() { rm -rf "$ctx"; }
trap cleanup_ctx EXIT
if [ "${BUILD:-1}" != 0 ]; then
  ca="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
  zi="${ZONEINFO:-/usr/share/zoneinfo}"
  [ -f "$ca" ] || die "CA bundle $ca not found (set CA_BUNDLE)"
  [ -d "$zi" ] || die "time zone database $zi not found (set ZONEINFO)"

  mkdir -p "$ctx/bin" "$ctx/kuiper/data" "$ctx/kuiper/log"
  if [ -n "${1:-}" ]; then
    [ -f "$1" ] || die "archive $1 not found"
    mkdir "$ctx/archive"
    tar -C "$ctx/archive" -xzf "$1"
    top="$(find "$ctx/archive" -mindepth 2 -maxdepth 3 -path '*/bin/kuiperd' | head -n 1)"
    [ -n "$top" ] || die "$1 has no bin/kuiperd (a linux archive of scripts/release.sh?)"
    top="${top%/bin/kuiperd}"
    mv "$top/bin/kuiperd" "$top/bin/kuiper" "$ctx/bin/"
    mv "$top/etc" "$ctx/kuiper/etc"
    rm -rf "$ctx/archive"
  else
    version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
    commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
    if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="${commit}-dirty"; fi
    pkg=github.com/rekuiper/rekuiper/internal/version
    ldflags="-s -w -X ${pkg}.stamped=${version} -X ${pkg}.stampedCommit=${commit}"
    CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$ctx/bin/" ./cmd/kuiperd ./cmd/kuiper
    cp -r etc "$ctx/kuiper/etc"
  fi
  cp "$ca" "$ctx/ca-certificates.crt"
  cp -rL "$zi" "$ctx/zoneinfo"

  format=()
  [ "$rt" = podman ] && format=(--format docker) # OCI images drop HEALTHCHECK
  "$rt" build "${format[@]}" -q -f deploy/docker/Dockerfile.prebuilt -t "$tag" "$ctx" >/dev/null
  size="$("$rt" image inspect --format '{{.Size}}' "$tag")"
  echo "built $tag with $rt: $size bytes"
fi
[ "${SMOKE:-1}" = 0 ] && exit 0

name="rekuiper-smoke-$$"
vetc="$name-etc"
vdata="$name-data"
cleanup() {
  "$rt" rm -f "$name" >/dev/null 2>&1 || true
  "$rt" volume rm -f "$vetc" "$vdata" >/dev/null 2>&1 || true
  cleanup_ctx
}
trap cleanup EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
api="http://127.0.0.1:$port"

out="$("$rt" run --rm "${run_opts[@]}" "$tag" -version 2>/dev/null)"
[[ "$out" =~ ^kuiperd\ [^\ ]+\ \(commit\ [0-9a-f]{7,}(-dirty)?, ]] || die "kuiperd -version printed \"$out\""
if [ -n "${version:-}" ]; then
  [[ "$out" == "kuiperd $version (commit $commit,"* ]] || die "kuiperd -version printed \"$out\", want version $version and commit $commit"
fi
echo "version: $out"

start() {
  "$rt" run -d --name "$name" -p "127.0.0.1:$port:9081" -v "$vetc:/kuiper/etc" -v "$vdata:/kuiper/data" \
    "${run_opts[@]}" "$tag" >/dev/null 2>&1 || { "$rt" logs "$name" >&2 || true; die "$rt run failed"; }
}

# healthy waits until the image's own health check passes. Podman without
# systemd runs no health check timers, so the check is run here; Docker
# runs it every interval (15 s) and is polled.
healthy() {
  local deadline=$(( $(date +%s) + 90 ))
  while :; do
    if [ "$rt" = podman ]; then
      "$rt" healthcheck run "$name" >/dev/null 2>&1 && break
    else
      [ "$("$rt" inspect --format '{{.State.Health.Status}}' "$name")" = healthy ] && break
    fi
    [ "$("$rt" inspect --format '{{.State.Running}}' "$name")" = true ] || { "$rt" logs "$name" >&2; die "the container exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || { "$rt" logs "$name" >&2; die "not healthy after 90 s"; }
    sleep 0.05
  done
  local st
  st="$("$rt" inspect --format '{{.State.Health.Status}}' "$name")"
  [ "$st" = healthy ] || die "health status $st after a passing check"
}

# rule_delivers waits until the count of rows rule smoke's sink has
# written grows: the rule runs now, whatever count it kept.
rule_delivers() {
  local deadline=$(( $(date +%s) + 30 )) n0="" n
  while :; do
    n="$(curl -fsS "$api/rules/smoke/status" | jq '[to_entries[] | select(.key | test("^sink_.*_records_out_total$")) | .value] | add // 0')"
    [ -z "$n0" ] && n0="$n"
    [ "$n" -gt "$n0" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || die "rule smoke wrote no rows in 30 s: $(curl -sS "$api/rules/smoke/status")"
    sleep 0.2
  done
  echo "rule smoke: $n rows out"
}

t0="$(now_ms)"
start
healthy
t1="$(now_ms)"
echo "start to healthy: $(( t1 - t0 )) ms ($rt run -d to the first passing health check)"
curl -fsS -o /dev/null "$api/ping" || die "GET /ping on the published port failed"

user="$("$rt" inspect --format '{{.Config.User}}' "$name")"
if [ "$rt" = podman ]; then uid="$("$rt" top "$name" user | tail -n +2 | sort -u)"
else uid="$("$rt" top "$name" -o uid | tail -n +2 | sort -u)"; fi
[ "$uid" = 65532 ] || die "the daemon runs as \"$uid\", want 65532"
echo "runs as: $uid (image user $user)"

curl -fsS -X PUT "$api/metadata/sources/simulator/confKeys/smoke" -H 'Content-Type: application/json' \
  -d '{"data":[{"n":1},{"n":2},{"n":3}],"interval":"100ms","loop":true}' >/dev/null
curl -fsS -X POST "$api/streams" -H 'Content-Type: application/json' \
  -d '{"sql":"CREATE STREAM smoke () WITH (TYPE=\"simulator\", CONF_KEY=\"smoke\", DATASOURCE=\"smoke\")"}' >/dev/null
curl -fsS -X POST "$api/rules" -H 'Content-Type: application/json' \
  -d '{"id":"smoke","sql":"SELECT n FROM smoke WHERE n > 1","actions":[{"nop":{}}]}' >/dev/null
rule_delivers

"$rt" rm -f "$name" >/dev/null
start
healthy
curl -fsS "$api/streams" | jq -e 'index("smoke") != null' >/dev/null || die "stream smoke is gone after the restart"
curl -fsS "$api/rules/smoke" | jq -e '.sql == "SELECT n FROM smoke WHERE n > 1"' >/dev/null || die "rule smoke is gone after the restart"
rule_delivers
echo "a new container on the same volumes kept the stream and the rule"
echo "smoke check passed"
