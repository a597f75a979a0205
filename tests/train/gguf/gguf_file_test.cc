// GgufWriter and the tensor encodings, read back by a small GGUF reader
// written here from ggml's docs/gguf.md (not from the writer), and the
// encodings checked against their definitions: F16 and BF16 decode to the
// nearest representable value, Q8_0 blocks hold d = max|x| / 127 as a half
// and q = round(x / d).
#include "train/gguf/gguf_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernels/convert.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/gguf/gguf_tensors.h"
#include "train/io/atomic_file.h"

namespace rotor::train {
namespace {

using test::TempDir;

// docs/gguf.md, read sequentially.
class Reader {
 public:
  explicit Reader(std::string bytes) : bytes_(std::move(bytes)) {}
  template <typename T>
  T Get() {
    EXPECT_LE(at_ + sizeof(T), bytes_.size());
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string String() {
    const uint64_t n = Get<uint64_t>();
    std::string text = bytes_.substr(at_, n);
    at_ += n;
    return text;
  }
  size_t at() const { return at_; }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  size_t at_ = 0;
};

struct ReadTensor {
  std::vector<uint64_t> ne;
  uint32_t type = 0;
  uint64_t offset = 0;
};

struct ReadFile_ {
  uint32_t version = 0;
  std::map<std::string, std::string> values;  // scalars printed as text
  std::map<std::string, std::vector<std::string>> arrays;
  std::map<std::string, ReadTensor> tensors;
  size_t data_start = 0;
};

std::string ScalarText(Reader& r, uint32_t type) {
  switch (type) {
    case 4:
      return std::to_string(r.Get<uint32_t>());
    case 5:
      return std::to_string(r.Get<int32_t>());
    case 6:
      return std::to_string(r.Get<float>());
    case 7:
      return r.Get<uint8_t>() ? "true" : "false";
    case 8:
      return r.String();
    default:
      ADD_FAILURE() << "unexpected type " << type;
      return "";
  }
}

ReadFile_ Parse(const std::string& bytes) {
  Reader r(bytes);
  ReadFile_ file;
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  r.Get<uint32_t>();
  file.version = r.Get<uint32_t>();
  const uint64_t tensors = r.Get<uint64_t>();
  const uint64_t kvs = r.Get<uint64_t>();
  for (uint64_t i = 0; i < kvs; ++i) {
    const std::string key = r.String();
    const uint32_t type = r.Get<uint32_t>();
    if (type == 9) {
      const uint32_t element = r.Get<uint32_t>();
      const uint64_t n = r.Get<uint64_t>();
      std::vector<std::string>& values = file.arrays[key];
      for (uint64_t j = 0; j < n; ++j) values.push_back(ScalarText(r, element));
    } else {
      file.values[key] = ScalarText(r, type);
    }
  }
  for (uint64_t i = 0; i < tensors; ++i) {
    const std::string name = r.String();
    ReadTensor& tensor = file.tensors[name];
    const uint32_t dims = r.Get<uint32_t>();
    for (uint32_t d = 0; d < dims; ++d) tensor.ne.push_back(r.Get<uint64_t>());
    tensor.type = r.Get<uint32_t>();
    tensor.offset = r.Get<uint64_t>();
  }
  file.data_start = (r.at() + 31) / 32 * 32;
  return file;
}

TEST(GgufWriter, WritesTheSpecsHeaderKeysAndAlignedTensors) {
  TempDir dir;
  GgufWriter writer;
  writer.AddString("general.architecture", "llama");
  writer.AddUint32("llama.block_count", 7);
  writer.AddInt32("some.int", -3);
  writer.AddFloat32("llama.rope.freq_base", 500000.0f);
  writer.AddBool("tokenizer.ggml.add_bos_token", true);
  writer.AddStringArray("tokenizer.ggml.tokens", {"a", "", "\xC4\xA0x"});
  writer.AddInt32Array("tokenizer.ggml.token_type", {1, 3});
  writer.AddFloat32Array("tokenizer.ggml.scores", {-1.5f});
  const std::vector<float> three = {1.0f, 2.0f, 3.0f};  // 12 bytes: padded
  const std::vector<float> six = {1, 2, 3, 4, 5, 6};
  writer.AddTensor("a.weight", {3}, GgmlType::kF32,
                   EncodeGgmlTensor(three.data(), 3, 3, GgmlType::kF32, "a"));
  writer.AddTensor("b.weight", {3, 2}, GgmlType::kF32,
                   EncodeGgmlTensor(six.data(), 6, 3, GgmlType::kF32, "b"));
  const std::string path = dir.Path("x.gguf");
  writer.Write(path);
  const std::string bytes = ReadFile(path);
  const ReadFile_ file = Parse(bytes);
  EXPECT_EQ(file.version, 3u);
  EXPECT_EQ(file.values.at("general.architecture"), "llama");
  EXPECT_EQ(file.values.at("llama.block_count"), "7");
  EXPECT_EQ(file.values.at("some.int"), "-3");
  EXPECT_EQ(file.values.at("llama.rope.freq_base"), "500000.000000");
  EXPECT_EQ(file.values.at("tokenizer.ggml.add_bos_token"), "true");
  EXPECT_EQ(file.arrays.at("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"a", "", "\xC4\xA0x"}));
  EXPECT_EQ(file.arrays.at("tokenizer.ggml.token_type"),
            (std::vector<std::string>{"1", "3"}));
  EXPECT_EQ(file.arrays.at("tokenizer.ggml.scores").size(), 1u);
  // Offsets are multiples of 32 from the aligned start of the data.
  const ReadTensor& a = file.tensors.at("a.weight");
  const ReadTensor& b = file.tensors.at("b.weight");
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 32u);
  EXPECT_EQ(b.ne, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(file.data_start % 32, 0u);
  EXPECT_EQ(bytes.size(), file.data_start + 32 + 32);  // each padded to 32
  float back[6];
  std::memcpy(back, bytes.data() + file.data_start + b.offset, sizeof(back));
  EXPECT_EQ(std::vector<float>(back, back + 6), six);
  // The padding between the header and the data is zeros.
  for (size_t i = Reader(bytes).at(); i < file.data_start; ++i) {
    if (i > file.data_start - 8) EXPECT_EQ(bytes[i], '\0');
  }
}

TEST(GgufWriter, RefusesARepeatedKeyOrTensorAndWritesNothing) {
  GgufWriter writer;
  writer.AddUint32("llama.block_count", 1);
  EXPECT_THROW(writer.AddUint32("llama.block_count", 2), Error);
  writer.AddTensor("t", {1}, GgmlType::kF32, std::string(4, '\0'));
  EXPECT_THROW(writer.AddTensor("t", {1}, GgmlType::kF32, ""), Error);
}

TEST(GgufTensors, HalfIsTheNearestHalfTiesToEven) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-26.0f, 17.0f);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = unit(rng) * std::exp2(exponent(rng));
    const uint16_t h = FloatToHalfBits(x);
    float back;
    kernels::F16ToF32(&h, &back, 1);
    if (std::isinf(back)) {  // past halfway to 2^16, IEEE rounds to inf
      ASSERT_GE(std::fabs(x), 65520.0f) << x;
      continue;
    }
    // No half lies closer to x than the one chosen (its two neighbours).
    for (int step : {-1, 1}) {
      const uint16_t other = static_cast<uint16_t>(h + step);
      if ((other & 0x7c00) == 0x7c00) continue;   // inf/NaN
      if (((other ^ h) & 0x8000) != 0) continue;  // crossed the sign
      float neighbour;
      kernels::F16ToF32(&other, &neighbour, 1);
      ASSERT_LE(std::fabs(back - x), std::fabs(neighbour - x))
          << x << " -> " << back << " but " << neighbour << " is closer";
    }
  }
  // Ties go to the even mantissa; overflow is inf; NaN stays NaN.
  EXPECT_EQ(FloatToHalfBits(1.0f + std::exp2(-11.0f)), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::exp2(-11.0f)), 0x3c02);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(-std::exp2(-25.0f)), 0x8000);  // tie to even 0
  EXPECT_EQ(FloatToHalfBits(std::exp2(-24.0f)), 0x0001);
  EXPECT_EQ(FloatToHalfBits(NAN) & 0x7c00, 0x7c00);
  EXPECT_NE(FloatToHalfBits(NAN) & 0x03ff, 0);
}

TEST(GgufTensors, Q8_0BlocksAreScaleAndRoundedQuotients) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> x(64);
  for (float& v : x) v = normal(rng);
  x[40] = -1.0f;                             // the second block's max |x|
  for (int i = 0; i < 32; ++i) x[i] = 0.0f;  // a zero block: d = 0, q = 0
  const std::string bytes =
      EncodeGgmlTensor(x.data(), x.size(), 64, GgmlType::kQ8_0, "t");
  ASSERT_EQ(bytes.size(), 2u * 34u);
  for (int block = 0; block < 2; ++block) {
    const char* b = bytes.data() + block * 34;
    uint16_t d_bits;
    std::memcpy(&d_bits, b, 2);
    float d;
    kernels::F16ToF32(&d_bits, &d, 1);
    if (block == 0) EXPECT_EQ(d, 0.0f);
    if (block == 1) EXPECT_NEAR(d, 1.0f / 127.0f, 1e-5);
    for (int i = 0; i < 32; ++i) {
      const int q = static_cast<int8_t>(b[2 + i]);
      const float value = x[block * 32 + i];
      // q is x / d rounded (with the unrounded d of the definition).
      const float exact = block == 0 ? 0.0f : value / (1.0f / 127.0f);
      EXPECT_LE(std::fabs(q - exact), 0.5f + 1e-3f) << block << " " << i;
      EXPECT_LE(std::abs(q), 127);
    }
  }
  EXPECT_THROW(EncodeGgmlTensor(x.data(), 48, 48, GgmlType::kQ8_0, "odd rows"),
               Error);
}

// Blocks so small that max|x| / 127 is 0 as a half (below 2^-25): the
// stored scale is 0, so the quants are 0 too (what the block decodes to).
// Computing them as x / d would divide by a float subnormal, where 1 / d
// overflows to inf and inf or NaN is cast to int8 (undefined behaviour),
// or give quants up to 127 that the stored scale of 0 contradicts.
TEST(GgufTensors, Q8_0BlocksTooSmallForAHalfScaleAreZero) {
  std::vector<float> x(96);
  for (int i = 0; i < 32; ++i) x[i] = (i % 2 ? 1e-38f : -1e-40f);
  for (int i = 32; i < 64; ++i) x[i] = (i % 3 ? 1e-36f : 0.0f);
  for (int i = 64; i < 96; ++i) x[i] = i % 2 ? 1e-40f : -1e-38f;
  x[70] = 0.0f;
  const std::string bytes =
      EncodeGgmlTensor(x.data(), x.size(), 96, GgmlType::kQ8_0, "t");
  ASSERT_EQ(bytes.size(), 3u * 34u);
  for (int block = 0; block < 3; ++block) {
    const char* b = bytes.data() + block * 34;
    uint16_t d_bits;
    std::memcpy(&d_bits, b, 2);
    float d;
    kernels::F16ToF32(&d_bits, &d, 1);
    EXPECT_EQ(d, 0.0f) << block;
    for (int i = 0; i < 32; ++i) {
      const int q = static_cast<int8_t>(b[2 + i]);
      EXPECT_EQ(q, 0) << block << " " << i;
      EXPECT_EQ(d * static_cast<float>(q), 0.0f) << block << " " << i;
    }
  }
}

TEST(GgufTensors, Bf16IsTheTopHalfRounded) {
  const float x = 1.0f + std::exp2(-8.0f) + std::exp2(-12.0f);  // rounds up
  const std::string bytes = EncodeGgmlTensor(&x, 1, 1, GgmlType::kBF16, "t");
  uint16_t bits;
  std::memcpy(&bits, bytes.data(), 2);
  EXPECT_EQ(bits, 0x3f81);
}

// Nothing non-finite reaches the file: a finite weight the type would
// round to inf (f16 past 65504, a q8_0 block whose scale max|x| / 127 is
// past f16's range, bf16 past 3.3895e38) is refused naming the tensor, its
// largest magnitude and the types that hold it; a NaN or inf weight is
// refused in every type (q8_0 used to write a NaN as 0 through an
// undefined cast, and a block with an inf as NaN).
TEST(GgufTensors, RefusesValuesTheTypeWouldNotWriteAsFiniteNumbers) {
  std::vector<float> x(32, 0.5f);
  auto encode = [&](GgmlType type) {
    return EncodeGgmlTensor(x.data(), x.size(), 32, type,
                            "blk.0.ffn_up.weight");
  };
  x[5] = 65519.0f;  // rounds to f16's largest, 65504
  EXPECT_EQ(encode(GgmlType::kF16).size(), 64u);
  x[5] = -65520.0f;  // rounds to -inf
  ROTOR_EXPECT_ERROR(encode(GgmlType::kF16), "tensor blk.0.ffn_up.weight",
                     "magnitude 65520", "more than f16",
                     "--dtype q8_0, bf16 or f32");
  x[5] = 8.3e6f;  // scale 65354
  EXPECT_EQ(encode(GgmlType::kQ8_0).size(), 34u);
  x[5] = 8.4e6f;  // scale 66142: inf as f16, and the whole block NaN
  ROTOR_EXPECT_ERROR(encode(GgmlType::kQ8_0), "blk.0.ffn_up.weight",
                     "magnitude 8.4e+06", "more than q8_0", "127 x 65504",
                     "--dtype bf16 or f32");
  EXPECT_EQ(encode(GgmlType::kBF16).size(), 64u);
  x[5] = 3.4e38f;
  ROTOR_EXPECT_ERROR(encode(GgmlType::kBF16), "magnitude 3.4e+38",
                     "more than bf16", "--dtype f32");
  EXPECT_EQ(encode(GgmlType::kF32).size(), 128u);
  for (const float bad : {NAN, INFINITY, -INFINITY}) {
    x[5] = bad;
    for (GgmlType type :
         {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
      ROTOR_EXPECT_ERROR(encode(type), "tensor blk.0.ffn_up.weight",
                         "at index 5", "finite weights only");
    }
  }
}

TEST(GgufTensors, Float32KeysRefuseWhatFloat32CannotHold) {
  EXPECT_EQ(ToFloat32(1e4, "llama.rope.freq_base"), 1e4f);
  EXPECT_EQ(ToFloat32(-std::numeric_limits<float>::max(), "k"),
            -std::numeric_limits<float>::max());
  ROTOR_EXPECT_ERROR(ToFloat32(1e300, "llama.rope.freq_base (rope_theta)"),
                     "llama.rope.freq_base (rope_theta) 1e+300",
                     "largest value is 3.40282e+38");
  ROTOR_EXPECT_ERROR(ToFloat32(NAN, "k"), "k nan", "not a finite float32");
}

}  // namespace
}  // namespace rotor::train
