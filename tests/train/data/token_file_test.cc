// Token files: write, memory-map, and reject every kind of damage with a
// message naming the file and the problem.
#include "train/data/token_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"

namespace rotor::train {
namespace {

TEST(TokenFile, WritesTheDocumentedLayoutAndReadsItBack) {
  test::TempDir dir;
  const std::string path = dir.Path("t.bin");
  WriteTokenFile(path, {256, 'h', 'i', 256, 'x'}, {257, 2, 256, 3});
  const std::string bytes = ReadFile(path);
  ASSERT_EQ(bytes.size(), 64u + 10u);
  EXPECT_EQ(bytes.substr(0, 8), "ROTORTOK");
  const auto byte = [&](size_t i) {
    return static_cast<unsigned char>(bytes[i]);
  };
  EXPECT_EQ(byte(8), 2);   // version
  EXPECT_EQ(byte(12), 1);  // dtype uint16
  EXPECT_EQ(byte(16), 1);  // vocab 257 = 0x0101, little-endian
  EXPECT_EQ(byte(17), 1);
  EXPECT_EQ(byte(20), 0);  // separator 256 = 00 01
  EXPECT_EQ(byte(21), 1);
  EXPECT_EQ(byte(24), 5);  // token count
  EXPECT_EQ(byte(32), 2);  // documents
  EXPECT_EQ(byte(40), 3);  // text bytes
  EXPECT_EQ(byte(64), 0);  // 256 = 00 01
  EXPECT_EQ(byte(65), 1);
  EXPECT_EQ(byte(66), 'h');

  TokenFile file(path);
  EXPECT_EQ(file.size(), 5u);
  EXPECT_EQ(file.vocab_size(), 257u);
  EXPECT_EQ(file.document_count(), 2u);
  EXPECT_EQ(file.separator_id(), 256);
  EXPECT_EQ(file.dtype(), kTokenDtypeUint16);
  EXPECT_EQ(file.text_bytes(), 3u);
  // 5 tokens at 2 nats each over 3 bytes: 10 / 3 / ln 2 bits per byte.
  EXPECT_DOUBLE_EQ(file.BitsPerByte(2.0), 10.0 / 3.0 / std::log(2.0));
  EXPECT_EQ(file[0], 256);
  EXPECT_EQ(file[2], 'i');
  EXPECT_EQ(file.path(), path);

  TokenFile moved = std::move(file);
  EXPECT_EQ(moved[4], 'x');
  EXPECT_EQ(file.size(), 0u);  // the moved-from file is empty
}

// Vocabularies above 65536 ids (Llama 3 has 128256) are stored as uint32.
TEST(TokenFile, LargeVocabulariesUseFourBytesPerToken) {
  test::TempDir dir;
  const std::string path = dir.Path("big.bin");
  const std::vector<int32_t> tokens = {128000, 0, 65535, 65536, 128255};
  WriteTokenFile(path, tokens, {128256, 1, 128000, 1});
  EXPECT_EQ(ReadFile(path).size(), 64u + 4u * tokens.size());
  const TokenFile file(path);
  EXPECT_EQ(file.dtype(), kTokenDtypeUint32);
  EXPECT_EQ(file.separator_id(), 128000);
  std::vector<int32_t> copied(4);
  file.Copy(1, 4, copied.data());
  EXPECT_EQ(copied, std::vector<int32_t>(tokens.begin() + 1, tokens.end()));
  EXPECT_EQ(file[4], 128255);
  // Exactly 65536 ids still fit uint16.
  WriteTokenFile(path, {65535}, {65536, 1, 0, 1});
  EXPECT_EQ(TokenFile(path).dtype(), kTokenDtypeUint16);
}

// Files of format version 1 (before the separator field) still read, with
// the byte tokenizer's separator.
TEST(TokenFile, ReadsVersionOneFiles) {
  test::TempDir dir;
  const std::string path = dir.Path("v1.bin");
  WriteTokenFile(path, {256, 'a'}, {257, 1, 256, 1});
  std::string bytes = ReadFile(path);
  bytes[8] = 1;               // version 1
  bytes[20] = bytes[21] = 0;  // whose offsets 20 and 40 were reserved, 0
  bytes[40] = 0;
  WriteFileAtomically(path, bytes);
  const TokenFile file(path);
  EXPECT_EQ(file.separator_id(), 256);
  EXPECT_EQ(file.text_bytes(), 1u);  // byte tokens: tokens - documents
  EXPECT_EQ(file[1], 'a');
}

TEST(TokenFile, EmptyStreamIsValid) {
  test::TempDir dir;
  WriteTokenFile(dir.Path("e.bin"), {}, {257, 0, 256, 0});
  EXPECT_EQ(TokenFile(dir.Path("e.bin")).size(), 0u);
}

TEST(TokenFile, WriterRejectsTokensOutsideTheVocabulary) {
  test::TempDir dir;
  ROTOR_EXPECT_ERROR(
      WriteTokenFile(dir.Path("t.bin"), {1, 300}, {257, 1, 256, 1}), "t.bin",
      "token 1 is 300", "vocab_size 257");
  ROTOR_EXPECT_ERROR(
      WriteTokenFile(dir.Path("t.bin"), {1, -1}, {257, 1, 256, 1}),
      "token 1 is -1");
  ROTOR_EXPECT_ERROR(
      WriteTokenFile(dir.Path("t.bin"), {1}, {(1u << 20) + 1, 1, 256, 1}),
      "vocab_size 1048577", "[1, 1048576]");
  ROTOR_EXPECT_ERROR(WriteTokenFile(dir.Path("t.bin"), {1}, {257, 1, 257, 1}),
                     "separator id 257");
  EXPECT_TRUE(dir.List().empty());  // nothing (not even a temporary) left
}

// Writes a valid file, lets `damage` edit its bytes, and expects the reader
// to fail with a message holding every part.
void ExpectDamageRejected(const std::function<void(std::string&)>& damage,
                          const std::vector<std::string>& parts) {
  test::TempDir dir;
  const std::string path = dir.Path("val.bin");
  WriteTokenFile(path, {256, 'a', 'b', 'c'}, {257, 1, 256, 1});
  std::string bytes = ReadFile(path);
  damage(bytes);
  WriteFileAtomically(path, bytes);
  try {
    TokenFile file(path);
    ADD_FAILURE() << "damaged file was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message \"" << message << "\" lacks \"" << part << "\"";
    }
  }
}

TEST(TokenFile, RejectsDamagedFiles) {
  ExpectDamageRejected([](std::string& b) { b.resize(20); },
                       {"truncated header", "20 bytes"});
  ExpectDamageRejected([](std::string& b) { b[0] = 'X'; }, {"wrong magic"});
  ExpectDamageRejected([](std::string& b) { b[8] = 3; },
                       {"format version 3", "not supported"});
  ExpectDamageRejected([](std::string& b) { b[12] = 7; }, {"dtype code 7"});
  ExpectDamageRejected([](std::string& b) { b[16] = b[17] = b[18] = 0; },
                       {"vocab_size 0"});
  ExpectDamageRejected([](std::string& b) { b.resize(b.size() - 1); },
                       {"header says 4 tokens", "7 bytes", "truncated"});
  ExpectDamageRejected([](std::string& b) { b += "zz"; },
                       {"10 bytes", "trailing bytes"});
  ExpectDamageRejected([](std::string& b) { b[24] = 100; },
                       {"100 tokens", "truncated"});
  ExpectDamageRejected([](std::string& b) { b[32] = 9; }, {"document_count 9"});
  ExpectDamageRejected([](std::string& b) { b[21] = 9; },  // 0x900
                       {"separator id 2304", "not < vocab_size 257"});
  ExpectDamageRejected([](std::string& b) { b[50] = 1; },
                       {"reserved header byte 50"});
  ExpectDamageRejected([](std::string& b) { b[67] = 2; },  // token 1 = 0x261
                       {"token 1 is 609", "vocab_size 257"});
}

TEST(TokenFile, RejectsMissingFilesAndFolders) {
  test::TempDir dir;
  ROTOR_EXPECT_ERROR(TokenFile(dir.Path("nope.bin")), "nope.bin",
                     "cannot open");
  ROTOR_EXPECT_ERROR(TokenFile(dir.path()), "not a regular file");
}

}  // namespace
}  // namespace rotor::train
