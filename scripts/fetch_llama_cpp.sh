#!/usr/bin/env bash
# Installs what rotor's GGUF files are checked against (tests/train/gguf/,
# docs/gguf.md) into the cache folder, outside the repository:
#
#   node-llama-cpp@3.21.1             llama.cpp for node (its JavaScript)
#   @node-llama-cpp/linux-x64@3.21.1  llama.cpp itself, prebuilt for Linux
#                                     x64 CPUs (a backend per ISA); loaded
#                                     with getLlama({gpu: false, build:
#                                     "never"}), it needs no network
#   @huggingface/gguf@0.4.6           an independent GGUF reader
#
#   $ROTOR_CACHE_DIR/llama-cpp-3.21.1/node_modules/   the installed packages
#
# Unlike scripts/fetch_tokenizers.sh (three packages without dependencies,
# one tarball each), node-llama-cpp has about a hundred dependencies, so the
# versions of all of them are pinned by tests/train/gguf/package-lock.json,
# with the sha512 the registry published for each tarball; `npm ci` installs
# exactly those and refuses any tarball whose digest differs. The three
# packages above are also checked here against hard-coded digests (from
# `npm view NAME@VERSION dist.integrity`), so an edited lock file fails too.
# --omit=optional leaves out node-llama-cpp's GPU builds (about 730 MB of
# CUDA and Vulkan binaries); the CPU one is a direct dependency.
# --ignore-scripts: node-llama-cpp's postinstall would try to download or
# build llama.cpp, which the prebuilt package makes unnecessary.
#
# ROTOR_CACHE_DIR defaults to ~/.cache/rotor. Nothing is done when the
# install exists and its digests check, so after the first run this works
# offline.
set -euo pipefail

readonly VERSION="3.21.1"
readonly PACKAGES=(
  "node-llama-cpp 3.21.1 sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg=="
  "@node-llama-cpp/linux-x64 3.21.1 sha512-Totj6RTDMGo3FoK2yNUaz/oGmZD0olAqTrRluFUWmu0kW2i9TOzHSW0OWCAiGkzRCVX0WsU2CyUQo/W2NYtdPA=="
  "@huggingface/gguf 0.4.6 sha512-+S4ysHzzNN77rU0gBcuuGN+x1TYNP4M7EgOEZ2rKaTz8dZ8o2N92qapQaeTjnPPNiWSc23iCV9E8u2A9VvK+rg=="
)

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly LOCK_DIR="${REPO_ROOT}/tests/train/gguf"
cache_dir="${ROTOR_CACHE_DIR:-$HOME/.cache/rotor}"
install_dir="${cache_dir}/llama-cpp-${VERSION}"

log() { echo "fetch_llama_cpp: $*"; }
fail() { echo "fetch_llama_cpp: error: $*" >&2; exit 1; }

# check DIR: each pinned package in DIR/node_modules has the version and
# the integrity above (npm records both in node_modules/.package-lock.json).
check() {
  local dir="$1" entry name version integrity
  for entry in "${PACKAGES[@]}"; do
    read -r name version integrity <<<"${entry}"
    node -e '
      const [lockFile, name, version, integrity] = process.argv.slice(1);
      const lock = JSON.parse(require("fs").readFileSync(lockFile, "utf8"));
      const got = lock.packages["node_modules/" + name];
      if (!got || got.version !== version || got.integrity !== integrity) {
        console.error(`${name}: expected ${version} ${integrity}, got ` +
                      (got ? `${got.version} ${got.integrity}` : "nothing"));
        process.exit(1);
      }' "${dir}/node_modules/.package-lock.json" "${name}" "${version}" \
      "${integrity}" || return 1
  done
}

if [[ -d "${install_dir}" ]]; then
  check "${install_dir}" ||
    fail "${install_dir} does not match the pinned packages; delete it and" \
      "run again"
  log "done: ${install_dir}/node_modules (already installed)"
  exit 0
fi

command -v npm >/dev/null 2>&1 ||
  fail "npm is not installed; install it with: sudo apt-get install npm" \
    "(or run: bash scripts/setup.sh --with-data)"
mkdir -p "${cache_dir}"
tmp_dir="$(mktemp -d "${cache_dir}/llama-cpp.XXXXXX")"
trap 'rm -rf "${tmp_dir}"' EXIT
cp "${LOCK_DIR}/package.json" "${LOCK_DIR}/package-lock.json" "${tmp_dir}/"
log "installing node-llama-cpp@${VERSION} (CPU only) with npm ci"
(cd "${tmp_dir}" && npm ci --omit=optional --ignore-scripts --no-audit \
  --no-fund --loglevel=error >/dev/null) ||
  fail "npm ci failed (no network?)"
check "${tmp_dir}" || fail "the installed packages do not match the pins"
mv "${tmp_dir}" "${install_dir}"
trap - EXIT
log "done: ${install_dir}/node_modules"
