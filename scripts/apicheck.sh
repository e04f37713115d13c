#!/usr/bin/env bash
# API stability check: compares the public packages (api, sdk, sdk/kuiperd,
# sdk/sdktest; internal/apisurface.Packages lists the same) at HEAD with
# the last release tag (v*) using apidiff, and fails on an incompatible
# change. Without a release tag there is no base: it says so and passes.
set -euo pipefail
cd "$(dirname "$0")/.."

packages="api sdk sdk/kuiperd sdk/sdktest"
module=github.com/rekuiper/rekuiper
apidiff_version=v0.0.0-20261113113407-e3970619a1a4

base="$(git describe --tags --abbrev=0 --match 'v*' 2>/dev/null || true)"
if [ -z "$base" ]; then
  echo "api check: no base (no release tag v* yet); nothing to compare"
  exit 0
fi
gobin="$(go env GOPATH)/bin"
if [ ! -x "$gobin/apidiff" ]; then
  go install "golang.org/x/exp/cmd/apidiff@${apidiff_version}"
fi
work="$(mktemp -d)"
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/base" "$base" >/dev/null
status=0
for p in $packages; do
  if [ ! -d "$work/base/$p" ]; then
    echo "api check: $p is new since $base"
    continue
  fi
  f="${p//\//_}"
  (cd "$work/base" && "$gobin/apidiff" -w "$work/$f.old" "$module/$p")
  "$gobin/apidiff" -w "$work/$f.new" "$module/$p"
  report="$("$gobin/apidiff" -incompatible "$work/$f.old" "$work/$f.new")"
  if [ -n "$report" ]; then
    echo "api check: incompatible changes in $module/$p since $base:"
    echo "$report"
    status=1
  else
    echo "api check: $module/$p compatible with $base"
  fi
done
exit $status
