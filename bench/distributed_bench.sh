#!/usr/bin/env bash
# Data-parallel training on this machine (docs/distributed.md): the same
# config trained by one process with every core's thread, and by one rank
# per core with one thread each (mpiexec -np CORES), from the figures the
# trainer logs to metrics.jsonl:
#
#   tokens/s      the step windows after the first (the first holds the
#                 warm-up: thread pools, the memory pool, page faults)
#   wait share    allreduce_wait_share: the part of those windows a rank
#                 spent waiting for gradient sums that the backward pass did
#                 not hide (data-parallel runs only)
#   step s        seconds per optimizer step, from tokens/s
#   tok/CPU-s     the run's tokens over the CPU time of all its processes
#                 (user + system, start-up and the final evaluation
#                 included): a figure less sensitive to other jobs on a
#                 shared machine than tokens/s
#
# Usage: bash bench/distributed_bench.sh [CONFIG [key.path=value ...]]
#   (default configs/default.yaml). Environment: STEPS (default 40) optimizer
#   steps per run, LOG_EVERY (default 10) steps per window.
# Needs a build with MPI (bash scripts/setup.sh) and python3 to read the
# JSON lines. Runs as root too (--allow-run-as-root).
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROTOR="${ROTOR_BIN:-${REPO_ROOT}/build/rotor}"
config="${1:-${REPO_ROOT}/configs/default.yaml}"
shift || true
cores="$(nproc)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

# Median over the windows after the first of tokens/s and of the wait share;
# $2: the CPU seconds of the run.
summarise() {
  python3 - "$1" "$2" <<'EOF'
import json, statistics, sys
steps = [json.loads(line) for line in open(sys.argv[1]) if '"loss"' in line]
later = steps[1:] or steps
tps = statistics.median(s["tokens_per_second"] for s in later)
wait = [s["allreduce_wait_share"] for s in later if "allreduce_wait_share" in s]
tokens = (steps[1]["tokens_seen"] - steps[0]["tokens_seen"]) / (steps[1]["step"] - steps[0]["step"]) if len(steps) > 1 else steps[0]["tokens_seen"] / steps[0]["step"]
cpu = steps[-1]["tokens_seen"] / float(sys.argv[2])
print(f"{tps:10.0f} tokens/s  step {tokens / tps:7.3f} s  {cpu:8.0f} tok/CPU-s  "
      + (f"allreduce wait {100 * statistics.median(wait):4.1f}%" if wait else "allreduce wait    -"))
EOF
}

run() {
  local ranks=$1 threads=$2 name="${1}x${2}"
  shift 2
  local args=(train "${config}" "output_dir=${work}/${name}" --samples 0
    "train.max_steps=${STEPS:-40}" "logging.log_every_n_steps=${LOG_EVERY:-10}"
    eval.every_n_steps=0
    checkpoint.every_n_steps=0 logging.progress=false
    "train.threads=${threads}" "$@")
  local launcher=()
  ((ranks == 1)) ||
    launcher=(mpiexec --allow-run-as-root --oversubscribe -np "${ranks}")
  # bash's `time` adds up the CPU time of every process the command waited
  # for: mpiexec and its ranks.
  local TIMEFORMAT='%U %S' cpu
  cpu="$({ time "${launcher[@]}" "${ROTOR}" "${args[@]}" \
    >"${work}/${name}.log" 2>&1; } 2>&1)" || {
    cat "${work}/${name}.log" >&2
    exit 1
  }
  printf '%s ranks x %s threads: ' "${ranks}" "${threads}"
  summarise "${work}/${name}/metrics.jsonl" "$(awk '{print $1 + $2}' <<<"${cpu}")"
}

echo "config: ${config} $*"
run 1 "${cores}" "$@"
run "${cores}" 1 "$@"
