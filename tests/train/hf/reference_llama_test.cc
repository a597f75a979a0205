// Self-test of the HF test helpers (hf_folder_writer.h, reference_llama.h),
// which the tests of rotor's HF import trust: a one-layer model computed by
// hand; bytes of a safetensors file written by hand; the writer and the
// reader against each other across shards, with HF's shard assignment
// worked out by hand; bf16/f16 ties; each bad-input hook; the RoPE
// frequencies of every rope_type against values from the formulas; and
// invariants that a wrong reference would break (relative positions, the
// attention factor's square, which kv head a query head reads, tied
// embeddings, sliding windows, causality).
#include "tests/train/hf/reference_llama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/hf/hf_folder_writer.h"

namespace rotor::test::hf {
namespace {

using nlohmann::json;

// A small Llama: 2 layers, hidden 16, 4 query heads sharing 2 kv heads of 4.
json SmallLlamaConfig() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 16},
          {"intermediate_size", 24},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 32},
          {"max_position_embeddings", 64},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false}};
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double MaxAbsDifference(const std::vector<double>& a,
                        const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

// Rows [first, last) of a [T, V] logits array.
std::vector<double> Rows(const std::vector<double>& logits, int64_t vocab,
                         int64_t first, int64_t last) {
  return {logits.begin() + first * vocab, logits.begin() + last * vocab};
}

// The state dict of a written folder, to write again changed (float32 keeps
// the values exactly).
std::vector<HfStateTensor> StateDictOf(const HfFolder& folder,
                                       const json& config) {
  std::vector<HfStateTensor> state;
  for (const HfTensorSpec& spec : HfStateDictLayout(config)) {
    const HfWrittenTensor& tensor = folder.tensors.at(spec.name);
    state.push_back(
        {spec.name, tensor.shape,
         std::vector<float>(tensor.values.begin(), tensor.values.end())});
  }
  return state;
}

HfStateTensor& Find(std::vector<HfStateTensor>& state,
                    const std::string& name) {
  for (HfStateTensor& tensor : state) {
    if (tensor.name == name) return tensor;
  }
  throw std::runtime_error("no tensor " + name);
}

HfWriteOptions Float32() {
  HfWriteOptions options;
  options.dtype = "float32";
  return options;
}

ReferenceRope RopeOf(const json& config, int64_t seq_len) {
  return ReferenceRopeParameters(ParseReferenceConfig(config), seq_len);
}

// ---------------------------------------------------------------------------
// (a) A model small enough to compute by hand.

TEST(HfReference, OneLayerModelMatchesAHandComputation) {
  // hidden 2, one head of 2 (one rotating pair, inverse frequency
  // 10000^0 = 1, so position 1 turns by 1 radian), intermediate 1, vocab 3,
  // every Llama bias on.
  const json config = {{"model_type", "llama"},    {"hidden_size", 2},
                       {"intermediate_size", 1},   {"num_hidden_layers", 1},
                       {"num_attention_heads", 1}, {"num_key_value_heads", 1},
                       {"vocab_size", 3},          {"rms_norm_eps", 1e-6},
                       {"attention_bias", true},   {"mlp_bias", true}};
  const std::string l = "model.layers.0.";
  const std::vector<HfStateTensor> state = {
      {"model.embed_tokens.weight", {3, 2}, {1, 0, 0.5, -1, 2, 1}},
      {l + "self_attn.q_proj.weight", {2, 2}, {1, 0, 0, 1}},
      {l + "self_attn.q_proj.bias", {2}, {0, 0.5}},
      {l + "self_attn.k_proj.weight", {2, 2}, {0.5, 0, 0, 1}},
      {l + "self_attn.k_proj.bias", {2}, {0.25, 0}},
      {l + "self_attn.v_proj.weight", {2, 2}, {1, 1, 0, -1}},
      {l + "self_attn.v_proj.bias", {2}, {0, 0}},
      {l + "self_attn.o_proj.weight", {2, 2}, {1, 0, 0, 1}},
      {l + "self_attn.o_proj.bias", {2}, {0.125, 0}},
      {l + "mlp.gate_proj.weight", {1, 2}, {1, -1}},
      {l + "mlp.gate_proj.bias", {1}, {0}},
      {l + "mlp.up_proj.weight", {1, 2}, {0.5, 0.5}},
      {l + "mlp.up_proj.bias", {1}, {0.25}},
      {l + "mlp.down_proj.weight", {2, 1}, {1, 2}},
      {l + "mlp.down_proj.bias", {2}, {0, -0.5}},
      {l + "input_layernorm.weight", {2}, {1, 2}},
      {l + "post_attention_layernorm.weight", {2}, {1, 1}},
      {"model.norm.weight", {2}, {1, 0.5}},
      {"lm_head.weight", {3, 2}, {1, 0, 0, 1, 1, 1}}};
  TempDir dir;
  WriteHfFolder(dir.path(), config, state, Float32());
  const std::vector<double> logits = ReferenceLogits(dir.path(), {0, 1});

  const double eps = 1e-6;
  auto silu = [](double z) { return z / (1 + std::exp(-z)); };
  // The MLP block and the final norm + lm_head, for a residual (x0, x1):
  // post-attention norm (weights 1, 1), gate = m0 - m1, up = (m0 + m1)/2 +
  // 1/4, a = silu(gate) * up, down = (a, 2a - 1/2); final norm weights
  // (1, 1/2); lm_head rows (1,0), (0,1), (1,1).
  auto finish = [&](double x0, double x1) {
    const double r = 1 / std::sqrt((x0 * x0 + x1 * x1) / 2 + eps);
    const double m0 = x0 * r, m1 = x1 * r;
    const double a = silu(m0 - m1) * (0.5 * m0 + 0.5 * m1 + 0.25);
    const double y0 = x0 + a, y1 = x1 + 2 * a - 0.5;
    const double f = 1 / std::sqrt((y0 * y0 + y1 * y1) / 2 + eps);
    const double n0 = y0 * f, n1 = 0.5 * y1 * f;
    return std::vector<double>{n0, n1, n0 + n1};
  };

  // Position 0, token 0 = (1, 0): input norm (weights 1, 2) gives
  // h = (s0, 0), s0 = 1/sqrt(1/2 + eps). No rotation at position 0.
  const double s0 = 1 / std::sqrt(0.5 + eps);
  // k0 = (s0/2 + 1/4, 0), v0 = (s0, 0); position 0 attends to itself
  // alone, so its attention output is v0.
  const double k0[2] = {0.5 * s0 + 0.25, 0}, v0[2] = {s0, 0};
  const std::vector<double> row0 = finish(1 + v0[0] + 0.125, 0 + v0[1]);

  // Position 1, token 1 = (0.5, -1): h = (0.5 s1, -2 s1),
  // s1 = 1/sqrt(5/8 + eps); q and k turn by 1 radian.
  const double s1 = 1 / std::sqrt(0.625 + eps);
  const double c = std::cos(1.0), s = std::sin(1.0);
  const double q1[2] = {0.5 * s1, -2 * s1 + 0.5};
  const double k1[2] = {0.25 * s1 + 0.25, -2 * s1};
  const double v1[2] = {-1.5 * s1, 2 * s1};
  const double q1r[2] = {q1[0] * c - q1[1] * s, q1[1] * c + q1[0] * s};
  const double k1r[2] = {k1[0] * c - k1[1] * s, k1[1] * c + k1[0] * s};
  const double score0 = (q1r[0] * k0[0] + q1r[1] * k0[1]) / std::sqrt(2.0);
  const double score1 = (q1r[0] * k1r[0] + q1r[1] * k1r[1]) / std::sqrt(2.0);
  const double p0 = 1 / (1 + std::exp(score1 - score0)), p1 = 1 - p0;
  const double out0 = p0 * v0[0] + p1 * v1[0], out1 = p0 * v0[1] + p1 * v1[1];
  const std::vector<double> row1 = finish(0.5 + out0 + 0.125, -1 + out1);

  ASSERT_EQ(logits.size(), 6u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(logits[i], row0[i], 1e-13) << "position 0, logit " << i;
    EXPECT_NEAR(logits[3 + i], row1[i], 1e-13) << "position 1, logit " << i;
  }
  // The weights make both softmax weights matter.
  EXPECT_GT(p0, 0.05);
  EXPECT_GT(p1, 0.05);
}

// ---------------------------------------------------------------------------
// (b) The files: bytes, rounding, shards, round trips, bad inputs.

TEST(HfSafetensors, WriterMatchesAHandWrittenFileAndTheReaderDecodesIt) {
  // F32 before BF16 (wider dtype first), __metadata__ first, compact JSON:
  // 139 bytes padded with 5 spaces to 144 = 0x90.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}}     )";
  const std::string golden = std::string("\x90\0\0\0\0\0\0\0", 8) + header +
                             std::string("\0\0\x80\x3f", 4) +     // 1.0f
                             std::string("\x80\x3f\x40\xc0", 4);  // 1, -3
  std::vector<double> stored;
  const std::string bf16 = EncodeValues({1.0f, -3.0f}, "BF16", &stored);
  const std::string f32 = EncodeValues({1.0f}, "F32", &stored);
  EXPECT_EQ(
      SafetensorsFileBytes({{"b", "BF16", {2}, bf16}, {"a", "F32", {1}, f32}},
                           {{"format", "pt"}}),
      golden);

  TempDir dir;
  const std::string path = dir.Write("golden.safetensors", golden);
  const auto tensors = ReadSafetensors(path);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors.at("a").dtype, "F32");
  EXPECT_EQ(tensors.at("a").values, std::vector<double>{1.0});
  EXPECT_EQ(tensors.at("b").shape, std::vector<int64_t>{2});
  EXPECT_EQ(tensors.at("b").values, (std::vector<double>{1.0, -3.0}));
}

TEST(HfSafetensors, HalfPrecisionDecodesBitByBit) {
  EXPECT_EQ(DecodeFloat16(0x3C00), 1.0);
  EXPECT_EQ(DecodeFloat16(0xC000), -2.0);
  EXPECT_EQ(DecodeFloat16(0x7BFF), 65504.0);
  EXPECT_EQ(DecodeFloat16(0x0001), std::ldexp(1.0, -24));  // subnormal
  EXPECT_EQ(DecodeFloat16(0x0400), std::ldexp(1.0, -14));  // smallest normal
  EXPECT_EQ(DecodeFloat16(0x3555), 1365.0 / 4096.0);       // ~1/3
  EXPECT_TRUE(std::isinf(DecodeFloat16(0xFC00)) && DecodeFloat16(0xFC00) < 0);
  EXPECT_TRUE(std::isnan(DecodeFloat16(0x7E00)));
  EXPECT_EQ(DecodeBfloat16(0x3F80), 1.0);
  EXPECT_EQ(DecodeBfloat16(0xC040), -3.0);
  EXPECT_EQ(DecodeBfloat16(0x3EAB), 0.333984375);
}

TEST(HfSafetensors, Bfloat16RoundsToNearestEven) {
  const float one = 1.0f;
  // 1 + 2^-8 is halfway between 1 (fraction ...0, even) and 1 + 2^-7 (odd).
  EXPECT_EQ(Bfloat16Bits(one + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(Bfloat16Bits(one + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  // Just above a tie rounds up; just below, down.
  EXPECT_EQ(Bfloat16Bits(std::nextafter(one + std::ldexp(1.0f, -8), 2.0f)),
            0x3F81);
  EXPECT_EQ(Bfloat16Bits(std::nextafter(one + 3 * std::ldexp(1.0f, -8), 0.0f)),
            0x3F81);
  EXPECT_EQ(Bfloat16Bits(-one - std::ldexp(1.0f, -8)), 0xBF80);
  // The carry runs into the exponent: 2 - 2^-8 (a tie, odd below) gives 2.
  EXPECT_EQ(Bfloat16Bits(2.0f - std::ldexp(1.0f, -8)), 0x4000);
  // FLT_MAX rounds past the largest bfloat16 to infinity.
  EXPECT_EQ(Bfloat16Bits(std::numeric_limits<float>::max()), 0x7F80);
  // Subnormal tie: 2^-134 is halfway between 0 and 2^-133 (bits 0x0001).
  EXPECT_EQ(Bfloat16Bits(std::ldexp(1.0f, -134)), 0x0000);
  EXPECT_EQ(Bfloat16Bits(3 * std::ldexp(1.0f, -134)), 0x0002);
  EXPECT_EQ(Bfloat16Bits(std::nanf("")), 0x7FC0);
  EXPECT_EQ(RoundToBfloat16(one + 3 * std::ldexp(1.0f, -8)), 1.015625);
}

TEST(HfSafetensors, Float16RoundsToNearestEven) {
  const float one = 1.0f;
  EXPECT_EQ(Float16Bits(one + std::ldexp(1.0f, -11)), 0x3C00);      // tie, even
  EXPECT_EQ(Float16Bits(one + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, up
  EXPECT_EQ(Float16Bits(65504.0f), 0x7BFF);
  EXPECT_EQ(Float16Bits(65519.0f), 0x7BFF);
  EXPECT_EQ(Float16Bits(65520.0f), 0x7C00);  // the tie above 65504 overflows
  EXPECT_EQ(Float16Bits(-1e9f), 0xFC00);
  EXPECT_EQ(Float16Bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(Float16Bits(std::ldexp(1.0f, -25)), 0x0000);      // tie to 0
  EXPECT_EQ(Float16Bits(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie to 2
  EXPECT_EQ(Float16Bits(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(Float16Bits(-0.0f), 0x8000);
  EXPECT_EQ(Float16Bits(1.0f / 3.0f), 0x3555);
  // The bits and the arithmetic rounding agree through the decoder.
  for (const float x : {0.1f, -7.77f, 1e-6f, 3e-5f, 1234.5f, 60000.0f}) {
    EXPECT_EQ(DecodeFloat16(Float16Bits(x)), RoundToFloat16(x)) << x;
    EXPECT_EQ(DecodeBfloat16(Bfloat16Bits(x)), RoundToBfloat16(x)) << x;
  }
}

TEST(HfFolderWriter, ShardsAsHuggingFaceHubSplitsThem) {
  // float32 tensor bytes in state-dict order: embed 2048, q 256, k 128,
  // v 128, o 256, gate/up/down 256 each, three norms 32 each, lm_head 2048.
  // With at most 1000 bytes a shard: embed is too big and gets shard 1;
  // q, k, v, o fill 768 and gate would pass 1000, so they close shard 2;
  // gate ... model.norm fill 864 when lm_head, too big, gets shard 3 at
  // once; the last shard 4 holds gate ... model.norm.
  const json config = {
      {"model_type", "llama"},    {"hidden_size", 8},
      {"intermediate_size", 8},   {"num_hidden_layers", 1},
      {"num_attention_heads", 2}, {"num_key_value_heads", 1},
      {"vocab_size", 64},         {"tie_word_embeddings", false}};
  HfWriteOptions options = Float32();
  options.max_shard_bytes = 1000;
  TempDir dir;
  const HfFolder folder = WriteRandomHfFolder(dir.path(), config, options);
  const std::string f1 = "model-00001-of-00004.safetensors",
                    f2 = "model-00002-of-00004.safetensors",
                    f3 = "model-00003-of-00004.safetensors",
                    f4 = "model-00004-of-00004.safetensors";
  EXPECT_EQ(folder.files, (std::vector<std::string>{f1, f2, f3, f4}));
  const std::string l = "model.layers.0.";
  const std::map<std::string, std::string> expected = {
      {"model.embed_tokens.weight", f1},
      {l + "self_attn.q_proj.weight", f2},
      {l + "self_attn.k_proj.weight", f2},
      {l + "self_attn.v_proj.weight", f2},
      {l + "self_attn.o_proj.weight", f2},
      {"lm_head.weight", f3},
      {l + "mlp.gate_proj.weight", f4},
      {l + "mlp.up_proj.weight", f4},
      {l + "mlp.down_proj.weight", f4},
      {l + "input_layernorm.weight", f4},
      {l + "post_attention_layernorm.weight", f4},
      {"model.norm.weight", f4}};
  const json index =
      json::parse(ReadBytes(dir.Path("model.safetensors.index.json")));
  EXPECT_EQ(index["weight_map"], json(expected));
  EXPECT_EQ(index["metadata"]["total_size"], 5728);
  EXPECT_EQ(index["metadata"]["total_parameters"], 5728 / 4);
  // json.dumps(index, indent=2, sort_keys=True) + "\n"
  const std::string text = ReadBytes(dir.Path("model.safetensors.index.json"));
  EXPECT_EQ(text.substr(0, 17), "{\n  \"metadata\": {");
  EXPECT_EQ(text.back(), '\n');
  EXPECT_FALSE(std::filesystem::exists(dir.Path("model.safetensors")));

  // Every tensor reads back, through the index, exactly as written.
  const auto read = ReadHfWeights(dir.path());
  ASSERT_EQ(read.size(), folder.tensors.size());
  for (const auto& [name, tensor] : folder.tensors) {
    EXPECT_EQ(tensor.file, expected.at(name)) << name;
    EXPECT_EQ(read.at(name).shape, tensor.shape) << name;
    EXPECT_EQ(read.at(name).values, tensor.values) << name;
  }
  // Each shard's own header lists its tensors, widest dtype then by name.
  EXPECT_EQ(ReadSafetensors(dir.Path(f3)).size(), 1u);
  EXPECT_EQ(ReadSafetensors(dir.Path(f4)).size(), 6u);
}

TEST(HfFolderWriter, RoundTripsEveryDtypeAndArchitecture) {
  for (const std::string dtype : {"bfloat16", "float16", "float32"}) {
    for (const std::string type : {"llama", "mistral", "qwen2"}) {
      SCOPED_TRACE(dtype + " " + type);
      json config = SmallLlamaConfig();
      config.erase("architectures");
      config["model_type"] = type;
      config["attention_bias"] = true;
      config["tie_word_embeddings"] = type == "qwen2";
      HfWriteOptions options;
      options.dtype = dtype;
      options.max_shard_bytes = 3000;
      TempDir dir;
      const HfFolder folder = WriteRandomHfFolder(dir.path(), config, options);
      EXPECT_GT(folder.files.size(), 2u);
      const auto read = ReadHfWeights(dir.path());
      ASSERT_EQ(read.size(), folder.tensors.size());
      for (const auto& [name, tensor] : folder.tensors) {
        EXPECT_EQ(read.at(name).dtype, tensor.dtype) << name;
        EXPECT_EQ(read.at(name).values, tensor.values) << name;
      }
      // Biases as each model has them; lm_head only when untied.
      const std::string q_bias = "model.layers.0.self_attn.q_proj.bias";
      const std::string o_bias = "model.layers.0.self_attn.o_proj.bias";
      EXPECT_EQ(read.count(q_bias), type == "mistral" ? 0u : 1u);
      EXPECT_EQ(read.count(o_bias), type == "llama" ? 1u : 0u);
      EXPECT_EQ(read.count("lm_head.weight"), type == "qwen2" ? 0u : 1u);
      // The reference takes every folder.
      EXPECT_EQ(ReferenceLogits(dir.path(), {1, 2, 3}).size(), 3u * 32);
      const json written = json::parse(ReadBytes(dir.Path("config.json")));
      EXPECT_EQ(written["torch_dtype"], dtype);
    }
  }
}

TEST(HfFolderWriter, OneShardIsModelSafetensorsWithoutAnIndex) {
  TempDir dir;
  const HfFolder folder =
      WriteRandomHfFolder(dir.path(), SmallLlamaConfig(), HfWriteOptions{});
  EXPECT_EQ(folder.files, std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(
      std::filesystem::exists(dir.Path("model.safetensors.index.json")));
  // bf16 values really are rounded: none needs more than 8 significant bits.
  for (const double value :
       folder.tensors.at("model.embed_tokens.weight").values) {
    EXPECT_EQ(RoundToBfloat16(static_cast<float>(value)), value);
  }
}

TEST(HfFolderWriter, EachBadInputBreaksWhatItSays) {
  const json config = SmallLlamaConfig();
  const std::string q = "model.layers.1.self_attn.q_proj.weight";
  const std::vector<int> ids = {3, 1, 4, 1, 5};
  TempDir clean_dir;
  WriteRandomHfFolder(clean_dir.path(), config, HfWriteOptions{});
  const std::vector<double> clean = ReferenceLogits(clean_dir.path(), ids);
  auto write = [&](const HfBadInput& bad, uint64_t max_shard_bytes,
                   const TempDir& dir) {
    HfWriteOptions options;
    options.bad = bad;
    options.max_shard_bytes = max_shard_bytes;
    return WriteRandomHfFolder(dir.path(), config, options);
  };
  auto reference_fails = [&](const TempDir& dir, const std::string& part) {
    try {
      ReferenceLogits(dir.path(), ids);
      ADD_FAILURE() << "the reference took a folder broken by " << part;
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << error.what();
    }
  };
  {
    TempDir dir;
    HfBadInput bad;
    bad.drop_tensor = q;
    write(bad, 5'000'000, dir);
    EXPECT_EQ(ReadHfWeights(dir.path()).count(q), 0u);
    reference_fails(dir, "missing tensor " + q);
  }
  {
    // An extra tensor changes nothing else (the same seed draws the same
    // values), and HF ignores unexpected keys.
    TempDir dir;
    HfBadInput bad;
    bad.extra_tensor = "model.layers.0.self_attn.rotary_emb.inv_freq";
    write(bad, 5'000'000, dir);
    const auto read = ReadHfWeights(dir.path());
    EXPECT_EQ(read.at("model.layers.0.self_attn.rotary_emb.inv_freq").values,
              (std::vector<double>{0.5, -0.5}));
    EXPECT_EQ(ReferenceLogits(dir.path(), ids), clean);
  }
  {
    TempDir dir;
    HfBadInput bad;
    bad.misshape_tensor = q;
    write(bad, 5'000'000, dir);
    EXPECT_EQ(ReadHfWeights(dir.path()).at(q).shape,
              (std::vector<int64_t>{17, 16}));
    reference_fails(dir, q + " has the wrong shape");
  }
  for (const std::string dtype : {"F64", "I8"}) {
    // F64 holds the float32 values; I8 holds round(64 x).
    TempDir dir;
    HfBadInput bad;
    bad.retype_tensor = q;
    bad.retype_dtype = dtype;
    const HfFolder folder = write(bad, 5'000'000, dir);
    const auto read = ReadHfWeights(dir.path());
    EXPECT_EQ(read.at(q).dtype, dtype);
    EXPECT_EQ(read.at(q).values, folder.tensors.at(q).values);
    reference_fails(dir, q + " has dtype " + dtype);
  }
  {
    TempDir dir;
    HfBadInput bad;
    bad.truncate_bytes = 3;
    write(bad, 5'000'000, dir);
    reference_fails(dir, "outside the data");
  }
  {
    TempDir dir;
    HfBadInput bad;
    bad.index_names_missing_file = q;
    const HfFolder folder = write(bad, 3000, dir);
    ASSERT_TRUE(folder.sharded());
    reference_fails(dir, "cannot open");
  }
}

// ---------------------------------------------------------------------------
// (c) RoPE frequencies against the formulas
// (modeling_rope_utils.py, as the RoPE research note rope-scaling.md
// writes them out in its section 3), worked by hand.

// A Llama config with two heads of head_dim and the given rope_scaling.
json LlamaRopeConfig(int64_t head_dim, int64_t max_position_embeddings,
                     const json& rope_scaling) {
  return {{"model_type", "llama"},
          {"hidden_size", 2 * head_dim},
          {"num_attention_heads", 2},
          {"max_position_embeddings", max_position_embeddings},
          {"rope_scaling", rope_scaling}};
}

// head_dim 8: theta_i = 10000^(-i/4) = 1, 0.1, 0.01, 0.001.
json RopeConfig(const json& rope_scaling) {
  return LlamaRopeConfig(8, 16, rope_scaling);
}

TEST(HfReferenceRope, DefaultLinearAndDynamic) {
  const ReferenceRope plain = RopeOf(RopeConfig(nullptr), 4);
  ASSERT_EQ(plain.inv_freq.size(), 4u);
  EXPECT_EQ(plain.rotary_dim, 8);
  const double theta[4] = {1, 0.1, 0.01, 0.001};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(plain.inv_freq[i], theta[i], 1e-15);
  EXPECT_EQ(plain.attention_factor, 1.0);

  const ReferenceRope linear =
      RopeOf(RopeConfig({{"rope_type", "linear"}, {"factor", 4.0}}), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(linear.inv_freq[i], theta[i] / 4, 1e-15);
  }

  // Dynamic NTK, factor 2, max_position_embeddings 16: up to 16 positions
  // the base stays; at 32, base' = 10000 (2 * 32/16 - 1)^(8/6) =
  // 10000 * 3^(4/3), so theta'_i = theta_i * 3^(-i/3).
  const json dynamic = RopeConfig({{"type", "dynamic"}, {"factor", 2.0}});
  const ReferenceRope at16 = RopeOf(dynamic, 16);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(at16.inv_freq[i], theta[i], 1e-15);
  const ReferenceRope at32 = RopeOf(dynamic, 32);
  EXPECT_NEAR(at32.inv_freq[0], 1.0, 1e-15);
  EXPECT_NEAR(at32.inv_freq[1], 0.1 / std::cbrt(3.0), 1e-15);
  EXPECT_NEAR(at32.inv_freq[2], 0.01 / std::cbrt(9.0), 1e-16);
  // original_max_position_embeddings does not enter dynamic.
  const ReferenceRope ignored =
      RopeOf(RopeConfig({{"type", "dynamic"},
                         {"factor", 2.0},
                         {"original_max_position_embeddings", 4}}),
             16);
  EXPECT_EQ(ignored.inv_freq, at16.inv_freq);
}

// head_dim 64: r = 64, theta_i = 10000^(-i/32).
json YarnConfig(const json& rope_scaling) {
  return LlamaRopeConfig(64, 8192, rope_scaling);
}

TEST(HfReferenceRope, YarnRampAndAttentionFactor) {
  // original 2048, betas 32/1: corr(32) = 64 ln(2048 / 64 pi) / (2 ln 1e4)
  // = 8.064 -> floor 8; corr(1) = 20.105 -> ceil 21. Pairs <= 8 keep theta,
  // pairs >= 21 get theta / 4, pair 14 has ramp 6/13.
  const ReferenceRope yarn =
      RopeOf(YarnConfig({{"rope_type", "yarn"},
                         {"factor", 4.0},
                         {"original_max_position_embeddings", 2048}}),
             10);
  auto theta = [](int i) { return std::pow(10000.0, -i / 32.0); };
  ASSERT_EQ(yarn.inv_freq.size(), 32u);
  for (int i = 0; i <= 8; ++i) EXPECT_NEAR(yarn.inv_freq[i], theta(i), 1e-15);
  for (int i = 21; i < 32; ++i) {
    EXPECT_NEAR(yarn.inv_freq[i], theta(i) / 4, 1e-15);
  }
  const double ramp = 6.0 / 13.0;
  EXPECT_NEAR(yarn.inv_freq[14], theta(14) / 4 * ramp + theta(14) * (1 - ramp),
              1e-15);
  EXPECT_NEAR(yarn.attention_factor, 0.1 * std::log(4.0) + 1, 1e-15);

  // truncate false keeps the fractional bounds: for r 64, base 1.5e5,
  // original 4096, low = 8.0928, high = 17.398. Recover them from two
  // ramped pairs: ramp_i = (theta_i - inv_i) / (theta_i - theta_i / s).
  const ReferenceRope untruncated = RopeOf(
      [] {
        json c = YarnConfig({{"rope_type", "yarn"},
                             {"factor", 8.0},
                             {"original_max_position_embeddings", 4096},
                             {"truncate", false}});
        c["rope_theta"] = 150000.0;
        return c;
      }(),
      10);
  auto ramp_at = [&](int i) {
    const double t = std::pow(150000.0, -i / 32.0);
    return (t - untruncated.inv_freq[i]) / (t - t / 8);
  };
  const double slope = ramp_at(12) - ramp_at(11);  // 1 / (high - low)
  const double low = 11 - ramp_at(11) / slope;
  EXPECT_NEAR(low, 8.09278, 1e-4);
  EXPECT_NEAR(low + 1 / slope, 17.39802, 1e-4);

  // The upper bound is clamped to r - 1, not to the last pair r/2 - 1: for
  // r 8, base 100, original 2048, corr(32) = 2.016 -> 2 and corr(1) = 5.026
  // -> 6, so the last pair (3) is a quarter of the way up the ramp.
  const ReferenceRope small =
      RopeOf({{"model_type", "llama"},
              {"hidden_size", 16},
              {"num_attention_heads", 2},
              {"rope_theta", 100.0},
              {"rope_scaling",
               {{"rope_type", "yarn"},
                {"factor", 2.0},
                {"original_max_position_embeddings", 2048}}}},
             10);
  const double theta3 = std::pow(100.0, -6.0 / 8);
  EXPECT_NEAR(small.inv_freq[3], theta3 / 2 * 0.25 + theta3 * 0.75, 1e-15);

  // Attention factor: explicit wins; mscale with mscale_all_dim gives
  // g(s, mscale) / g(s, mscale_all_dim), g(s, m) = 0.1 m ln s + 1; a lone
  // mscale is ignored; factor null means max_pos / original (8192 / 2048).
  auto factor_of = [](const json& extra) {
    json rope = {{"rope_type", "yarn"},
                 {"factor", 40.0},
                 {"original_max_position_embeddings", 2048}};
    if (!extra.is_null()) rope.update(extra);  // {} is null, not an object
    return RopeOf(YarnConfig(rope), 10).attention_factor;
  };
  const double g40 = 0.1 * std::log(40.0) + 1;
  EXPECT_NEAR(factor_of({}), g40, 1e-15);
  EXPECT_EQ(factor_of({{"attention_factor", 0.75}}), 0.75);
  EXPECT_NEAR(factor_of({{"mscale", 1.0}, {"mscale_all_dim", 1.0}}), 1.0,
              1e-15);
  EXPECT_NEAR(factor_of({{"mscale", 0.707}, {"mscale_all_dim", 1.0}}),
              (0.1 * 0.707 * std::log(40.0) + 1) / g40, 1e-15);
  EXPECT_NEAR(factor_of({{"mscale", 0.707}}), g40, 1e-15);
  EXPECT_NEAR(factor_of({{"factor", nullptr}}), 0.1 * std::log(4.0) + 1, 1e-15);
}

TEST(HfReferenceRope, Llama3Bands) {
  // r = 128, base 5e5, factor 8, low/high freq factors 1/4, original 8192:
  // wavelengths 2 pi / theta_i below 2048 keep theta (pairs 0..28), above
  // 8192 get theta / 8 (pairs 35..63), between blend with
  // smooth = (8192 / wavelength - 1) / 3.
  const json config = {{"model_type", "llama"},
                       {"hidden_size", 4096},
                       {"num_attention_heads", 32},
                       {"max_position_embeddings", 131072},
                       {"rope_theta", 500000.0},
                       {"rope_scaling",
                        {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}}}};
  const ReferenceRope rope = RopeOf(config, 10);
  auto theta = [](int i) { return std::pow(500000.0, -i / 64.0); };
  ASSERT_EQ(rope.inv_freq.size(), 64u);
  for (int i = 0; i <= 28; ++i) EXPECT_EQ(rope.inv_freq[i], theta(i)) << i;
  for (int i = 35; i < 64; ++i) {
    EXPECT_NEAR(rope.inv_freq[i], theta(i) / 8, 1e-18) << i;
  }
  for (int i = 29; i <= 34; ++i) {
    const double smooth = (8192 * theta(i) / (2 * kReferencePi) - 1) / 3;
    EXPECT_GT(smooth, 0.0);
    EXPECT_LT(smooth, 1.0);
    EXPECT_NEAR(rope.inv_freq[i],
                (1 - smooth) * theta(i) / 8 + smooth * theta(i), 1e-15)
        << i;
  }
  EXPECT_EQ(rope.attention_factor, 1.0);
}

TEST(HfReferenceRope, LongropeSwitchesFactorsNotTheAttentionFactor) {
  // Phi-3-128k's shape: the original length at the top level, the factor
  // max_pos / original = 131072 / 4096 = 32, so
  // a = sqrt(1 + ln 32 / ln 4096) = 1.190238.
  const json config = {{"model_type", "llama"},
                       {"hidden_size", 16},
                       {"num_attention_heads", 2},
                       {"max_position_embeddings", 131072},
                       {"original_max_position_embeddings", 4096},
                       {"rope_scaling",
                        {{"type", "longrope"},
                         {"short_factor", {1.0, 1.5, 2.0, 2.5}},
                         {"long_factor", {2.0, 4.0, 8.0, 16.0}}}}};
  const ReferenceRope short_rope = RopeOf(config, 4096);
  const ReferenceRope long_rope = RopeOf(config, 4097);
  const double theta[4] = {1, 0.1, 0.01, 0.001};
  const double short_factor[4] = {1.0, 1.5, 2.0, 2.5};
  const double long_factor[4] = {2.0, 4.0, 8.0, 16.0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(short_rope.inv_freq[i], theta[i] / short_factor[i], 1e-16);
    EXPECT_NEAR(long_rope.inv_freq[i], theta[i] / long_factor[i], 1e-16);
  }
  EXPECT_NEAR(short_rope.attention_factor, 1.1902380714238083, 1e-15);
  EXPECT_EQ(long_rope.attention_factor, short_rope.attention_factor);
  // An explicit factor wins over the ratio (transformers 5.x).
  json explicit_factor = config;
  explicit_factor["rope_scaling"]["factor"] = 8.0;
  EXPECT_NEAR(RopeOf(explicit_factor, 10).attention_factor,
              std::sqrt(1 + std::log(8.0) / std::log(4096.0)), 1e-15);
}

TEST(HfReferenceRope, PartialRotaryAndProportional) {
  // partial_rotary_factor 0.5 of head_dim 8: r = 4, theta = 10000^(-2i/4).
  json partial = RopeConfig(nullptr);
  partial["partial_rotary_factor"] = 0.5;
  const ReferenceRope rope = RopeOf(partial, 4);
  EXPECT_EQ(rope.rotary_dim, 4);
  ASSERT_EQ(rope.inv_freq.size(), 2u);
  EXPECT_NEAR(rope.inv_freq[1], 0.01, 1e-16);
  // proportional: the whole head, 2 live pairs at 10000^(-2j/8), then zeros.
  json proportional =
      RopeConfig({{"rope_type", "proportional"}, {"factor", 2.0}});
  proportional["partial_rotary_factor"] = 0.5;
  const ReferenceRope gemma = RopeOf(proportional, 4);
  EXPECT_EQ(gemma.rotary_dim, 8);
  ASSERT_EQ(gemma.inv_freq.size(), 4u);
  EXPECT_EQ(gemma.inv_freq[0], 0.5);
  EXPECT_NEAR(gemma.inv_freq[1], 0.05, 1e-16);
  EXPECT_EQ(gemma.inv_freq[2], 0.0);
  EXPECT_EQ(gemma.inv_freq[3], 0.0);
}

TEST(HfReferenceConfig, RopeSpellingsHuggingFaceAccepts) {
  const json yarn = {{"factor", 4.0},
                     {"original_max_position_embeddings", 2048}};
  json with_rope_type = yarn, with_type = yarn;
  with_rope_type["rope_type"] = "yarn";
  with_type["type"] = "yarn";
  const ReferenceRope a = RopeOf(YarnConfig(with_rope_type), 10);
  EXPECT_EQ(RopeOf(YarnConfig(with_type), 10).inv_freq, a.inv_freq);

  // transformers 5.x writes rope_parameters, rope_theta inside.
  json v5 = YarnConfig(nullptr);
  v5.erase("rope_scaling");
  v5["rope_parameters"] = with_rope_type;
  v5["rope_parameters"]["rope_theta"] = 10000.0;
  EXPECT_EQ(RopeOf(v5, 10).inv_freq, a.inv_freq);
  // The dict's rope_theta wins over a top-level one.
  v5["rope_theta"] = 123.0;
  EXPECT_EQ(RopeOf(v5, 10).inv_freq, a.inv_freq);
  // A top-level original_max_position_embeddings wins over the dict's; with
  // neither, max_position_embeddings (8192) stands in.
  json top = YarnConfig(with_rope_type);
  top["rope_scaling"]["original_max_position_embeddings"] = 1024;
  top["original_max_position_embeddings"] = 2048;
  EXPECT_EQ(RopeOf(top, 10).inv_freq, a.inv_freq);
  json none = YarnConfig({{"rope_type", "yarn"}, {"factor", 4.0}});
  EXPECT_EQ(ParseReferenceConfig(none)
                .rope_parameters["original_max_position_embeddings"],
            8192);
  EXPECT_NE(RopeOf(none, 10).inv_freq, a.inv_freq);

  auto refused = [](const json& rope_scaling) {
    EXPECT_THROW(RopeOf(YarnConfig(rope_scaling), 10), std::runtime_error)
        << rope_scaling.dump();
  };
  refused({{"type", "linear"}, {"rope_type", "yarn"}, {"factor", 2.0}});
  refused({{"type", "su"},
           {"short_factor", json::array()},
           {"long_factor", json::array()}});
  refused({{"rope_type", "ntk"}, {"factor", 2.0}});
  refused({{"rope_type", "linear"}});  // factor required
}

TEST(HfReferenceConfig, ClassDefaultsForAbsentKeys) {
  // 64 heads of 16: the kv defaults below (64, 8, 32) all divide it.
  const json base = {{"hidden_size", 1024}, {"num_attention_heads", 64}};
  auto parse = [&](const std::string& type, const json& extra) {
    json config = base;
    config["model_type"] = type;
    if (!extra.is_null()) config.update(extra);  // {} is null
    return ParseReferenceConfig(config);
  };
  EXPECT_EQ(parse("llama", {}).num_key_value_heads, 64);
  EXPECT_EQ(parse("mistral", {}).num_key_value_heads, 8);
  EXPECT_EQ(parse("qwen2", {}).num_key_value_heads, 32);
  EXPECT_EQ(
      parse("mistral", {{"num_key_value_heads", nullptr}}).num_key_value_heads,
      64);
  EXPECT_EQ(parse("llama", {}).head_dim, 16);
  EXPECT_EQ(parse("llama", {{"head_dim", 8}}).head_dim, 8);
  EXPECT_EQ(parse("llama", {}).rms_norm_eps, 1e-6);
  EXPECT_EQ(parse("mistral", {}).max_position_embeddings, 131072);
  // Mistral's window: 4096 when absent, none when null.
  EXPECT_EQ(parse("mistral", {}).sliding_window[0], 4096);
  EXPECT_EQ(parse("mistral", {{"sliding_window", nullptr}}).sliding_window[0],
            0);
  // Qwen2's: only with use_sliding_window, from max_window_layers on.
  const json qwen_window = {{"num_hidden_layers", 3},
                            {"sliding_window", 5},
                            {"max_window_layers", 1}};
  EXPECT_EQ(parse("qwen2", qwen_window).sliding_window,
            (std::vector<int64_t>{0, 0, 0}));
  json used = qwen_window;
  used["use_sliding_window"] = true;
  EXPECT_EQ(parse("qwen2", used).sliding_window,
            (std::vector<int64_t>{0, 5, 5}));
  EXPECT_TRUE(parse("qwen2", {}).qkv_bias);
  EXPECT_FALSE(parse("qwen2", {}).o_bias);
  EXPECT_FALSE(parse("mistral", {{"attention_bias", true}}).qkv_bias);
  EXPECT_EQ(parse("llama", {{"hidden_act", "swish"}}).model_type, "llama");
  EXPECT_THROW(parse("llama", {{"hidden_act", "gelu"}}), std::runtime_error);
  EXPECT_THROW(parse("gpt2", {}), std::runtime_error);
  EXPECT_THROW(parse("llama", {{"architectures", {"MistralForCausalLM"}}}),
               std::runtime_error);
  json by_architecture = base;
  by_architecture["architectures"] = {"Qwen2ForCausalLM"};
  EXPECT_EQ(ParseReferenceConfig(by_architecture).model_type, "qwen2");
}

// ---------------------------------------------------------------------------
// (d) Invariants a wrong reference would break, (e) causality.

TEST(HfReference, RandomWeightsGiveLogitsThatDependOnTheContext) {
  TempDir dir;
  WriteRandomHfFolder(dir.path(), SmallLlamaConfig(), HfWriteOptions{});
  const ReferenceModel model = LoadReferenceModel(dir.path());
  const std::vector<double> a = ReferenceLogits(model, {5, 6, 7, 8});
  const std::vector<double> b = ReferenceLogits(model, {9, 6, 7, 8});
  double sum = 0, sum_squares = 0;
  for (const double v : a) sum += v, sum_squares += v * v;
  const double mean = sum / a.size();
  EXPECT_GT(std::sqrt(sum_squares / a.size() - mean * mean), 0.2);
  // Changing the first token moves the last position's logits.
  EXPECT_GT(MaxAbsDifference(Rows(a, 32, 3, 4), Rows(b, 32, 3, 4)), 1e-2);
}

TEST(HfReference, LogitsAtAPositionIgnoreLaterTokens) {
  TempDir dir;
  WriteRandomHfFolder(dir.path(), SmallLlamaConfig(), HfWriteOptions{});
  const ReferenceModel model = LoadReferenceModel(dir.path());
  const std::vector<double> a = ReferenceLogits(model, {1, 2, 3, 4, 5, 6});
  const std::vector<double> b = ReferenceLogits(model, {1, 2, 3, 9, 8, 7});
  EXPECT_EQ(Rows(a, 32, 0, 3), Rows(b, 32, 0, 3));
  EXPECT_GT(MaxAbsDifference(Rows(a, 32, 3, 4), Rows(b, 32, 3, 4)), 1e-3);
  // A shorter input gives the same rows.
  EXPECT_EQ(ReferenceLogits(model, {1, 2, 3}), Rows(a, 32, 0, 3));
}

TEST(HfReference, StaticRopeDependsOnlyOnRelativePositions) {
  // q_m . k_n depends on m - n only, so starting at position 7 changes
  // nothing, for the static types; dynamic NTK changes its base once
  // first_position + T passes max_position_embeddings (64).
  const std::vector<int> ids = {4, 8, 15, 16, 23, 10};
  auto starting_at = [](int64_t position) {
    ReferenceOptions options;
    options.first_position = position;
    return options;
  };
  for (const json& rope :
       {json(nullptr), json({{"type", "linear"}, {"factor", 3.0}}),
        json({{"rope_type", "yarn"},
              {"factor", 4.0},
              {"original_max_position_embeddings", 16}})}) {
    SCOPED_TRACE(rope.dump());
    json config = SmallLlamaConfig();
    config["rope_scaling"] = rope;
    TempDir dir;
    WriteRandomHfFolder(dir.path(), config, HfWriteOptions{});
    const ReferenceModel model = LoadReferenceModel(dir.path());
    EXPECT_LT(MaxAbsDifference(ReferenceLogits(model, ids),
                               ReferenceLogits(model, ids, starting_at(7))),
              1e-12);
  }
  json config = SmallLlamaConfig();
  config["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}};
  TempDir dir;
  WriteRandomHfFolder(dir.path(), config, HfWriteOptions{});
  const ReferenceModel model = LoadReferenceModel(dir.path());
  const std::vector<double> at0 = ReferenceLogits(model, ids);
  EXPECT_LT(MaxAbsDifference(at0, ReferenceLogits(model, ids, starting_at(58))),
            1e-12);  // seq_len 64: still the base
  EXPECT_GT(MaxAbsDifference(at0, ReferenceLogits(model, ids, starting_at(70))),
            1e-6);  // seq_len 76: a larger base
}

TEST(HfReference, AttentionFactorScalesScoresByItsSquare) {
  // yarn with factor 1 keeps theta and applies attention_factor a to cos
  // and sin, so q.k grows by a^2 = 2: the same as default RoPE with q_proj
  // (and its bias) doubled.
  json config = SmallLlamaConfig();
  config["attention_bias"] = true;
  TempDir dir;
  const HfFolder plain = WriteRandomHfFolder(dir.path(), config, Float32());
  std::vector<HfStateTensor> doubled = StateDictOf(plain, config);
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* part : {".weight", ".bias"}) {
      HfStateTensor& q = Find(doubled, "model.layers." + std::to_string(layer) +
                                           ".self_attn.q_proj" + part);
      for (float& value : q.values) value *= 2;
    }
  }
  TempDir doubled_dir;
  WriteHfFolder(doubled_dir.path(), config, doubled, Float32());
  json scaled = config;
  scaled["rope_scaling"] = {{"rope_type", "yarn"},
                            {"factor", 1.0},
                            {"attention_factor", std::sqrt(2.0)}};
  TempDir scaled_dir;
  WriteHfFolder(scaled_dir.path(), scaled, StateDictOf(plain, config),
                Float32());
  const std::vector<int> ids = {1, 5, 9, 13, 17};
  const std::vector<double> expected = ReferenceLogits(doubled_dir.path(), ids);
  EXPECT_LT(MaxAbsDifference(ReferenceLogits(scaled_dir.path(), ids), expected),
            1e-12);
  EXPECT_GT(MaxAbsDifference(ReferenceLogits(dir.path(), ids), expected), 1e-4);
}

TEST(HfReference, QueryHeadReadsKvHeadQueryHeadOverGroup) {
  // 4 query heads on 2 kv heads: heads 0, 1 read kv head 0 and heads 2, 3
  // kv head 1 (repeat_kv). The same model with 4 kv heads whose rows copy
  // kv head h / 2 gives the same logits; copying kv head h % 2 does not.
  const json config = SmallLlamaConfig();
  TempDir dir;
  const HfFolder gqa = WriteRandomHfFolder(dir.path(), config, Float32());
  json mha_config = config;
  mha_config["num_key_value_heads"] = 4;
  auto expanded = [&](bool divide) {
    std::vector<HfStateTensor> state = StateDictOf(gqa, config);
    for (HfStateTensor& tensor : state) {
      if (tensor.name.find("k_proj") == std::string::npos &&
          tensor.name.find("v_proj") == std::string::npos) {
        continue;
      }
      const int64_t head_values = 4 * 16;  // head_dim rows of hidden inputs
      std::vector<float> values;
      for (int head = 0; head < 4; ++head) {
        const int source = divide ? head / 2 : head % 2;
        values.insert(values.end(),
                      tensor.values.begin() + source * head_values,
                      tensor.values.begin() + (source + 1) * head_values);
      }
      tensor.shape[0] = 16;
      tensor.values = values;
    }
    return state;
  };
  const std::vector<int> ids = {2, 7, 1, 8, 2, 8};
  const std::vector<double> expected = ReferenceLogits(dir.path(), ids);
  TempDir divided, modulo;
  WriteHfFolder(divided.path(), mha_config, expanded(true), Float32());
  WriteHfFolder(modulo.path(), mha_config, expanded(false), Float32());
  EXPECT_LT(MaxAbsDifference(ReferenceLogits(divided.path(), ids), expected),
            1e-12);
  EXPECT_GT(MaxAbsDifference(ReferenceLogits(modulo.path(), ids), expected),
            1e-4);
}

TEST(HfReference, TiedEmbeddingsServeAsTheHead) {
  json tied = SmallLlamaConfig();
  tied["tie_word_embeddings"] = true;
  TempDir tied_dir;
  const HfFolder folder = WriteRandomHfFolder(tied_dir.path(), tied, Float32());
  EXPECT_EQ(folder.tensors.count("lm_head.weight"), 0u);
  const json untied = SmallLlamaConfig();
  std::vector<HfStateTensor> state = StateDictOf(folder, tied);
  HfStateTensor head = Find(state, "model.embed_tokens.weight");
  head.name = "lm_head.weight";
  state.push_back(head);
  TempDir untied_dir;
  WriteHfFolder(untied_dir.path(), untied, state, Float32());
  const std::vector<int> ids = {0, 31, 16};
  EXPECT_EQ(ReferenceLogits(tied_dir.path(), ids),
            ReferenceLogits(untied_dir.path(), ids));
}

TEST(HfReference, MistralSlidingWindowHidesKeysAtWindowDistance) {
  // One layer, so a position's logits depend on exactly the tokens its
  // attention sees: with window W, position t sees t - W + 1 .. t.
  json config = SmallLlamaConfig();
  config["model_type"] = "mistral";
  config["architectures"] = {"MistralForCausalLM"};
  config["num_hidden_layers"] = 1;
  const std::vector<int> a = {1, 2, 3, 4, 5}, b = {9, 2, 3, 4, 5};
  auto logits = [&](const json& window, const std::vector<int>& ids) {
    json c = config;
    c["sliding_window"] = window;
    TempDir dir;
    WriteRandomHfFolder(dir.path(), c, HfWriteOptions{});
    return ReferenceLogits(dir.path(), ids);
  };
  // Token 0 changed: with W = 2, position 1 (distance 1) still sees it,
  // position 2 (distance 2) does not.
  EXPECT_GT(MaxAbsDifference(Rows(logits(2, a), 32, 1, 2),
                             Rows(logits(2, b), 32, 1, 2)),
            1e-4);
  EXPECT_EQ(Rows(logits(2, a), 32, 2, 5), Rows(logits(2, b), 32, 2, 5));
  // A window of at least T is no window; null is none.
  EXPECT_EQ(logits(5, a), logits(nullptr, a));
  EXPECT_NE(logits(4, a), logits(nullptr, a));
}

TEST(HfReference, RejectsWhatHuggingFaceCannotRun) {
  json config = SmallLlamaConfig();
  TempDir dir;
  WriteRandomHfFolder(dir.path(), config, HfWriteOptions{});
  EXPECT_THROW(ReferenceLogits(dir.path(), {32}), std::runtime_error);
  config["hidden_act"] = "gelu";
  TempDir gelu;
  WriteRandomHfFolder(gelu.path(), config, HfWriteOptions{});
  EXPECT_THROW(ReferenceLogits(gelu.path(), {1}), std::runtime_error);
}

}  // namespace
}  // namespace rotor::test::hf
