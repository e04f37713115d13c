#!/usr/bin/env bash
# Runs deploy/docker/compose.yaml with podman-compose or docker compose and
# checks that rekuiper reaches Mosquitto by its service name: a row
# published on the host to topic compose/in goes through a rule to topic
# compose/out. The rekuiper image comes from scripts/image.sh (no golang
# base image to pull). Where eclipse-mosquitto:2.0.20 cannot be pulled,
# MOSQUITTO_STANDIN=1 builds a stand-in under that name from the host's
# Debian mosquitto binary and its libraries (its version is the host's).
# Needs mosquitto_pub and mosquitto_sub on the host.
#
#   MOSQUITTO_STANDIN=1 scripts/compose_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "compose_check.sh: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

rt="${RUNTIME:-podman}"
if [ "$rt" = podman ]; then compose=(podman-compose); else compose=(docker compose); fi
project="rekuiper-compose-$$"
file=deploy/docker/compose.yaml

if [ "${MOSQUITTO_STANDIN:-0}" = 1 ] && ! "$rt" image exists eclipse-mosquitto:2.0.20 2>/dev/null; then
  ctx="$(mktemp -d)"
  bin="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
  [ -x "$bin" ] || die "no mosquitto binary on the host for the stand-in image"
  mkdir -p "$ctx/root/usr/sbin" "$ctx/root/etc"
  cp "$bin" "$ctx/root/usr/sbin/mosquitto"
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$ctx/root$(dirname "$lib")"
    cp -L "$lib" "$ctx/root$lib"
  done
  printf 'root:x:0:0::/:/nonexistent\nmosquitto:x:1883:1883::/:/nonexistent\n' >"$ctx/root/etc/passwd"
  printf 'root:x:0:\nmosquitto:x:1883:\n' >"$ctx/root/etc/group"
  printf 'listener 1883\nallow_anonymous true\n' >"$ctx/root/mosquitto-no-auth.conf"
  printf 'FROM scratch\nCOPY root/ /\nENV PATH=/usr/sbin:/usr/bin\nEXPOSE 1883\nCMD ["mosquitto", "-c", "/mosquitto-no-auth.conf"]\n' >"$ctx/Dockerfile"
  "$rt" build -q -t docker.io/library/eclipse-mosquitto:2.0.20 "$ctx" >/dev/null
  rm -rf "$ctx"
  echo "built a stand-in eclipse-mosquitto:2.0.20 from $bin"
fi
"$rt" image exists rekuiper:dev 2>/dev/null || RUNTIME="$rt" SMOKE=0 TAG=rekuiper:dev scripts/image.sh

KUIPER_PORT="$(free_port)"
MQTT_PORT="$(free_port)"
export KUIPER_PORT MQTT_PORT
down() {
  "${compose[@]}" -p "$project" -f "$file" down -v >/dev/null 2>&1 || true
  "$rt" network rm "${project}_default" >/dev/null 2>&1 || true # podman-compose 1.0 leaves it
}
trap down EXIT
"${compose[@]}" -p "$project" -f "$file" up -d --no-build >/dev/null 2>&1 || die "compose up failed"
api="http://127.0.0.1:$KUIPER_PORT"
deadline=$(( $(date +%s) + 60 ))
until curl -fs -o /dev/null "$api/ping"; do
  [ "$(date +%s)" -lt "$deadline" ] || die "rekuiper did not answer /ping in 60 s"
  sleep 0.1
done

curl -fsS -X POST "$api/streams" -H 'Content-Type: application/json' \
  -d '{"sql":"CREATE STREAM compose_in () WITH (TYPE=\"mqtt\", DATASOURCE=\"compose/in\", FORMAT=\"json\")"}' >/dev/null
curl -fsS -X POST "$api/rules" -H 'Content-Type: application/json' \
  -d '{"id":"compose","sql":"SELECT n * 2 AS twice FROM compose_in","actions":[{"mqtt":{"server":"tcp://mosquitto:1883","topic":"compose/out"}}]}' >/dev/null

out="$(mktemp)"
mosquitto_sub -h 127.0.0.1 -p "$MQTT_PORT" -t compose/out -C 1 -W 30 >"$out" &
sub=$!
deadline=$(( $(date +%s) + 30 ))
while kill -0 "$sub" 2>/dev/null; do
  mosquitto_pub -h 127.0.0.1 -p "$MQTT_PORT" -t compose/in -m '{"n":21}'
  [ "$(date +%s)" -lt "$deadline" ] || break
  sleep 0.5
done
wait "$sub" || die "no row on compose/out: $(curl -sS "$api/rules/compose/status")"
grep -q '"twice":42' "$out" || die "compose/out carried $(cat "$out")"
echo "compose: a row published to mosquitto went through rekuiper: $(cat "$out")"
rm -f "$out"
