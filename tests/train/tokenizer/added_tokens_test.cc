// AddedVocabulary's matcher: the segments of texts cut at added tokens,
// against a scan that tries every token at every position (HF's
// leftmost-longest matching, done the slow way), and its time with many
// tokens.
#include "train/tokenizer/added_tokens.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace rotor::train {
namespace {

using Segments = std::vector<std::tuple<size_t, size_t, TokenId>>;

AddedToken Raw(TokenId id, std::string content) {
  AddedToken token;
  token.content = std::move(content);
  token.id = id;
  token.special = true;
  token.normalized = false;
  return token;
}

Segments SplitRaw(const AddedVocabulary& vocabulary, std::string_view text,
                  size_t chunk_bytes = AddedVocabulary::kSplitChunkBytes) {
  std::vector<AddedVocabulary::Segment> segments;
  vocabulary.SplitRaw(text, segments, chunk_bytes);
  Segments out;
  for (const AddedVocabulary::Segment& s : segments) {
    out.emplace_back(s.start, s.end, s.id);
  }
  return out;
}

// A text of 1 to max_length bytes drawn from `alphabet`.
std::string RandomText(std::mt19937& rng, int max_length,
                       std::string_view alphabet) {
  std::string text(std::uniform_int_distribution<int>(1, max_length)(rng), ' ');
  for (char& c : text) c = alphabet[rng() % alphabet.size()];
  return text;
}

// Leftmost-longest by brute force: at each position the longest token that
// starts there, if any, then on after it (plain tokens: no single_word,
// lstrip or rstrip).
Segments BruteForceSplit(const std::vector<AddedToken>& tokens,
                         std::string_view text) {
  Segments out;
  size_t covered = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* best = nullptr;
    for (const AddedToken& token : tokens) {
      if (text.substr(pos, token.content.size()) == token.content &&
          (best == nullptr || token.content.size() > best->content.size())) {
        best = &token;
      }
    }
    if (best == nullptr) {
      ++pos;
      continue;
    }
    if (covered < pos) out.emplace_back(covered, pos, -1);
    covered = pos + best->content.size();
    out.emplace_back(pos, covered, best->id);
    pos = covered;
  }
  if (covered < text.size()) out.emplace_back(covered, text.size(), -1);
  return out;
}

// The leftmost match wins over a longer one that starts later ("ab" before
// "bcd" in "abcd"), the longest over a shorter one at the same place, and
// a longer token that does not match in full leaves the shorter one
// ("abcde" fails in "abcx", "ab" is taken, and "cx" is found inside what
// the failed match had read).
TEST(AddedTokens, LeftmostThenLongest) {
  AddedVocabulary vocabulary;
  vocabulary.Add(Raw(10, "ab"));
  vocabulary.Add(Raw(11, "bcd"));
  vocabulary.Add(Raw(12, "a"));
  vocabulary.Add(Raw(13, "abcde"));
  vocabulary.Add(Raw(14, "cx"));
  vocabulary.Build(nullptr);
  EXPECT_EQ(SplitRaw(vocabulary, "abcd"), (Segments{{0, 2, 10}, {2, 4, -1}}));
  EXPECT_EQ(SplitRaw(vocabulary, "xabcdef"),
            (Segments{{0, 1, -1}, {1, 6, 13}, {6, 7, -1}}));
  EXPECT_EQ(SplitRaw(vocabulary, "abcx"), (Segments{{0, 2, 10}, {2, 4, 14}}));
  EXPECT_EQ(SplitRaw(vocabulary, "zbcdz"),
            (Segments{{0, 1, -1}, {1, 4, 11}, {4, 5, -1}}));
  EXPECT_EQ(SplitRaw(vocabulary, "ax"), (Segments{{0, 1, 12}, {1, 2, -1}}));
  EXPECT_EQ(SplitRaw(vocabulary, ""), Segments{});
  EXPECT_EQ(SplitRaw(vocabulary, "zz"), (Segments{{0, 2, -1}}));
}

// Two normalized tokens whose normalized texts are the same: the one added
// first is matched, as HF's automaton reports its lowest pattern.
TEST(AddedTokens, SameNormalizedTextMatchesTheFirstToken) {
  AddedVocabulary vocabulary;
  for (const auto& [id, content] :
       {std::pair<TokenId, const char*>{20, "<X>"}, {21, "<x>"}}) {
    AddedToken token = Raw(id, content);
    token.normalized = true;
    vocabulary.Add(token);
  }
  const LowercaseNormalizer lowercase;
  vocabulary.Build(&lowercase);
  std::vector<AddedVocabulary::Segment> segments;
  vocabulary.SplitNormalized("a<x>", segments);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[1].id, 20);
  EXPECT_EQ(*vocabulary.DecodeText(21), "<x>");
}

// Random tokens and texts over a three-letter alphabet (so tokens overlap,
// nest and share prefixes and suffixes) against the brute-force scan.
TEST(AddedTokens, MatchesBruteForceOnRandomTokens) {
  std::mt19937 rng(40);
  for (int trial = 0; trial < 300; ++trial) {
    AddedVocabulary vocabulary;
    std::vector<AddedToken> tokens;
    const int count = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < count; ++i) {
      AddedToken token = Raw(100 + i, RandomText(rng, 5, "abc"));
      vocabulary.Add(token);
      // A content given twice keeps the later token (AddedVocabulary::Add).
      tokens.erase(std::remove_if(tokens.begin(), tokens.end(),
                                  [&](const AddedToken& t) {
                                    return t.content == token.content;
                                  }),
                   tokens.end());
      tokens.push_back(token);
    }
    vocabulary.Build(nullptr);
    const std::string text = RandomText(rng, 40, "abc");
    ASSERT_EQ(SplitRaw(vocabulary, text), BruteForceSplit(tokens, text))
        << "trial " << trial << ", text " << text;
  }
}

// The matcher reads a text a chunk at a time, rescanning the longest
// token's length past each chunk's end: with chunks of a few bytes, random
// tokens over "ab " (so matches, lstrip and rstrip whitespace and
// single_word's word checks all cross chunk boundaries) cut random texts as
// they do in one chunk.
TEST(AddedTokens, ChunksCutTheTextAsOneChunk) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 300; ++trial) {
    AddedVocabulary vocabulary;
    const int count = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int i = 0; i < count; ++i) {
      AddedToken token = Raw(100 + i, RandomText(rng, 4, "ab "));
      token.lstrip = rng() % 3 == 0;
      token.rstrip = rng() % 3 == 0;
      token.single_word = rng() % 3 == 0;
      vocabulary.Add(token);
    }
    vocabulary.Build(nullptr);
    const std::string text = RandomText(rng, 60, "ab ");
    const Segments whole = SplitRaw(vocabulary, text);
    for (size_t chunk = 1; chunk <= 9; ++chunk) {
      ASSERT_EQ(SplitRaw(vocabulary, text, chunk), whole)
          << "trial " << trial << ", chunk " << chunk << ", text " << text;
    }
  }
}

// 20,000 added tokens that all start with '<' ("<t0>", "<t1>", ...), in a
// text of nothing but '<': trying each token at each position took 19 s
// for 250 KB and 78 s for 1 MB; one pass of an automaton takes
// milliseconds whatever the number of tokens. The bounds leave room for a
// loaded machine and ASan, and still fail the old matcher by a factor of
// ten; 4x the text may take at most 8x the time.
TEST(AddedTokens, ManyTokensMatchInLinearTime) {
  AddedVocabulary vocabulary;
  for (int i = 0; i < 20'000; ++i) {
    vocabulary.Add(Raw(1000 + i, "<t" + std::to_string(i) + ">"));
  }
  vocabulary.Build(nullptr);
  const auto seconds_for = [&](size_t bytes) {
    const std::string text(bytes, '<');
    const auto start = std::chrono::steady_clock::now();
    const Segments segments = SplitRaw(vocabulary, text);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT_EQ(segments, (Segments{{0, bytes, -1}}));
    RecordProperty("seconds_" + std::to_string(bytes), std::to_string(seconds));
    return seconds;
  };
  const double small = seconds_for(size_t{1} << 16);
  const double large = seconds_for(size_t{1} << 18);
  EXPECT_LT(small, 0.5);
  EXPECT_LT(large, 2.0);
  EXPECT_LT(large, 8 * small + 0.2);
}

}  // namespace
}  // namespace rotor::train
