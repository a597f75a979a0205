// The reference rotor's Hugging Face tokenizers are checked against: the
// JavaScript port of HF tokenizers (@lenml/tokenizers 3.7.2, a fork of
// transformers.js's tokenizers), run on a tokenizer.json. The conformance test
// (hf_conformance_test.cc) and bench/tokenizer_bench.cc run it; so can you.
// Fetch the library and the tokenizers first: bash scripts/fetch_tokenizers.sh
//
//   node tests/train/tokenizer/hf_reference.mjs --tokenizer T.json FILE...
//     prints JSON: {"tokenizer", "results": [{"input", "text", "encodings":
//     [{"add_special_tokens": true, "ids", "decode", "decode_skip_special"},
//      {"add_special_tokens": false, ...}]}]}, one result per FILE, where
//     "text" is the file read as a WHATWG TextDecoder reads it (each maximal
//     invalid UTF-8 subpart becomes U+FFFD, a leading BOM is kept), "ids"
//     is encode(text) and "decode"/"decode_skip_special" are decode(ids)
//     without/with skip_special_tokens.
//   node tests/train/tokenizer/hf_reference.mjs --tokenizer T.json \
//       --bench FILE [--runs N]
//     prints JSON: {"load_seconds", "load_cpu_seconds", "bytes", "tokens",
//     "first_seconds", "seconds", "cpu_seconds", "mb_per_s", "tokens_per_s"}:
//     the time (wall, and CPU of all threads) to read and build the
//     tokenizer; the first encode of the whole file as one string (cold
//     caches, JIT warming up); the best of N (default 3) in wall and in CPU
//     time, from which the rates are computed (add_special_tokens false;
//     MB = 1e6 bytes).
//
// --lib PATH picks the library's dist/main.mjs (default: the one
// fetch_tokenizers.sh unpacks under ${ROTOR_CACHE_DIR:-~/.cache/rotor}).
//
// One correction to the port: HF's tokenizers library (Rust) reads \s in a
// tokenizer.json regex as Unicode White_Space, but the port hands the
// pattern to JavaScript's RegExp, whose \s also matches U+FEFF and misses
// U+0085, so Llama 3 splits "a\u0085b" or "  \uFEFF" differently from HF.
// withUnicodeWhiteSpace spells \s and \S out as Unicode White_Space in the
// tokenizer.json's patterns before the port reads them (the only change);
// --js-whitespace leaves them alone, to see the port's own behaviour.
//
// Like rotor, the reference sees the tokenizer.json alone: no
// tokenizer_config.json, so no transformers-level extras. In particular
// decode never runs transformers' clean_up_tokenization_spaces (which would
// turn "a ." into "a."): HF's tokenizers library does not either.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const kUsage =
  "usage: node hf_reference.mjs --tokenizer T.json [--lib main.mjs] " +
  "[--js-whitespace] FILE...\n" +
  "       node hf_reference.mjs --tokenizer T.json [--lib main.mjs] " +
  "[--js-whitespace] --bench FILE [--runs N]";

function fail(message) {
  process.stderr.write(`hf_reference: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const cache = process.env.ROTOR_CACHE_DIR || join(homedir(), ".cache/rotor");
  const args = {
    lib: join(cache, "lenml-tokenizers-3.7.2/dist/main.mjs"),
    tokenizer: null,
    bench: null,
    runs: 3,
    jsWhiteSpace: false,
    inputs: [],
  };
  for (let i = 0; i < argv.length; ++i) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${flag} needs a value\n${kUsage}`);
      return argv[++i];
    };
    if (flag === "--tokenizer") args.tokenizer = value();
    else if (flag === "--lib") args.lib = value();
    else if (flag === "--bench") args.bench = value();
    else if (flag === "--runs") args.runs = Number(value());
    else if (flag === "--js-whitespace") args.jsWhiteSpace = true;
    else if (flag.startsWith("--")) fail(`unknown option ${flag}\n${kUsage}`);
    else args.inputs.push(flag);
  }
  if (!args.tokenizer) fail(`--tokenizer is required\n${kUsage}`);
  if (!args.bench && args.inputs.length === 0) fail(`no input\n${kUsage}`);
  if (!(args.runs >= 1)) fail("--runs must be a positive number");
  return args;
}

function readBytes(path) {
  try {
    return readFileSync(path);
  } catch (error) {
    fail(`cannot read ${path}: ${error.message}`);
  }
}

// Bytes -> text exactly as rotor's Tokenizer::Encode reads them.
const textDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

// Unicode White_Space (what \s means to HF), as the inside of a class.
const kWhiteSpace =
  "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

// `pattern` with \s and \S replaced by kWhiteSpace classes (inside a class,
// \s becomes its members; \S there has no such spelling and is refused).
function withUnicodeWhiteSpace(pattern) {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; ++i) {
    const c = pattern[i];
    if (c === "\\" && i + 1 < pattern.length) {
      const next = pattern[++i];
      if (next === "s") out += inClass ? kWhiteSpace : `[${kWhiteSpace}]`;
      else if (next === "S" && !inClass) out += `[^${kWhiteSpace}]`;
      else if (next === "S") fail(`cannot rewrite \\S in a class: ${pattern}`);
      else out += c + next;
      continue;
    }
    if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    out += c;
  }
  return out;
}

// Rewrites every {"pattern": {"Regex": ...}} of the tokenizer.json (Split
// pre-tokenizers, Replace normalizers and decoders).
function fixWhiteSpace(node) {
  if (node === null || typeof node !== "object") return;
  if (typeof node.pattern?.Regex === "string") {
    node.pattern.Regex = withUnicodeWhiteSpace(node.pattern.Regex);
  }
  for (const child of Object.values(node)) fixWhiteSpace(child);
}

async function loadTokenizer(args) {
  let library;
  try {
    library = await import(pathToFileURL(args.lib).href);
  } catch (error) {
    fail(
      `cannot load the JS port from ${args.lib} (${error.message}); ` +
        "fetch it with: bash scripts/fetch_tokenizers.sh",
    );
  }
  const start = performance.now();
  const startCpu = process.cpuUsage();
  const tokenizerJSON = JSON.parse(readBytes(args.tokenizer).toString("utf8"));
  if (!args.jsWhiteSpace) fixWhiteSpace(tokenizerJSON);
  const tokenizer = library.TokenizerLoader.fromPreTrained({
    tokenizerJSON,
    tokenizerConfig: { clean_up_tokenization_spaces: false },
  });
  const cpu = process.cpuUsage(startCpu);
  return {
    tokenizer,
    loadSeconds: (performance.now() - start) / 1e3,
    loadCpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}

// HF's decode([]) is ""; the port throws on an empty list instead.
function decode(tokenizer, ids, skip_special_tokens) {
  if (ids.length === 0) return "";
  return tokenizer.decode(ids, {
    skip_special_tokens,
    clean_up_tokenization_spaces: false,
  });
}

function reference(tokenizer, inputs) {
  const results = inputs.map((input) => {
    const text = textDecoder.decode(readBytes(input));
    const encodings = [true, false].map((add_special_tokens) => {
      const ids = tokenizer.encode(text, { add_special_tokens });
      return {
        add_special_tokens,
        ids,
        decode: decode(tokenizer, ids, false),
        decode_skip_special: decode(tokenizer, ids, true),
      };
    });
    return { input, text, encodings };
  });
  return { results };
}

function bench(tokenizer, path, runs) {
  const bytes = readBytes(path);
  const text = textDecoder.decode(bytes);
  const seconds = [];
  const cpuSeconds = [];
  let tokens = 0;
  for (let run = 0; run < runs; ++run) {
    const start = performance.now();
    const startCpu = process.cpuUsage();
    tokens = tokenizer.encode(text, { add_special_tokens: false }).length;
    const cpu = process.cpuUsage(startCpu);
    seconds.push((performance.now() - start) / 1e3);
    cpuSeconds.push((cpu.user + cpu.system) / 1e6);
  }
  const best = Math.min(...seconds);
  return {
    bytes: bytes.length,
    tokens,
    first_seconds: seconds[0],
    seconds: best,
    cpu_seconds: Math.min(...cpuSeconds),
    mb_per_s: bytes.length / best / 1e6,
    tokens_per_s: tokens / best,
  };
}

const args = parseArgs(process.argv.slice(2));
const { tokenizer, loadSeconds, loadCpuSeconds } = await loadTokenizer(args);
const output = args.bench
  ? {
      load_seconds: loadSeconds,
      load_cpu_seconds: loadCpuSeconds,
      ...bench(tokenizer, args.bench, args.runs),
    }
  : { tokenizer: args.tokenizer, ...reference(tokenizer, args.inputs) };
process.stdout.write(JSON.stringify(output) + "\n");
