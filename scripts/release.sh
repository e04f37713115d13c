#!/usr/bin/env bash
# Builds rekuiper's release archives into dist/<version>/: static binaries
# (CGO off; the SQLite driver is pure Go) of kuiperd and kuiper for every
# target, each with etc/, README.md and LICENSE-free docs, as
# kuiper-<version>-<os>-<arch>.tar.gz, plus SHA256SUMS and a CycloneDX SBOM
# per archive. The version is the tag on HEAD, else `git describe`; set
# VERSION to override. TARGETS (space-separated os/arch[/armv]) narrows the
# list.
#
#   scripts/release.sh                 # every target
#   TARGETS=linux/amd64 scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="${commit}-dirty"; fi
targets="${TARGETS:-linux/amd64 linux/arm64 linux/arm/7 darwin/amd64 darwin/arm64 windows/amd64}"
out="dist/${version}"
pkg=github.com/rekuiper/rekuiper/internal/version
ldflags="-s -w -X ${pkg}.stamped=${version} -X ${pkg}.stampedCommit=${commit}"

rm -rf "$out"
mkdir -p "$out"
sbom_bin="$(mktemp -d)/sbom"
go build -o "$sbom_bin" ./scripts/sbom

for t in $targets; do
  IFS=/ read -r goos goarch goarm <<<"$t"
  name="kuiper-${version}-${goos}-${goarch}${goarm:+v$goarm}"
  stage="$out/stage/$name"
  mkdir -p "$stage/bin" "$stage/data" "$stage/log"
  ext=""
  [ "$goos" = windows ] && ext=".exe"
  for cmd in kuiperd kuiper; do
    CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" GOARM="$goarm" \
      go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$stage/bin/${cmd}${ext}" "./cmd/${cmd}"
  done
  cp -r etc "$stage/etc"
  cp README.md "$stage/"
  "$sbom_bin" -name rekuiper -version "$version" "$stage/bin/kuiperd${ext}" "$stage/bin/kuiper${ext}" >"$out/${name}.sbom.cdx.json"
  tar -C "$out/stage" -czf "$out/${name}.tar.gz" "$name"
  printf '%-40s kuiperd %s bytes, kuiper %s bytes\n' "$name" \
    "$(wc -c <"$stage/bin/kuiperd${ext}")" "$(wc -c <"$stage/bin/kuiper${ext}")"
done
rm -rf "$out/stage"
(cd "$out" && sha256sum -- *.tar.gz *.sbom.cdx.json >SHA256SUMS)
echo "release ${version} (commit ${commit}) in ${out}"
