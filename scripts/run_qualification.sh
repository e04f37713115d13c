#!/usr/bin/env sh
# Runs rekuiper's reliability qualification and writes its JSON report.
#
#   ./scripts/run_qualification.sh MODE DURATION RATE [REPORT]
#
#   MODE      short  every scenario (crash, broker outage, storage faults,
#                    soak, upgrade/rollback, cluster failover), each for
#                    DURATION
#             soak   the soak only, for DURATION, sampled once a minute
#   DURATION  seconds (10) or a Go duration (90s, 24h)
#   RATE      records per second
#   REPORT    default target/qualification_results.json
#
# Examples:
#   ./scripts/run_qualification.sh short 10 100
#   ./scripts/run_qualification.sh soak 86400 100 /var/log/rekuiper_soak_24h.json
#
# Needs Go and mosquitto; the storage scenario needs root (it mounts a
# tmpfs), the cluster scenario PostgreSQL's initdb and pg_ctl.
# REKUIPER_OLD_BIN and REKUIPER_NEW_BIN select the two builds of the
# upgrade scenario. Extra flags for cmd/qualify go in QUALIFY_FLAGS (for
# example QUALIFY_FLAGS="-outage 30s -keep"). Exit status: 0 pass, 1 a
# broken promise or a failed scenario, 2 the run could not start.
set -eu

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
mode=$1
duration=$2
rate=$3
report=${4:-target/qualification_results.json}

case $mode in
short | soak) ;;
*)
	echo "run_qualification: mode must be short or soak, not $mode" >&2
	exit 2
	;;
esac
case $duration in
*[!0-9]*) ;;
*) duration="${duration}s" ;;
esac

cd "$(dirname "$0")/.."
# shellcheck disable=SC2086 # QUALIFY_FLAGS is a list of flags
exec go run ./cmd/qualify -mode "$mode" -duration "$duration" -rate "$rate" -report "$report" ${QUALIFY_FLAGS:-}
