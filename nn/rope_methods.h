// One record per RoPE scaling method, as transformers' ROPE_INIT_FUNCTIONS
// ({"default": ..., "linear": ...}) and llama.cpp's LLAMA_ROPE_SCALING_TYPES
// keep each method in one place: its name, its traits, the check of its own
// keys, its frequencies and its settings at a given factor. The shared parts
// (FindRopeConfigProblem, ComputeRopeFrequencies, RopeSettingsAtFactor) run
// the record's; code outside nn/ asks the record (RopeMethodOf(type): a
// trait, or one of its functions) instead of listing RopeType values. How
// to add a method: docs/architecture.md.
#ifndef ROTOR_NN_ROPE_METHODS_H_
#define ROTOR_NN_ROPE_METHODS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/number_format.h"
#include "nn/rope_scaling.h"

namespace rotor {

// Whether a method takes rope_scaling.factor (s).
enum class FactorUse {
  kNone,      // default: it scales nothing
  kRequired,  // linear, ntk, dynamic, yarn, llama3
  kOptional,  // longrope: max_position_embeddings / L0 when absent
};

// Where a method finds L0, the length its scaling starts from.
enum class OriginalLengthFrom {
  kNone,          // default: no scaling
  kMaxPositions,  // dynamic: max_position_embeddings, scaled past it
  // linear, ntk: no key; a model declares max_position_embeddings = s * L0.
  kMaxPositionsOverFactor,
  // yarn, llama3, longrope: original_max_position_embeddings
  // (OriginalLength: max_position_embeddings when absent).
  kOriginalKey,
};

// A setting only some methods have, resolved for one sequence length (YaRN's
// ramp, Llama 3's wavelength bands, the LongRoPE factor list in use): a row
// of `rotor rope` and, when curve_key is set, a member of the RoPE
// explorer's curve (train/extend/rope_explorer.h).
struct RopeNote {
  std::string label;      // the row's label: "ramp (pair indices)"
  std::string value;      // the row's value, numbers as FullDigits: "18 .. 35"
  std::string curve_key;  // "yarn_ramp"; empty: not drawn
  std::vector<double> curve_numbers;  // the member's value: numbers, or
  std::string curve_word;             // (no numbers) a word
};

// Two keys (rope_scaling.*) of a method that switches between them at L0:
// the first is used for sequences up to L0, the second past it.
struct LengthSwitch {
  const char* up_to_original;  // "rope_scaling.short_factor"
  const char* past_original;   // "rope_scaling.long_factor"
};

struct RopeMethod {
  RopeType type;
  const char* name;  // rope_type in configs: "default", "linear", ...
  FactorUse factor_use = FactorUse::kNone;
  OriginalLengthFrom original_length_from = OriginalLengthFrom::kNone;
  // Non-null when original_max_position_embeddings is required (llama3):
  // what ends the message that names it missing.
  const char* original_length_hint = nullptr;
  // The frequencies change with the sequence length (dynamic, longrope); it
  // must then be fixed per sequence (ComputeRopeFrequencies).
  bool depends_on_sequence_length = false;
  // The fixed frequencies stretch the positions by s, so s * L0 positions
  // map into the pre-trained range (linear, ntk, yarn, llama3).
  bool stretches_by_factor = false;
  // The factor is max_position_embeddings / L0: the model declares the s *
  // L0 positions the scaling maps into the pre-trained range, and trains
  // within them (linear, ntk, yarn, longrope). Not llama3: its bands keep
  // the fast pairs as they are, and Llama 3.1 declares 131072 positions with
  // factor 8 of 8192 and was trained past s * L0.
  bool factor_is_length_ratio = false;
  // Blends each pair between theta_i / s and theta_i by a ramp over the
  // pairs that turn between beta_slow and beta_fast times within L0
  // (ComputeYarnRampBounds, yarn): a pair is divided by the factor only when
  // it turns fewer than beta_fast times, so a small L0 or beta_fast can
  // leave every pair as it is.
  bool ramps_by_turns = false;
  // The base the method raises rope_theta to for a sequence length (ntk,
  // dynamic; its exponent r/(r-2) needs a rotary dimension r >= 4); null
  // when the base stays rope_theta.
  double (*raised_base)(const RopeScalingConfig& config,
                        int64_t sequence_length) = nullptr;
  // The first problem of the method's own keys, run after the shared checks
  // (FindRopeConfigProblem); null: none.
  std::optional<RopeConfigProblem> (*check)(const RopeScalingConfig& config) =
      nullptr;
  // Scales `out` (the unscaled frequencies, base rope_theta, attention
  // factor 1) for a checked `config`; null: unscaled.
  void (*frequencies)(const RopeScalingConfig& config, int64_t sequence_length,
                      RopeFrequencies& out) = nullptr;
  // Sets the method's own keys for factor s on `rope`, whose lengths, factor
  // and L0 RopeSettingsAtFactor has set; null: none.
  void (*settings_at_factor)(double factor, RopeScalingConfig& rope) = nullptr;
  // The method's own settings for a checked `config` at `sequence_length`;
  // null: none.
  std::vector<RopeNote> (*notes)(const RopeScalingConfig& config,
                                 int64_t sequence_length) = nullptr;
  // The keys of the model section (rope_scaling.mscale,
  // max_position_embeddings) that set the attention factor of a checked
  // `config` without rope_scaling.attention_factor, when not
  // rope_scaling.factor alone: yarn's mscale / mscale_all_dim, longrope's
  // max_position_embeddings / original_max_position_embeddings (its factor
  // when `factor` is absent); null or empty: rope_scaling.factor.
  std::vector<std::string> (*attention_factor_keys)(
      const RopeScalingConfig& config) = nullptr;
  // The keys the method switches between at L0 (longrope: short_factor up
  // to L0, long_factor past it), so a run whose lengths are all <= L0 never
  // uses the second; none: the method has no such switch.
  std::optional<LengthSwitch> length_switch = std::nullopt;
  // What else a factor other than max_position_embeddings / L0 gets wrong,
  // as the end of the lint's message about it (", and ..."); null: nothing.
  std::string (*factor_disagreement)(int64_t original_length) = nullptr;

  bool scales() const { return factor_use != FactorUse::kNone; }
  bool reads_original_length() const {
    return original_length_from == OriginalLengthFrom::kOriginalKey;
  }
  // L0 is max_position_embeddings and the method scales only sequences
  // longer than it (dynamic): a run at seq_len <= max_position_embeddings
  // trains plain RoPE, so the method cannot extend a model by fine-tuning.
  bool scales_only_past_max_positions() const {
    return original_length_from == OriginalLengthFrom::kMaxPositions;
  }
};

// Every method, in display order (default first, as the report and the
// explorer list them).
const std::vector<RopeMethod>& RopeMethods();
// The types of RopeMethods(), in the same order.
std::vector<RopeType> RopeTypes();
// The record of `type`.
const RopeMethod& RopeMethodOf(RopeType type);
// The notes of a checked `config`'s method at `sequence_length` (the
// record's notes; none when it has no function).
std::vector<RopeNote> RopeNotes(const RopeScalingConfig& config,
                                int64_t sequence_length);

// `base`'s rope_theta, head_dim and partial_rotary_factor with `type`'s
// scaling for a model pre-trained at `base_length` and extended by `factor`:
// max_position_embeddings = factor * base_length rounded (base_length when
// the method's L0 is max_position_embeddings, dynamic), factor and L0 when
// the method reads them, and the record's own keys (llama3: Meta's Llama
// 3.1 bands; longrope: illustrative long factors, see the .cc). Unchecked.
RopeScalingConfig RopeSettingsAtFactor(const RopeScalingConfig& base,
                                       RopeType type, double factor,
                                       int64_t base_length);

// For the checks: a problem with `key`.
std::optional<RopeConfigProblem> RopeProblem(const std::string& key,
                                             const std::string& message);
// For the checks: a problem unless an optional value is absent, or finite
// and >= minimum (`inclusive`) or > minimum.
std::optional<RopeConfigProblem> CheckRopeNumber(
    const std::optional<double>& value, const std::string& key, double minimum,
    bool inclusive);

}  // namespace rotor

#endif  // ROTOR_NN_ROPE_METHODS_H_
