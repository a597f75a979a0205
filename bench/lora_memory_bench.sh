#!/usr/bin/env bash
# Full fine-tuning against LoRA on the SmolLM2-135M shape (docs/lora.md):
# configs/extend/hf-yarn-4x.yaml (every layer checkpointed, as the LoRA
# config does) against configs/extend/hf-yarn-4x-lora.yaml, and the LoRA
# config with adapters only (finetune.trainable=[]), each for STEPS steps
# at 2048 tokens from the same random-weight base. For each run it prints
#   peak RSS      the process's maximum resident set size (/usr/bin/time -v)
#   trainable     the parameters that get gradients and AdamW moments
#   tok/s         the trainer's last progress line
#   checkpoint    model.safetensors + optimizer.safetensors bytes
# The base's weights hash and the time it took are in the LoRA runs' logs.
#
# Usage: bash bench/lora_memory_bench.sh
# Environment: STEPS (default 2), THREADS (default 0 = all cores),
#   ROTOR_BIN (default build/rotor). Writes to a temporary folder, removed
#   at the end; the data is this repository's docs as bytes.
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROTOR="${ROTOR_BIN:-${REPO_ROOT}/build/rotor}"
steps="${STEPS:-2}"
threads="${THREADS:-0}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

mkdir -p "${work}/text"
cat "${REPO_ROOT}"/docs/*.md "${REPO_ROOT}/README.md" >"${work}/text/a.txt"
for _ in 1 2 3 4; do cat "${work}/text/a.txt"; done >"${work}/text/b.txt"
"${ROTOR}" prepare --input "${work}/text" --output "${work}/data" \
  --val-fraction 0.4 >/dev/null
"${ROTOR}" export --random "${REPO_ROOT}/configs/models/smollm2-135m.yaml" \
  --dtype bfloat16 --output "${work}/base" >/dev/null

run() {
  local name="$1" config="$2"
  shift 2
  /usr/bin/time -v "${ROTOR}" train "${config}" "data.path=${work}/data" \
    "train.init_from=${work}/base" "output_dir=${work}/${name}" \
    "train.max_steps=${steps}" "train.threads=${threads}" \
    logging.progress=false "$@" --samples 0 >"${work}/${name}.log" 2>&1
  local rss trainable speed bytes
  rss="$(awk '/Maximum resident set size/ {print $6}' "${work}/${name}.log")"
  trainable="$(grep -o '[0-9]* of [0-9]* parameters train' "${work}/${name}.log" |
    cut -d' ' -f1 || true)"
  speed="$(grep -o '[0-9]* tok/s' "${work}/${name}.log" | tail -1)"
  bytes="$(du -cb "${work}/${name}"/checkpoints/*/model.safetensors \
    "${work}/${name}"/checkpoints/*/optimizer.safetensors | tail -1 | cut -f1)"
  printf '%-12s peak RSS %6d MB  trainable %11s  %9s  checkpoint %5d MB\n' \
    "${name}" "$((rss * 1024 / 1000000))" "${trainable:-all}" "${speed}" \
    "$((bytes / 1000000))"
  grep -o 'fine-tuning .* with a frozen base' "${work}/${name}.log" || true
}

run full "${REPO_ROOT}/configs/extend/hf-yarn-4x.yaml" \
  train.activation_checkpointing=layers
run lora "${REPO_ROOT}/configs/extend/hf-yarn-4x-lora.yaml"
run lora-only "${REPO_ROOT}/configs/extend/hf-yarn-4x-lora.yaml" \
  'finetune.trainable=[]'
