#!/usr/bin/env bash
# Runs the llama.cpp this project installs (node-llama-cpp's prebuilt CPU
# library, scripts/fetch_llama_cpp.sh) on a GGUF file that rotor export
# wrote, with settings that make its text comparable with rotor generate's:
#
#   bash scripts/llama_cpp.sh complete FILE.gguf [options] "prompt text"
#   bash scripts/llama_cpp.sh complete FILE.gguf [options] --prompt-ids IDS
#
# prints the prompt, then llama.cpp's continuation of it, then a newline.
# The text is tokenized as llama.cpp's llama-cli does: the BOS first when
# the file's tokenizer.ggml.add_bos_token says so (rotor export writes it
# as the model was trained, docs/gguf.md), so `rotor generate --prompt TEXT
# --temperature 0` and this print the same text when the two agree.
#
#   --context N      the context size (default: the file's
#                    llama.context_length; at most 64 times it);
#                    generation stops when it is full
#   --max-tokens N   at most N new tokens (default 200, as rotor generate)
#   --temperature T  0 (the default) is greedy; above 0, sampling from the
#                    whole distribution (no top-k, top-p or min-p)
#   --seed S         the sampling seed (default 0)
#   --threads N      llama.cpp's threads (default: the CPU's cores, at most
#                    nproc; on a busy machine 1 is faster, as llama.cpp's
#                    waiting workers spin: 2.4 s against 7.9 s for 2 threads
#                    on 2 cores while a build ran)
#   --prompt-ids IDS the prompt as token ids, used exactly as given (a JSON
#                    array, or ids separated by spaces or commas)
#   --continuation-only
#                    print only the new text
#
# Always: CPU only, no repeat penalty (node-llama-cpp's CLI defaults to 1.1,
# which changes the text) and no context shift. Only `complete`: the models
# rotor trains and exports are base models without a chat template, so a
# chat command would wrap the prompt in a template they never saw.
#
# It needs no network: node-llama-cpp is loaded with build "never", so a
# missing or unusable library is an error, never a download or a build.
# The CLI, node_modules/.bin/node-llama-cpp complete, also runs these files
# (with --gpu false --threads N -c N --temperature 0 --repeatPenalty 1), but
# its output carries progress bars and colours, it has no such option, and
# it took 13 s on a 2-layer model where this takes 2 s.
#
# Elsewhere, the same file runs in llama.cpp's own tools: llama-cli -m
# FILE.gguf -c N --temp 0 --repeat-penalty 1 -p "prompt text", or ollama
# (docs/gguf.md). Environment: ROTOR_CACHE_DIR (default ~/.cache/rotor), where
# scripts/fetch_llama_cpp.sh installs node-llama-cpp. Exit status: 0, or 1
# with a message on stderr (a missing file or install, a bad option, a
# failure in llama.cpp).
set -euo pipefail

SCRIPTS="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPTS
readonly PACKAGES="${ROTOR_CACHE_DIR:-${HOME}/.cache/rotor}/llama-cpp-3.21.1"

usage() {
  # The header above, without its comment marks, up to `set`.
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
fail() {
  echo "llama_cpp.sh: error: $*" >&2
  exit 1
}
# A non-negative integer option's value.
count() {
  [[ "$2" =~ ^[0-9]+$ ]] || fail "$1 takes a whole number, got '$2'"
  echo "$2"
}

if [[ $# -eq 0 ]]; then
  usage >&2
  exit 1
fi
case "$1" in
  -h | --help)
    usage
    exit 0
    ;;
  complete) shift ;;
  chat)
    fail "there is no chat command: rotor's models are base models without" \
      "a chat template; continue a text with: llama_cpp.sh complete FILE.gguf" \
      "\"text\""
    ;;
  *) fail "unknown command '$1' (the command is complete; see --help)" ;;
esac

gguf=""
text=""
have_text=0
ids=""
context=null
max_tokens=200
temperature=0
seed=0
threads=""
continuation_only=false
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --context | --max-tokens | --temperature | --seed | --threads | \
      --prompt-ids)
      [[ $# -ge 2 ]] || fail "$1 needs a value"
      case "$1" in
        --context) context="$(count "$1" "$2")" ;;
        --max-tokens) max_tokens="$(count "$1" "$2")" ;;
        --seed) seed="$(count "$1" "$2")" ;;
        --threads) threads="$(count "$1" "$2")" ;;
        --temperature)
          [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
            fail "--temperature takes a number of at least 0, got '$2'"
          temperature="$2"
          ;;
        --prompt-ids) ids="$2" ;;
      esac
      shift 2
      ;;
    --continuation-only)
      continuation_only=true
      shift
      ;;
    --*) fail "unknown option '$1' (see --help)" ;;
    *)
      if [[ -z "${gguf}" ]]; then
        gguf="$1"
      elif [[ "${have_text}" -eq 0 ]]; then
        text="$1"
        have_text=1
      else
        fail "unexpected argument '$1': give the prompt as one argument" \
          "(quote it)"
      fi
      shift
      ;;
  esac
done

[[ -n "${gguf}" ]] || fail "no GGUF file given (see --help)"
[[ -e "${gguf}" ]] || fail "${gguf}: no such file"
[[ -f "${gguf}" ]] || fail "${gguf}: not a regular file"
[[ "$(head -c 4 "${gguf}")" == GGUF ]] ||
  fail "${gguf}: not a GGUF file (it does not start with 'GGUF'); write" \
    "one with: rotor export --format gguf"
if [[ -n "${ids}" && "${have_text}" -eq 1 ]]; then
  fail "give either a prompt text or --prompt-ids, not both"
fi
[[ -n "${ids}" || "${have_text}" -eq 1 ]] ||
  fail "no prompt: give a text after the file, or --prompt-ids"
[[ "${context}" != 0 ]] || fail "--context must be at least 1"
if [[ -z "${threads}" ]]; then
  # Physical cores: llama.cpp gains nothing from a core's second hardware
  # thread, and its waiting workers spin.
  cores="$(lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u |
    wc -l || true)"
  threads="$(nproc)"
  [[ "${cores}" -ge 1 && "${cores}" -lt "${threads}" ]] && threads="${cores}"
fi
[[ "${threads}" -ge 1 ]] || fail "--threads must be at least 1"

command -v node >/dev/null 2>&1 ||
  fail "node is not on the PATH; install it (sudo apt-get install npm)," \
    "then run: bash scripts/fetch_llama_cpp.sh"
[[ -d "${PACKAGES}/node_modules/node-llama-cpp" ]] ||
  fail "llama.cpp is not installed: ${PACKAGES}/node_modules/node-llama-cpp" \
    "is missing; install it with: bash scripts/fetch_llama_cpp.sh"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
# The request as JSON, built by node so that any text is quoted right.
node -e '
  const [gguf, text, haveText, ids, context, maxTokens, temperature, seed,
         threads, continuationOnly] = process.argv.slice(1);
  const request = {gguf, context: context === "null" ? null : Number(context),
                   max_tokens: Number(maxTokens),
                   temperature: Number(temperature), seed: Number(seed),
                   threads: Number(threads),
                   continuation_only: continuationOnly === "true"};
  if (haveText === "1") {
    request.text = text;
  } else {
    const list = ids.trim().replace(/^\[|\]$/g, "").split(/[\s,]+/)
                    .filter((s) => s !== "");
    if (list.length === 0 || !list.every((s) => /^[0-9]+$/.test(s))) {
      console.error(`llama_cpp.sh: error: --prompt-ids: expected token ids ` +
                    `(a JSON array, or ids separated by spaces or commas), ` +
                    `got ${JSON.stringify(ids.slice(0, 80))}`);
      process.exit(1);
    }
    request.ids = list.map(Number);
  }
  process.stdout.write(JSON.stringify(request));' \
  "$(realpath "${gguf}")" "${text}" "${have_text}" "${ids}" "${context}" \
  "${max_tokens}" "${temperature}" "${seed}" "${threads}" \
  "${continuation_only}" >"${work}/request.json"
node "${SCRIPTS}/llama_cpp.mjs" "${PACKAGES}" "${work}/request.json"
