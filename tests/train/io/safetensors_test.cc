// safetensors: a byte-exact golden file written by hand from the format
// spec, round trips, and every kind of malformed file rejected with the file
// and tensor named.
#include "train/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/convert_scalar.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"

namespace rotor::train {
namespace {

// 8-byte little-endian length, then the header, then the data.
std::string MakeFile(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
  return bytes + header + data;
}

TEST(Safetensors, WriterMatchesAHandWrittenGoldenFile) {
  test::TempDir dir;
  const float b[2] = {1.0f, -2.0f};
  const int64_t a = 7;
  WriteSafetensors(dir.Path("g.safetensors"),
                   {{"b", SafetensorsDtype::kF32, {2}, b},
                    {"a", SafetensorsDtype::kI64, {}, &a}},
                   {{"step", "3"}});
  // I64 before F32 (larger elements first), "format": "pt" added, metadata
  // keys sorted, compact JSON, 149 bytes padded with 3 spaces to 152 = 0x98.
  const std::string header =
      R"({"__metadata__":{"format":"pt","step":"3"},)"
      R"("a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}   )";
  const std::string golden =
      std::string("\x98\0\0\0\0\0\0\0", 8) + header +
      std::string("\x07\0\0\0\0\0\0\0", 8) +     // int64 7
      std::string("\0\0\x80\x3f\0\0\0\xc0", 8);  // 1.0f, -2.0f
  EXPECT_EQ(ReadFile(dir.Path("g.safetensors")), golden);

  const SafetensorsFile file = SafetensorsFile::Parse(golden, "golden");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.metadata().at("step"), "3");
  ASSERT_EQ(file.tensors().size(), 2u);
  const SafetensorsFile::TensorInfo* info = file.Find("a");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, SafetensorsDtype::kI64);
  EXPECT_TRUE(info->shape.empty());
  int64_t a_read = 0;
  std::memcpy(&a_read, file.Data(*info), 8);
  EXPECT_EQ(a_read, 7);
  const std::vector<int64_t> shape = {2};
  EXPECT_EQ(file.ReadF32("b", &shape), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(file.Data(*file.Find("b"))) % 4, 0u);
}

TEST(Safetensors, RoundTripsManyTensorsAndAllDtypes) {
  test::TempDir dir;
  std::vector<float> w(3 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i);
  const int32_t i32[3] = {-1, 0, 1 << 30};
  const uint16_t u16[1] = {65535};
  const float* none = nullptr;
  WriteSafetensors(dir.Path("m.safetensors"),
                   {{"model.w", SafetensorsDtype::kF32, {3, 5}, w.data()},
                    {"empty", SafetensorsDtype::kF32, {0, 4}, none},
                    {"ints", SafetensorsDtype::kI32, {3}, i32},
                    {"u", SafetensorsDtype::kU16, {1, 1}, u16}});
  const SafetensorsFile file = SafetensorsFile::Read(dir.Path("m.safetensors"));
  EXPECT_EQ(file.ReadF32("model.w"), w);
  EXPECT_TRUE(file.ReadF32("empty").empty());
  int32_t ints[3];
  std::memcpy(ints, file.Data(*file.Find("ints")), sizeof(ints));
  EXPECT_EQ(ints[2], 1 << 30);
  EXPECT_EQ(file.Find("u")->shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(file.Find("missing"), nullptr);
  ROTOR_EXPECT_ERROR(file.ReadF32("ints"), "'ints'", "dtype I32",
                     "expected F32");
  const std::vector<int64_t> wrong = {5, 3};
  ROTOR_EXPECT_ERROR(file.ReadF32("model.w", &wrong), "shape [3, 5]",
                     "expected [5, 3]");
  ROTOR_EXPECT_ERROR(file.ReadF32("nope"), "no tensor named 'nope'");
}

// Random 16-bit patterns (every bfloat16 or half, NaNs included).
std::vector<uint16_t> RandomHalves(size_t n, std::mt19937& rng) {
  std::vector<uint16_t> halves(n);
  for (uint16_t& half : halves) half = static_cast<uint16_t>(rng());
  return halves;
}

// BF16 and F16 tensors are written as their bit patterns, read back as the
// same bytes, and ReadAsF32 converts each dtype exactly (the float32 bits of
// the scalar twins, NaNs included). "big" spans several conversion blocks
// (4 MiB of the file each) and ends in a partial one; after ReadAsF32 has
// dropped its pages, Data() still reads the same bytes.
TEST(Safetensors, BF16AndF16RoundTripAndReadAsF32) {
  test::TempDir dir;
  std::mt19937 rng(5);
  const std::vector<uint16_t> bf16 = RandomHalves(3 * 7, rng);
  const std::vector<uint16_t> f16 = RandomHalves(65536, rng);
  const std::vector<uint16_t> big = RandomHalves((5 << 20) + 3, rng);
  const std::vector<float> f32 = test::RandomVector(10, rng);
  const std::string path = dir.Path("half.safetensors");
  WriteSafetensors(path, {{"b", SafetensorsDtype::kBF16, {3, 7}, bf16.data()},
                          {"h", SafetensorsDtype::kF16, {65536}, f16.data()},
                          {"big",
                           SafetensorsDtype::kBF16,
                           {static_cast<int64_t>(big.size())},
                           big.data()},
                          {"f", SafetensorsDtype::kF32, {2, 5}, f32.data()}});
  EXPECT_CONTAINS(ReadFile(path), R"("b":{"dtype":"BF16","shape":[3,7])");
  EXPECT_CONTAINS(ReadFile(path), R"("h":{"dtype":"F16","shape":[65536])");
  const SafetensorsFile file = SafetensorsFile::Read(path);
  // F32 first (larger elements), then the 2-byte tensors by name.
  ASSERT_EQ(file.tensors().size(), 4u);
  EXPECT_EQ(file.tensors()[0].name, "f");
  EXPECT_EQ(file.tensors()[1].name, "b");
  EXPECT_EQ(file.tensors()[2].dtype, SafetensorsDtype::kBF16);
  EXPECT_EQ(file.tensors()[3].dtype, SafetensorsDtype::kF16);

  const auto expect_read = [&](const std::string& name,
                               const std::vector<uint16_t>& halves,
                               float (*decode)(uint16_t)) {
    const SafetensorsFile::TensorInfo& info = *file.Find(name);
    std::vector<float> floats(halves.size());
    file.ReadAsF32(info, floats.data());
    for (size_t i = 0; i < halves.size(); ++i) {
      ASSERT_EQ(kernels::BitsOfFloat(floats[i]),
                kernels::BitsOfFloat(decode(halves[i])))
          << name << " element " << i;
    }
    EXPECT_EQ(std::memcmp(file.Data(info), halves.data(), 2 * halves.size()), 0)
        << name;
  };
  expect_read("b", bf16, kernels::BF16ToF32Ref);
  expect_read("h", f16, kernels::F16ToF32Ref);
  expect_read("big", big, kernels::BF16ToF32Ref);
  std::vector<float> copied(f32.size());
  file.ReadAsF32(*file.Find("f"), copied.data());
  EXPECT_EQ(copied, f32);
  // ReadF32 stays F32-only.
  ROTOR_EXPECT_ERROR(file.ReadF32("b"), "'b'", "dtype BF16", "expected F32");
}

TEST(Safetensors, ReadAsF32RefusesOtherDtypes) {
  test::TempDir dir;
  const int64_t i64[2] = {1, 2};
  const std::string path = dir.Path("ints.safetensors");
  WriteSafetensors(path, {{"steps", SafetensorsDtype::kI64, {2}, i64}});
  const SafetensorsFile file = SafetensorsFile::Read(path);
  float out[2];
  ROTOR_EXPECT_ERROR(file.ReadAsF32(*file.Find("steps"), out), path,
                     "tensor 'steps' has dtype I64",
                     "does not convert to float32 (F32, BF16 and F16 do)");
}

// A shard cut short (an interrupted download or copy) is refused when it is
// opened, naming the file, the first tensor found cut and both sizes, before
// any tensor data is touched (reading a mapped page past the end of a file
// would be SIGBUS).
TEST(Safetensors, TruncatedFileNamesTheTensorAndSizes) {
  test::TempDir dir;
  const std::vector<float> a(100, 1.0f), b(100, 2.0f);
  const std::string path = dir.Path("shard.safetensors");
  WriteSafetensors(path, {{"a", SafetensorsDtype::kF32, {100}, a.data()},
                          {"b", SafetensorsDtype::kF32, {100}, b.data()}});
  const uintmax_t size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 10);
  ROTOR_EXPECT_ERROR(
      SafetensorsFile::Read(path), path, "tensor 'b'",
      "data_offsets [400, 800] out of range", "the file is truncated",
      StrCat("it has ", size - 10, " bytes, this tensor needs ", size));
}

// The mapping keeps the file alive: a SafetensorsFile reads the same bytes
// after its path is deleted, or replaced as rotor's writers do (by rename),
// and after it is moved.
TEST(Safetensors, MappingOutlivesItsPathAndMoves) {
  test::TempDir dir;
  const std::vector<float> w = {1.0f, 2.0f, 3.0f};
  const std::vector<float> other = {-1.0f};
  const std::string path = dir.Path("w.safetensors");
  WriteSafetensors(path, {{"w", SafetensorsDtype::kF32, {3}, w.data()}});
  SafetensorsFile file = SafetensorsFile::Read(path);
  WriteSafetensors(path, {{"w", SafetensorsDtype::kF32, {1}, other.data()}});
  EXPECT_EQ(file.ReadF32("w"), w);
  EXPECT_EQ(SafetensorsFile::Read(path).ReadF32("w"), other);
  std::filesystem::remove(path);
  EXPECT_EQ(file.ReadF32("w"), w);

  SafetensorsFile moved = std::move(file);
  EXPECT_EQ(moved.ReadF32("w"), w);
  SafetensorsFile assigned =
      SafetensorsFile::Parse(MakeFile("{}", ""), "empty");
  assigned = std::move(moved);
  EXPECT_EQ(assigned.ReadF32("w"), w);
  // Parsed bytes move along too.
  SafetensorsFile parsed = SafetensorsFile::Parse(
      MakeFile(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
               std::string("\0\0\x80\x3f", 4)),
      "parsed");
  const SafetensorsFile parsed_moved = std::move(parsed);
  EXPECT_EQ(parsed_moved.ReadF32("x"), std::vector<float>{1.0f});
}

TEST(Safetensors, WriterRejectsBadEntries) {
  test::TempDir dir;
  const float x = 1.0f;
  const std::string path = dir.Path("bad.safetensors");
  ROTOR_EXPECT_ERROR(
      WriteSafetensors(path, {{"w", SafetensorsDtype::kF32, {1}, &x},
                              {"w", SafetensorsDtype::kF32, {1}, &x}}),
      "duplicate tensor name 'w'");
  ROTOR_EXPECT_ERROR(
      WriteSafetensors(path,
                       {{"__metadata__", SafetensorsDtype::kF32, {1}, &x}}),
      "invalid tensor name");
  ROTOR_EXPECT_ERROR(
      WriteSafetensors(path, {{"w", SafetensorsDtype::kF32, {2, -1}, &x}}),
      "'w'", "negative extent");
  ROTOR_EXPECT_ERROR(
      WriteSafetensors(path, {{"w", SafetensorsDtype::kF32, {2}, nullptr}}),
      "null data");
  EXPECT_TRUE(dir.List().empty());
}

void ExpectRejected(const std::string& bytes,
                    const std::vector<std::string>& parts) {
  try {
    SafetensorsFile::Parse(bytes, "ckpt/model.safetensors");
    ADD_FAILURE() << "accepted a malformed file";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("ckpt/model.safetensors"), std::string::npos)
        << message;
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message \"" << message << "\" lacks \"" << part << "\"";
    }
  }
}

TEST(Safetensors, ReaderRejectsMalformedFiles) {
  const std::string eight(8, '\0');
  const auto tensor = [](const std::string& name, const std::string& dtype,
                         const std::string& shape, const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}";
  };
  ExpectRejected("abc", {"too short"});
  // Header length beyond the end of the file.
  ExpectRejected(MakeFile("{}", "").substr(0, 9), {"runs past the end"});
  ExpectRejected(std::string("\xff\xff\xff\xff\0\0\0\0", 8) + "{}",
                 {"exceeds the limit of 16777216 bytes"});
  ExpectRejected(MakeFile("[1,2]", ""), {"not a JSON object"});
  ExpectRejected(MakeFile("{\"w\":{\"dtype\":\"F32\",", ""), {"invalid JSON"});
  ExpectRejected(MakeFile("{" + tensor("w", "F64", "[2]", "[0,16]") + "}",
                          std::string(16, '\0')),
                 {"tensor 'w'", "unsupported dtype \"F64\"", "BF16, F16"});
  ExpectRejected(
      MakeFile("{" + tensor("w", "F32", "[2]", "[0,16]") + "}", eight),
      {"tensor 'w'", "out of range", "8 bytes"});
  ExpectRejected(
      MakeFile("{" + tensor("w", "F32", "[3]", "[0,8]") + "}", eight),
      {"tensor 'w'", "shape [3] x 4 bytes = 12", "span 8"});
  ExpectRejected(
      MakeFile("{" + tensor("w", "F32", "[-2]", "[0,8]") + "}", eight),
      {"tensor 'w'", "negative extent"});
  ExpectRejected(MakeFile("{" + tensor("a", "F32", "[2]", "[0,8]") + "," +
                              tensor("b", "F32", "[1]", "[4,8]") + "}",
                          eight),
                 {"'a' and 'b' overlap"});
  ExpectRejected(
      MakeFile("{" + tensor("a", "F32", "[1]", "[4,8]") + "}", eight),
      {"bytes 0..4", "belong to no tensor", "'a'"});
  ExpectRejected(
      MakeFile("{" + tensor("a", "F32", "[1]", "[0,4]") + "}", eight),
      {"4 trailing bytes"});
  ExpectRejected(MakeFile("{\"__metadata__\":{\"step\":3}}", ""),
                 {"__metadata__ value of 'step'", "must be strings"});
  ExpectRejected(MakeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[0],"
                          "\"data_offsets\":[0,0],\"extra\":1}}",
                          ""),
                 {"tensor 'w'", "unexpected key 'extra'"});
  ExpectRejected(MakeFile("{\"w\":{\"dtype\":\"F32\",\"shape\":[0]}}", ""),
                 {"tensor 'w'", "needs dtype, shape and data_offsets"});
  ExpectRejected(
      MakeFile("{" + tensor("w", "F32", "[1]", "[4,0]") + "}", eight),
      {"tensor 'w'", "data_offsets [4, 0] out of range"});
}

TEST(Safetensors, ReaderAcceptsPaddingAndZeroSizedFiles) {
  // Leading and trailing whitespace in the header are allowed by the spec.
  const SafetensorsFile file = SafetensorsFile::Parse(
      MakeFile("  {\"__metadata__\":{\"format\":\"pt\"}}    ", ""), "f");
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_EQ(file.metadata().at("format"), "pt");
}

// docs/limits.md: a header of kMaxSafetensorsHeaderBytes is read, one byte
// more is refused before parsing; so is one entry over
// kMaxSafetensorsEntries (tensors and metadata keys), by reader and writer.
TEST(Safetensors, HeaderSizeAndEntryCountLimits) {
  std::string header = "{}";
  header.resize(kMaxSafetensorsHeaderBytes, ' ');
  EXPECT_TRUE(SafetensorsFile::Parse(MakeFile(header, ""), "big.safetensors")
                  .tensors()
                  .empty());
  ROTOR_EXPECT_ERROR(
      SafetensorsFile::Parse(MakeFile(header + " ", ""), "big.safetensors"),
      "big.safetensors: header length 16777217 exceeds the limit of 16777216 "
      "bytes");

  test::TempDir dir;
  std::map<std::string, std::string> metadata;  // "format" makes one more
  for (uint64_t i = 0; i + 2 < kMaxSafetensorsEntries; ++i) {
    metadata["k" + std::to_string(i)] = "";
  }
  const float x = 1.0f;
  const std::vector<SafetensorsEntry> one = {
      {"x", SafetensorsDtype::kF32, {}, &x}};
  const std::string path = dir.Path("m.safetensors");
  WriteSafetensors(path, one, metadata);
  EXPECT_EQ(SafetensorsFile::Read(path).metadata().size(),
            kMaxSafetensorsEntries - 1);
  // One tensor more: the writer refuses, and so does the reader.
  ROTOR_EXPECT_ERROR(
      WriteSafetensors(path, {one[0], {"y", SafetensorsDtype::kF32, {}, &x}},
                       metadata),
      "has 65537 tensors and metadata keys, more than the limit of 65536");
  std::string bytes = ReadFile(path);
  const size_t metadata_end = bytes.find("},\"x\"");
  ASSERT_NE(metadata_end, std::string::npos);
  bytes.insert(metadata_end, ",\"one_more\":\"\"");
  const uint64_t size = bytes.size() - 8 - sizeof(float);
  bytes = MakeFile(bytes.substr(8, size), bytes.substr(8 + size));
  ROTOR_EXPECT_ERROR(SafetensorsFile::Parse(bytes, "m.safetensors"),
                     "m.safetensors: header has 65537 tensors and metadata "
                     "keys, more than the limit of 65536");
}

TEST(Safetensors, ReadNamesAMissingEmptyOrNonRegularFile) {
  ROTOR_EXPECT_ERROR(SafetensorsFile::Read("/nonexistent/x.safetensors"),
                     "/nonexistent/x.safetensors", "cannot open");
  test::TempDir dir;
  const std::string empty = dir.Write("empty.safetensors", "");
  ROTOR_EXPECT_ERROR(SafetensorsFile::Read(empty), empty,
                     "not a safetensors file (0 bytes");
  ROTOR_EXPECT_ERROR(SafetensorsFile::Read(dir.path()), dir.path(),
                     "not a regular file");
}

}  // namespace
}  // namespace rotor::train
