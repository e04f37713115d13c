#!/usr/bin/env bash
# Builds eKuiper's rule test harness as a differential oracle (see
# docs/compatibility.md, "Differential testing against eKuiper").
#
#   scripts/ekuiper-oracle.sh SNAPSHOT [DEST] [COMMIT]
#
# SNAPSHOT is a git directory holding eKuiper's history (a bare clone of
# github.com/lf-edge/ekuiper); DEST (default /tmp/ekuiper-oracle) is a
# scratch folder outside this repository, replaced on every run; COMMIT
# (default the commit the conformance corpus was produced with) is the
# eKuiper v2 commit or tag to build. The script unpacks that tree, replaces
# the two modules the Go module proxy does not serve with empty stubs, adds
# the replay driver of scripts/ekuiper-oracle/ to eKuiper's topotest package
# and compiles it to DEST/oracle.test. eKuiper's code never enters this
# repository.
#
# Run a folder or list of case files through it with
#   go run ./cmd/kuiperdiff -oracle DEST/oracle.test ...
# or directly:
#   cd DEST/internal/topo/topotest && TZ=UTC ORACLE_CASES=case.json,dir/ \
#     ORACLE_OUT=out/ ../../../oracle.test -test.run 'TestOracle$'
set -euo pipefail

snapshot=${1:?usage: $0 SNAPSHOT [DEST] [COMMIT]}
dest=${2:-/tmp/ekuiper-oracle}
commit=${3:-0014e7fab0dd420d79d4e8a9e00486ac688589ec}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

case "$(cd "$(dirname "$dest")" && pwd)/" in
"$repo"/*) echo "DEST must be outside the repository" >&2; exit 2 ;;
esac

git --git-dir="$snapshot" rev-parse --verify -q "$commit^{commit}" >/dev/null ||
  { echo "commit $commit not in $snapshot" >&2; exit 2; }

rm -rf "$dest"
mkdir -p "$dest"
# A snapshot may lack its largest blobs (model files, zips); none is Go
# source, so the tree is checked out without them through a scratch index.
index=$(mktemp)
trap 'rm -f "$index"' EXIT
export GIT_INDEX_FILE=$index
git --git-dir="$snapshot" read-tree "$commit"
git --git-dir="$snapshot" ls-files -s | while read -r _ hash _ path; do
  git --git-dir="$snapshot" cat-file -e "$hash" 2>/dev/null || printf '%s\n' "$path"
done | git --git-dir="$snapshot" update-index --force-remove --stdin
git --git-dir="$snapshot" checkout-index -a --prefix="$dest/"
unset GIT_INDEX_FILE
dest=$(cd "$dest" && pwd)

# sqlflow.org/gohive and sqlflow.org/gomaxcompute are blank-imported SQL
# drivers of an extension the rule harness never loads.
for m in gohive gomaxcompute; do
  mkdir -p "$dest/.stubs/$m"
  printf 'module sqlflow.org/%s\n\ngo 1.21\n' "$m" >"$dest/.stubs/$m/go.mod"
  printf '// Package %s is an empty stand-in for the oracle build.\npackage %s\n' "$m" "$m" >"$dest/.stubs/$m/$m.go"
  (cd "$dest" && GOWORK=off go mod edit -replace "sqlflow.org/$m=./.stubs/$m")
done

# The harness's lookup table (HARNESS_SPEC: data/lookup.json from test/).
mkdir -p "$dest/data" "$dest/log" "$dest/plugins"
cp "$dest/test/lookup.json" "$dest/data/lookup.json"

sed '/^\/\/go:build ekuiper_oracle$/d' "$here/ekuiper-oracle/oracle_test.go" \
  >"$dest/internal/topo/topotest/oracle_test.go"

cd "$dest"
GOWORK=off GOFLAGS=-mod=mod go test -c -tags test -o "$dest/oracle.test" ./internal/topo/topotest/
echo "oracle built: $dest/oracle.test (run it from $dest/internal/topo/topotest)"
