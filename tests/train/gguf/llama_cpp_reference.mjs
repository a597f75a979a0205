// Runs a GGUF file rotor wrote through the real llama.cpp (node-llama-cpp's
// prebuilt CPU library) and an independent GGUF reader (@huggingface/gguf),
// both installed by scripts/fetch_llama_cpp.sh. gguf_llama_cpp_test.cc
// drives it and compares with rotor.
//
//   node llama_cpp_reference.mjs PACKAGES_DIR REQUEST.json
//
// REQUEST: {"gguf": FILE, "texts": [STRING...], "ids": [ID...],
//           "context": N}
// prints one JSON object:
//   metadata     every key @huggingface/gguf read: {key: {type, value}}
//                (arrays as {type: "array", length, values})
//   tensors      [{name, shape, dtype}]
//   tokens       [[ID...]] llama.cpp's tokenization of each text
//                (model.tokenize(text, special_tokens): no BOS; with
//                REQUEST.special_tokens, special tokens written in the
//                text are cut out as their ids, as HF's tokenizers do)
//   bos, eos     the ids llama.cpp read
//   log_probs    for ids[1..]: ln p(ids[t] | ids[<t]) from llama.cpp's
//                full next-token distribution (controlledEvaluate with
//                generateNext.probabilities: softmax of the logits, in
//                float32), null first; evaluated in one context of N
//                tokens, float32 KV cache, no flash attention, one thread
//   top          llama.cpp's most probable next token at each position
import {readFileSync} from "node:fs";
import {pathToFileURL} from "node:url";

const [packagesDir, requestFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestFile, "utf8"));
const load = (path) => import(pathToFileURL(`${packagesDir}/node_modules/${path}`).href);
const {gguf} = await load("@huggingface/gguf/dist/index.mjs");
const {getLlama, LlamaLogLevel} = await load("node-llama-cpp/dist/index.js");

const out = {};
const parsed = await gguf(request.gguf, {allowLocalFile: true, typedMetadata: true});
out.metadata = {};
for (const [key, entry] of Object.entries(parsed.typedMetadata)) {
  const plain = (v) => (typeof v === "bigint" ? Number(v) : v);
  out.metadata[key] = Array.isArray(entry.value)
      ? {type: "array", subType: entry.subType, length: entry.value.length,
         values: entry.value.map(plain)}
      : {type: entry.type, value: plain(entry.value)};
}
out.tensors = parsed.tensorInfos.map((t) => ({
  name: t.name, shape: t.shape.map(Number), dtype: t.dtype}));

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: request.gguf, gpuLayers: 0});
out.tokens = (request.texts ?? []).map(
    (text) => Array.from(model.tokenize(text, request.special_tokens === true)));
out.bos = model.tokens.bos;
out.eos = model.tokens.eos;

const ids = request.ids ?? [];
if (ids.length > 0) {
  const context = await model.createContext({
    contextSize: request.context ?? ids.length,
    batchSize: Math.min(512, ids.length),
    flashAttention: false,
    // One thread: llama.cpp's workers spin while they wait, and on a busy
    // machine two of them took 70 ms a token where one takes 0.2 ms.
    threads: 1,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
  });
  const sequence = context.getSequence();
  const input = ids.map((id) => [id, {generateNext: {probabilities: true}}]);
  const results = await sequence.controlledEvaluate(input);
  out.log_probs = [null];
  out.top = [];
  for (let t = 0; t < ids.length; ++t) {
    const probabilities = results[t]?.next?.probabilities;
    if (probabilities == null) throw new Error(`no probabilities at position ${t}`);
    out.top.push(probabilities.keys().next().value);
    if (t + 1 < ids.length) {
      const p = probabilities.get(ids[t + 1]) ?? 0;
      out.log_probs.push(p > 0 ? Math.log(p) : -1e300);
    }
  }
  await context.dispose();
}
await model.dispose();
process.stdout.write(JSON.stringify(out));
