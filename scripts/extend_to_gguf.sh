#!/usr/bin/env bash
# From a context extension to llama.cpp, end to end: scripts/hf_extend.sh
# (a SmolLM2-135M-shaped model extended 4x with YaRN, 512 -> 2048
# positions), then the extended model written as one f16 GGUF file (rotor
# export --format gguf, docs/gguf.md), then one generation from it in the
# real llama.cpp (scripts/llama_cpp.sh: node-llama-cpp, installed by
# scripts/fetch_llama_cpp.sh) at the extended length: a prompt of 2016
# tokens of Brown (the validation split) and 32 new tokens, 2048 in all.
# Arguments go to hf_extend.sh (and so to rotor train).
#
#   bash scripts/extend_to_gguf.sh            # hf_extend.sh's minutes, then
#                                             # about a minute more
#   ROTOR_CHECK_GGUF=1 bash scripts/extend_to_gguf.sh
#                                             # also the long test that
#                                             # compares llama.cpp's
#                                             # log-probs with rotor's at
#                                             # 2048 tokens (minutes)
#
# Writes runs/hf-extend/extended-f16.gguf, relative to the current
# directory, like hf_extend.sh. Then: bash scripts/llama_cpp.sh complete
# runs/hf-extend/extended-f16.gguf --context 2048 "Some text"; elsewhere,
# llama.cpp's llama-cli or ollama (docs/gguf.md).
# Environment: ROTOR_BUILD_DIR (default <repo>/build), ROTOR_CACHE_DIR.
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"
readonly ROTOR="${BUILD_DIR}/rotor"
readonly RUN=runs/hf-extend
readonly GGUF="${RUN}/extended-f16.gguf"

step() { echo "extend_to_gguf.sh: $*"; }

bash "${REPO_ROOT}/scripts/hf_extend.sh" "$@"
bash "${REPO_ROOT}/scripts/fetch_llama_cpp.sh"

step "writing ${GGUF}"
"${ROTOR}" export --checkpoint "${RUN}" --format gguf --dtype f16 --force \
  --output "${GGUF}"

step "generating with llama.cpp at 2048 tokens"
# The prompt: the first 2016 tokens of the validation split hf_extend.sh
# prepared (train/data/token_file.h: a 64-byte header whose dtype at
# offset 12 is 1 for uint16 ids, 2 for uint32, then the ids).
ids="$(node -e '
  const bytes = require("fs").readFileSync(process.argv[1]);
  const wide = bytes.readUInt32LE(12) === 2;
  const ids = [];
  for (let at = 64; at < bytes.length && ids.length < 2016; at += wide ? 4 : 2) {
    ids.push(wide ? bytes.readUInt32LE(at) : bytes.readUInt16LE(at));
  }
  if (ids.length < 2016) throw new Error(`only ${ids.length} tokens in ${process.argv[1]}`);
  console.log(ids.join(" "));' "${RUN}/data/val.bin")"
continuation="$(bash "${REPO_ROOT}/scripts/llama_cpp.sh" complete "${GGUF}" \
  --context 2048 --max-tokens 32 --prompt-ids "${ids}" --continuation-only)"
echo "llama.cpp continued the 2016-token prompt with: ${continuation}"
echo "(the model began as random weights and trained only hf_extend.sh's few" \
  "steps: a repeated word such as \"the the the\" is what it has learnt;" \
  "this run shows that llama.cpp loads and runs the extended file at 2048" \
  "tokens, not that the model writes well)"

if [[ "${ROTOR_CHECK_GGUF:-0}" == 1 ]]; then
  step "comparing llama.cpp's log-probabilities with rotor's"
  ROTOR_HF_EXTEND_RUN="$(pwd)/${RUN}" "${BUILD_DIR}/tests/rotor_long_tests" \
    --gtest_filter='GgufSmolLm2.*'
fi
step "done: ${GGUF}"
