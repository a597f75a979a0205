// The tokenizer.json text of a byte-level BPE tokenizer, in the layout of
// Hugging Face's tokenizers library, for the tokenizers rotor makes itself:
// those it trains (bpe_trainer.h, BpeTokenizerJson) and its byte tokenizer
// (byte_tokenizer.h, ByteTokenizerJson). HF's tokenizers, transformers.js
// and rotor's LoadTokenizer read it unchanged.
//
// The pipeline it describes: special tokens are cut out of the text first
// (added_tokens); no normalizer; the pre-tokenizer splits the text with a
// regex (a Split step, when there is a pattern) and maps its bytes to
// GPT-2's printable characters (ByteLevel, without GPT-2's own regex); the
// BPE model merges those characters; the post-processor (ByteLevel, offsets
// untrimmed) adds no tokens; the ByteLevel decoder maps the characters back
// to bytes.
#ifndef ROTOR_TRAIN_TOKENIZER_BYTE_LEVEL_BPE_JSON_H_
#define ROTOR_TRAIN_TOKENIZER_BYTE_LEVEL_BPE_JSON_H_

#include <string>
#include <utility>
#include <vector>

#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// `vocab`: the token strings by id, in GPT-2's byte-level alphabet
// (ByteLevelChars, pre_tokenizers.h), special tokens as they are written;
// `special_ids`: the ids of the special added tokens, in the order to list
// them; `merges`: pairs of ids, rank 0 first; `split_pattern`: the Split
// regex (PCRE2 syntax), or "" for none (each text between special tokens is
// then one piece). 2-space indented, ending in a newline.
std::string ByteLevelBpeTokenizerJson(
    const std::vector<std::string>& vocab,
    const std::vector<TokenId>& special_ids,
    const std::vector<std::pair<TokenId, TokenId>>& merges,
    const std::string& split_pattern);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_BYTE_LEVEL_BPE_JSON_H_
