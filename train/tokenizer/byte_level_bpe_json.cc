#include "train/tokenizer/byte_level_bpe_json.h"

#include "train/io/json.h"

namespace rotor::train {

std::string ByteLevelBpeTokenizerJson(
    const std::vector<std::string>& vocab,
    const std::vector<TokenId>& special_ids,
    const std::vector<std::pair<TokenId, TokenId>>& merges,
    const std::string& split_pattern) {
  Json added_tokens = Json::array();
  for (const TokenId id : special_ids) {
    added_tokens.push_back({{"id", id},
                            {"content", vocab.at(id)},
                            {"single_word", false},
                            {"lstrip", false},
                            {"rstrip", false},
                            {"normalized", false},
                            {"special", true}});
  }
  Json vocab_json = Json::object();
  for (size_t id = 0; id < vocab.size(); ++id) vocab_json[vocab[id]] = id;
  Json merges_json = Json::array();
  for (const auto& [left, right] : merges) {
    merges_json.push_back(vocab.at(left) + " " + vocab.at(right));
  }
  const Json byte_level_pre_tokenizer = {{"type", "ByteLevel"},
                                         {"add_prefix_space", false},
                                         {"trim_offsets", true},
                                         {"use_regex", false}};
  const Json pre_tokenizer =
      split_pattern.empty() ? byte_level_pre_tokenizer
                            : Json{{"type", "Sequence"},
                                   {"pretokenizers",
                                    {{{"type", "Split"},
                                      {"pattern", {{"Regex", split_pattern}}},
                                      {"behavior", "Isolated"},
                                      {"invert", false}},
                                     byte_level_pre_tokenizer}}};
  const Json tokenizer = {{"version", "1.0"},
                          {"truncation", nullptr},
                          {"padding", nullptr},
                          {"added_tokens", std::move(added_tokens)},
                          {"normalizer", nullptr},
                          {"pre_tokenizer", pre_tokenizer},
                          {"post_processor",
                           {{"type", "ByteLevel"},
                            {"add_prefix_space", false},
                            {"trim_offsets", false},
                            {"use_regex", false}}},
                          {"decoder",
                           {{"type", "ByteLevel"},
                            {"add_prefix_space", false},
                            {"trim_offsets", true},
                            {"use_regex", false}}},
                          {"model",
                           {{"type", "BPE"},
                            {"dropout", nullptr},
                            {"unk_token", nullptr},
                            {"continuing_subword_prefix", nullptr},
                            {"end_of_word_suffix", nullptr},
                            {"fuse_unk", false},
                            {"byte_fallback", false},
                            {"ignore_merges", false},
                            {"vocab", std::move(vocab_json)},
                            {"merges", std::move(merges_json)}}}};
  return tokenizer.dump(2) + "\n";
}

}  // namespace rotor::train
