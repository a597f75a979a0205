#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (scripts/setup.sh --fuzz:
# clang, ASan and UBSan, in build-fuzz/) and runs each one in turn, one core,
# on its seed corpus (tests/fuzz/corpus/<name>/) and dictionary
# (tests/fuzz/<name>.dict). New inputs go to build-fuzz/corpus/<name>/, and a
# crash, timeout or out-of-memory input to build-fuzz/artifacts/<name>/; keep
# one as a regression in tests/fuzz/regressions/<name>/ (the unit test
# FuzzReplay replays them). Prints runs, seconds and exec/s per harness;
# exits non-zero when any harness fails.
#
#   bash scripts/fuzz.sh --smoke            # 2000 runs each (seconds)
#   bash scripts/fuzz.sh --runs 1000000     # a long run
#   bash scripts/fuzz.sh --runs 1000000 json safetensors   # some harnesses
#
# Environment:
#   ROTOR_BUILD_DIR   the fuzz build directory (default: <repo>/build-fuzz)
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build-fuzz}"
readonly ALL_HARNESSES=(safetensors token_file train_config model_config hf_config json
  gguf_writer
  override
  tokenizer_json)
# Inputs longer than any real header or config the seeds resemble add
# nothing but time.
readonly MAX_LEN=4096
# Seconds one input may take before it counts as a hang.
readonly TIMEOUT=10

runs=""
harnesses=()
while (($# > 0)); do
  case "$1" in
    --smoke) runs=2000 ;;
    --runs)
      runs="${2:?--runs needs a count}"
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "fuzz.sh: unknown option '$1' (try --help)" >&2
      exit 2
      ;;
    *) harnesses+=("$1") ;;
  esac
  shift
done
if [[ -z "${runs}" ]]; then
  echo "fuzz.sh: give --smoke or --runs N (try --help)" >&2
  exit 2
fi
((${#harnesses[@]} > 0)) || harnesses=("${ALL_HARNESSES[@]}")

ROTOR_BUILD_DIR="${BUILD_DIR}" bash "${REPO_ROOT}/scripts/setup.sh" --fuzz

# The token_file harness writes each input to a temporary file: on tmpfs
# that is many times faster than on disk.
[[ -d /dev/shm && -w /dev/shm ]] && export TMPDIR=/dev/shm
# Leak checks on; any sanitizer report stops the run with a stack trace.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

failed=()
summary=()
for name in "${harnesses[@]}"; do
  fuzzer="${BUILD_DIR}/tests/fuzz/${name}_fuzzer"
  if [[ ! -x "${fuzzer}" ]]; then
    echo "fuzz.sh: no harness '${name}' (known: ${ALL_HARNESSES[*]})" >&2
    exit 2
  fi
  corpus="${BUILD_DIR}/corpus/${name}"
  artifacts="${BUILD_DIR}/artifacts/${name}"
  log_file="${BUILD_DIR}/fuzz-${name}.log"
  mkdir -p "${corpus}" "${artifacts}"
  echo "fuzz.sh: ${name}: ${runs} runs (log: ${log_file})"
  start=${SECONDS}
  status=0
  "${fuzzer}" -runs="${runs}" -max_len="${MAX_LEN}" -timeout="${TIMEOUT}" \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="${REPO_ROOT}/tests/fuzz/${name}.dict" \
    -artifact_prefix="${artifacts}/" \
    "${corpus}" "${REPO_ROOT}/tests/fuzz/corpus/${name}" \
    >"${log_file}" 2>&1 || status=$?
  seconds=$((SECONDS - start))
  # From libFuzzer's final stats (-print_final_stats=1).
  executed="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' \
    "${log_file}" | tail -n 1)"
  exec_per_second="$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' \
    "${log_file}" | tail -n 1)"
  if ((status != 0)); then
    failed+=("${name}")
    tail -n 40 "${log_file}" >&2
    summary+=("${name}: FAILED (exit ${status}) after ${seconds} s; input in ${artifacts}/")
  else
    # libFuzzer's rate is in whole seconds: 0 when it ran under one.
    rate="${exec_per_second:-?} exec/s"
    [[ "${exec_per_second}" == 0 ]] && rate="too short for a rate"
    summary+=("${name}: ${executed:-?} executions, ${seconds} s, ${rate}, no crash, timeout or leak")
  fi
done

echo
printf 'fuzz.sh: %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
