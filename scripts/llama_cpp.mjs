// The program behind scripts/llama_cpp.sh (read its header for the
// options): one completion of a GGUF file in llama.cpp, through the
// node-llama-cpp packages scripts/fetch_llama_cpp.sh installed (and its
// @huggingface/gguf, which reads the header first).
//
//   node llama_cpp.mjs PACKAGES_DIR REQUEST_JSON
//
// REQUEST_JSON: {"gguf": FILE, "text": STRING | "ids": [ID...],
//                "context": N | null, "max_tokens": N, "threads": N,
//                "temperature": T, "seed": S, "continuation_only": BOOL}
//
// A text is tokenized as llama.cpp's llama-cli does: the BOS first when the
// file's tokenizer.ggml.add_bos_token says so, then the text without
// special tokens; ids are used as they are. Then tokens are drawn one at a
// time until max_tokens, an end-of-generation token or a full context
// (never a context shift: that would drop the prompt's start). Prints the
// prompt (the text, or the ids' text) and then the continuation as it
// grows, and a newline; errors go to stderr with exit status 1.
import {readFileSync} from "node:fs";
import {pathToFileURL} from "node:url";

const fail = (message) => {
  process.stderr.write(`llama_cpp.sh: error: ${message}\n`);
  process.exit(1);
};

const [packagesDir, requestFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestFile, "utf8"));
const load = (path) => import(pathToFileURL(`${packagesDir}/node_modules/${path}`).href);
const {gguf} = await load("@huggingface/gguf/dist/index.mjs");
const {getLlama, LlamaLogLevel} = await load("node-llama-cpp/dist/index.js");

// The header first, with @huggingface/gguf's reader: llama.cpp given a
// file whose version or counts are garbage ran for minutes and took 5 GB.
let header;
try {
  header = await gguf(request.gguf, {allowLocalFile: true});
} catch (error) {
  fail(`${request.gguf} is not a GGUF file llama.cpp can read: ${error.message}`);
}

// build "never": the prebuilt CPU library or an error, never a download or
// a build of llama.cpp (the CLI, `node-llama-cpp complete`, has no such
// option and may try one).
let llama;
let model;
try {
  llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
} catch (error) {
  fail(`cannot start llama.cpp for node (bash scripts/fetch_llama_cpp.sh ` +
       `installs it): ${error.message}`);
}
try {
  model = await llama.loadModel({modelPath: request.gguf, gpuLayers: 0});
} catch (error) {
  fail(`llama.cpp could not load ${request.gguf}: ${error.message}`);
}
// llama.cpp aborts the process on an id past its vocabulary: check first.
const vocabulary = header.metadata["tokenizer.ggml.tokens"]?.length;
const prompt = request.ids != null
    ? request.ids
    : [...(model.tokens.shouldPrependBosToken ? [model.tokens.bos] : []),
       ...model.tokenize(request.text, false)];
const outside = (request.ids ?? []).find(
    (id) => !Number.isInteger(id) || id < 0 || (vocabulary != null && id >= vocabulary));
if (outside !== undefined) {
  fail(`--prompt-ids: ${outside} is no token id of ${request.gguf} ` +
       `(its vocabulary: ${vocabulary} tokens, ids 0 to ${vocabulary - 1})`);
}
if (prompt.length === 0) {
  fail(`the prompt is empty, and ${request.gguf} adds no BOS before a text ` +
       "(tokenizer.ggml.add_bos_token false): give at least one token");
}
const contextSize = request.context ?? model.trainContextSize;
// A context llama.cpp would allocate whole: past the model's training
// length only by as much as a RoPE scaling can stretch it (the largest
// factor rotor exports is 64), so a typo cannot exhaust the memory.
const kMaxContextFactor = 64;
if (contextSize > kMaxContextFactor * model.trainContextSize) {
  fail(`--context ${contextSize} is more than ${kMaxContextFactor} times ` +
       `the ${model.trainContextSize} tokens ${request.gguf} was trained at; ` +
       "give a context the model can use");
}
if (prompt.length >= contextSize) {
  fail(`the prompt is ${prompt.length} tokens, which leaves no room in a ` +
       `context of ${contextSize}; give a larger --context`);
}
const context = await model.createContext({
  contextSize,
  batchSize: Math.min(512, contextSize),
  threads: request.threads,
});
const sequence = context.getSequence();

if (!request.continuation_only) {
  process.stdout.write(request.ids != null ? model.detokenize(request.ids) : request.text);
}
const generated = [];
let shown = "";
const room = contextSize - prompt.length;
const limit = Math.min(request.max_tokens, room);
if (limit > 0) {
  const sampling = request.temperature > 0
      ? {temperature: request.temperature, topK: 0, topP: 1, minP: 0, seed: request.seed}
      : {temperature: 0};
  for await (const token of sequence.evaluate(prompt, sampling)) {
    if (model.isEogToken(token)) break;
    generated.push(token);
    // The whole continuation's text each time, so a character split
    // across tokens appears once it is complete.
    const text = model.detokenize(generated);
    if (text.startsWith(shown) && !text.endsWith("\uFFFD")) {
      process.stdout.write(text.slice(shown.length));
      shown = text;
    }
    if (generated.length >= limit) break;
  }
}
const text = model.detokenize(generated);
process.stdout.write((text.startsWith(shown) ? text.slice(shown.length) : "") + "\n");
await context.dispose();
await model.dispose();
