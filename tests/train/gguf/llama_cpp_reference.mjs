// Runs a GGUF file rotor wrote through the real llama.cpp (node-llama-cpp's
// prebuilt CPU library) and an independent GGUF reader (@huggingface/gguf),
// both installed by scripts/fetch_llama_cpp.sh. gguf_llama_cpp_test.cc
// drives it and compares with rotor.
//
//   node llama_cpp_reference.mjs PACKAGES_DIR REQUEST.json
//
// REQUEST: {"gguf": FILE, "texts": [STRING...], "ids": [ID...],
//           "context": N, "generate": K}
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
//   generated    with REQUEST.generate = K instead: K tokens of llama.cpp's
//   text         greedy continuation of ids, and their text
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
if (ids.length > 0 || request.generate > 0) {
  const context = await model.createContext({
    contextSize: request.context ?? ids.length,
    batchSize: Math.min(512, Math.max(ids.length, 1)),
    flashAttention: false,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
    // One thread: llama.cpp's workers spin while they wait, and on a busy
    // machine two of them took 70 ms a token where one takes 0.2 ms.
    threads: 1,
  });
  const sequence = context.getSequence();
  if (request.generate > 0) {
    // A greedy continuation of the ids (the prompt).
    out.generated = [];
    for await (const token of sequence.evaluate(ids, {temperature: 0})) {
      out.generated.push(token);
      if (out.generated.length >= request.generate) break;
    }
    out.text = model.detokenize(out.generated);
  } else {
    // In chunks, so that only one chunk's distributions (a Map of the
    // whole vocabulary per position) are held at a time.
    out.log_probs = [null];
    out.top = [];
    const chunk = 64;
    for (let start = 0; start < ids.length; start += chunk) {
      const piece = ids.slice(start, start + chunk);
      const results = await sequence.controlledEvaluate(
          piece.map((id) => [id, {generateNext: {probabilities: true}}]));
      for (let i = 0; i < piece.length; ++i) {
        const t = start + i;
        const probabilities = results[i]?.next?.probabilities;
        if (probabilities == null) throw new Error(`no probabilities at position ${t}`);
        out.top.push(probabilities.keys().next().value);
        if (t + 1 < ids.length) {
          const p = probabilities.get(ids[t + 1]) ?? 0;
          out.log_probs.push(p > 0 ? Math.log(p) : -1e300);
        }
      }
    }
  }
  await context.dispose();
}
await model.dispose();
process.stdout.write(JSON.stringify(out));
