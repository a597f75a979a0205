// llama.cpp's side of build/bench/generate_bench: prefill and greedy decode
// of a GGUF file rotor exported, through node-llama-cpp (its prebuilt CPU
// library, installed by scripts/fetch_llama_cpp.sh), timed the way the
// bench times rotor's GenerateTokens.
//
//   node generate_llama_cpp.mjs PACKAGES_DIR FILE.gguf PROMPT_IDS N RUNS
//        THREADS KV
//
// PROMPT_IDS: a file of token ids separated by spaces; N: the tokens to
// decode (N >= 2); KV "f32": float32 keys and values and no flash
// attention, the arithmetic of rotor's cache; "default": node-llama-cpp's
// defaults (F16 cache, flash attention "auto").
//
// One context of prompt + N positions, batch size = the prompt's length
// (so that the prompt is one batch, as rotor's prefill is). Each run clears
// the sequence, then times sequence.evaluate(prompt, {temperature: 0}):
//   prefill  from the call to the first token it yields (the prompt's
//            forward and the first token's sampling)
//   decode   from the first token to the N-th, over N - 1 tokens (each a
//            one-token forward that reads the cache, and its sampling)
// One warm-up run, then RUNS timed ones; prints one line:
//   PREFILL DECODE INSIDE_PREFILL INSIDE_DECODE BACKEND
// the median prefill and decode seconds; the same two from llama.cpp's own
// record of each run (llama_perf_context_print, through printTimings:
// the time inside llama_decode, without node-llama-cpp's JavaScript around
// it; "prompt eval" and "eval" in its words); and the CPU backend llama.cpp
// loaded (libggml-cpu-BACKEND.so, one per ISA: zen4, haswell, ...).
import {readFileSync} from "node:fs";
import {pathToFileURL} from "node:url";

const [packagesDir, gguf, promptFile, decodeText, runsText, threadsText, kv] =
    process.argv.slice(2);
const prompt = readFileSync(promptFile, "utf8").trim().split(/\s+/).map(Number);
const decode = Number(decodeText);
const runCount = Number(runsText);
const load = (path) => import(pathToFileURL(`${packagesDir}/node_modules/${path}`).href);
const {getLlama, LlamaLogLevel} = await load("node-llama-cpp/dist/index.js");

// llama.cpp's perf lines and the CPU backend it loads arrive through the
// logger; errors go to stderr, the rest is dropped (its warnings are about
// what the bench does on purpose: a context of 4L, past the model's
// training length, and the byte tokenizer's ids as the special tokens of a
// config that names others).
const perfLines = [];
let backend = "unknown";
const llama = await getLlama({
  gpu: false,
  build: "never",
  logLevel: LlamaLogLevel.log,
  logger: (level, message) => {
    const loaded = /loaded CPU backend from .*libggml-cpu-([\w-]+)\.so/.exec(message);
    if (loaded) {
      backend = loaded[1];
    } else if (/eval time/.test(message)) {
      perfLines.push(message);
    } else if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) {
      process.stderr.write(message + "\n");
    }
  },
});
const model = await llama.loadModel({modelPath: gguf, gpuLayers: 0});
const context = await model.createContext({
  contextSize: prompt.length + decode,
  batchSize: prompt.length,
  threads: Number(threadsText),
  performanceTracking: true,
  ...(kv === "f32" ? {flashAttention: false, experimentalKvCacheKeyType: "F32",
             experimentalKvCacheValueType: "F32"}
          : {}),
});
const sequence = context.getSequence();

const now = () => Number(process.hrtime.bigint()) / 1e9;
async function run() {
  await sequence.clearHistory();
  let count = 0;
  let first = 0;
  let last = 0;
  const start = now();
  for await (const token of sequence.evaluate(prompt, {temperature: 0})) {
    void token;
    last = now();
    if (++count === 1) first = last;
    if (count >= decode) break;
  }
  return {prefill: first - start, decode: last - first};
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

// llama.cpp's record since the last print, which it resets: "prompt eval
// time = 12.34 ms / 256 tokens", "eval time = 5.6 ms / 127 runs". The
// logger is called asynchronously, so this waits for the two lines.
async function insideTimes() {
  await new Promise((resolve) => setTimeout(resolve, 50));
  perfLines.length = 0;
  await context.printTimings();
  for (let waited = 0; perfLines.length < 2 && waited < 2000; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // The run's prompt and its N - 1 decoded tokens, else NaN.
  const inside = {"prompt eval": NaN, "eval": NaN};
  const expected = {"prompt eval": prompt.length, "eval": decode - 1};
  for (const line of perfLines) {
    const m = /(prompt eval|eval) time\s*=\s*([\d.]+) ms\s*\/\s*(\d+)/.exec(line);
    if (m && Number(m[3]) === expected[m[1]]) inside[m[1]] = Number(m[2]) / 1e3;
  }
  return {prefill: inside["prompt eval"], decode: inside["eval"]};
}

await run();  // warm-up
await insideTimes();
const runs = [];
const insides = [];
for (let i = 0; i < runCount; ++i) {
  runs.push(await run());
  insides.push(await insideTimes());
}

process.stdout.write([
  median(runs.map((r) => r.prefill)), median(runs.map((r) => r.decode)),
  median(insides.map((r) => r.prefill)), median(insides.map((r) => r.decode)),
  backend].join(" ") + "\n");
await context.dispose();
await model.dispose();
