// RoPE frequencies and context-extension scaling, with Hugging Face's
// parameter names (`rope_scaling` / `rope_parameters` in config.json).
//
// Rotary position embedding rotates channel pair i of a query or key at
// position p by the angle p * inv_freq[i]. The unscaled frequencies are
//   theta_i = base^(-2i/r),  i = 0 .. r/2 - 1,
// with r = int(head_dim * partial_rotary_factor) the rotary dimension (the
// first r channels rotate, the rest pass through). A scaling method changes
// inv_freq so that positions beyond the training length L0 map to angles the
// model has seen, and may scale cos and sin by an attention factor a (so the
// logits q.k scale by a^2). Methods (s = factor, see
// docs/context-extension.md):
//   default   inv = theta                                        a = 1
//   linear    inv = theta / s            (position interpolation) a = 1
//   ntk       base' = base * s^(r/(r-2)), inv = base'^(-2i/r)     a = 1
//   dynamic   like ntk, with s' = s*L/L0 - (s-1) for the sequence
//             length L > L0 (unscaled for L <= L0)               a = 1
//   yarn      theta/s for low frequencies, theta for high ones, a linear
//             ramp between pair indices corr(beta_fast) and corr(beta_slow)
//                                                  a = 0.1 ln s + 1
//   llama3    the same three bands, chosen by wavelength against
//             L0/low_freq_factor and L0/high_freq_factor         a = 1
//   longrope  inv = theta / lambda_i with per-pair factors lambda (short_factor
//             up to L0, long_factor beyond)    a = sqrt(1 + ln s / ln L0)
// Everything is computed in double; no YAML here (train/config/model_config.h
// parses configs, through the table of rope_scaling's keys at the end). The
// result feeds the RoPE op as RopeTable(inv_freq, attention_factor)
// (core/kernels/rope.h).
#ifndef ROTOR_NN_ROPE_SCALING_H_
#define ROTOR_NN_ROPE_SCALING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fields.h"
#include "core/limits.h"

namespace rotor {

enum class RopeType {
  kDefault,
  kLinear,
  kNtk,
  kDynamic,
  kYarn,
  kLlama3,
  kLongRope
};

// "default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope".
const char* RopeTypeName(RopeType type);
// The inverse of RopeTypeName; nullopt for an unknown name.
std::optional<RopeType> RopeTypeFromName(const std::string& name);
// All names, for error messages: "default, linear, ...".
std::string RopeTypeNames();

// The `rope_scaling` keys (besides rope_type) that apply to `type`, in HF's
// spelling, e.g. {"factor"} for linear: the rows of the table below
// (VisitFields) whose ForMethods lists `type`. Other keys are an error.
std::vector<std::string> RopeScalingKeys(RopeType type);

// RoPE settings of a model. Optional fields are the keys a config may omit;
// see each field for what an absent value means.
struct RopeScalingConfig {
  RopeType rope_type = RopeType::kDefault;
  double rope_theta = 10000.0;          // base b
  int64_t head_dim = 0;                 // D
  double partial_rotary_factor = 1.0;   // r = int(D * partial_rotary_factor)
  int64_t max_position_embeddings = 0;  // the table size; L0 for dynamic

  // s. Required for linear, ntk, dynamic, yarn, llama3; longrope defaults it to
  // max_position_embeddings / original_max_position_embeddings.
  std::optional<double> factor;
  // L0 for yarn, llama3 and longrope (required for llama3; yarn and longrope
  // default it to max_position_embeddings).
  std::optional<int64_t> original_max_position_embeddings;
  // yarn, longrope: overrides the computed attention factor.
  std::optional<double> attention_factor;
  // yarn: the ramp runs between the pair indices whose wavelength fits
  // beta_fast and beta_slow times into L0.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  // yarn (DeepSeek): a = g(s, mscale) / g(s, mscale_all_dim), used only when
  // both are present and non-zero (as in HF; a lone mscale is ignored).
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  // yarn: floor/ceil the ramp bounds (false keeps them fractional; gpt-oss).
  bool truncate = true;
  // llama3: the wavelength bands are L0/low_freq_factor and
  // L0/high_freq_factor.
  std::optional<double> low_freq_factor;
  std::optional<double> high_freq_factor;
  // longrope: one factor per frequency (r/2 each).
  std::optional<std::vector<double>> short_factor;
  std::optional<std::vector<double>> long_factor;
};

// A problem with a config: the key it concerns, relative to the model section
// ("head_dim", "rope_scaling.factor", ...), and what is wrong.
struct RopeConfigProblem {
  std::string key;
  std::string message;
};

// The first problem with `config` (missing required key, factor < 1, odd or
// zero rotary dimension, wrong factor-list length, ...), or nullopt if it is
// usable. The config parser maps the key to a file position.
std::optional<RopeConfigProblem> FindRopeConfigProblem(
    const RopeScalingConfig& config);

// r = int(head_dim * partial_rotary_factor), truncating like Python's int()
// (kernels::TruncatedRotaryDim); unchecked, FindRopeConfigProblem reports a
// bad r.
int64_t RotaryDim(const RopeScalingConfig& config);

// What the rotary tables are built from.
struct RopeFrequencies {
  RopeType rope_type = RopeType::kDefault;
  int64_t head_dim = 0;
  int64_t rotary_dim = 0;         // r
  std::vector<double> inv_freq;   // r/2 angles per position step
  double attention_factor = 1.0;  // multiplies cos and sin
  double base = 0.0;              // the base in force (changed by ntk, dynamic)
};

// The unscaled frequencies theta_i = rope_theta^(-2i/r) of `config`.
std::vector<double> UnscaledInvFreq(const RopeScalingConfig& config);

// L0 of yarn, llama3 and longrope: original_max_position_embeddings, or
// max_position_embeddings when it is absent (as HF defaults it).
int64_t OriginalLength(const RopeScalingConfig& config);

// True for the methods whose frequencies depend on the sequence length
// (dynamic, longrope).
bool RopeDependsOnSequenceLength(RopeType type);

// The frequencies and attention factor for a sequence of `sequence_length`
// tokens. Throws rotor::Error if FindRopeConfigProblem finds a problem or
// sequence_length < 1.
//
// Only dynamic and longrope read sequence_length, and for them it must be
// FIXED PER SEQUENCE: pass the sequence's final length (prompt + planned new
// tokens, or the training length), build the tables once, and use them for the
// prefill and every decoded token. Keys enter a KV cache already rotated, so
// recomputing the frequencies as the sequence grows past L0 would mix keys
// rotated with different bases (the flaw of HF's dynamic NTK,
// huggingface/transformers#25104) or different LongRoPE factors.
RopeFrequencies ComputeRopeFrequencies(const RopeScalingConfig& config,
                                       int64_t sequence_length);

// The dynamic-NTK base for a sequence of `sequence_length` tokens:
// clang-format off
//   b' = b * (s * L / L0 - (s - 1))^(r / (r - 2)),  L = max(sequence_length, L0),
// clang-format on
// L0 = max_position_embeddings. Equals b for sequences up to L0.
double DynamicNtkBase(const RopeScalingConfig& config, int64_t sequence_length);

// YaRN's ramp bounds (pair indices) before the low == high guard:
//   corr(n) = r * ln(L0 / (2 pi n)) / (2 ln b),
//   low = corr(beta_fast), high = corr(beta_slow), floored/ceiled if truncate,
//   then clamped to [0, r - 1].
struct YarnRampBounds {
  double low = 0.0;
  double high = 0.0;
};
YarnRampBounds ComputeYarnRampBounds(const RopeScalingConfig& config);

// --- rope_scaling's keys (core/fields.h), beside the struct ---

// The methods a rope_scaling row applies to, as model rows carry OnlyFor:
// the readers refuse the key for another method ("does not apply to
// rope_type 'linear' (its keys: factor)"), the writers leave it out, and
// a method's rows are its keys (RopeScalingKeys), as transformers lists
// each method's required and optional keys.
struct ForMethods {
  std::vector<RopeType> methods;
  bool Has(RopeType type) const;
};

// The method of a section a visitor is in (rope_scaling): set at the
// section's method row (rope_type, its first), then asked at each row that
// carries ForMethods. What the readers and writers share of the section.
class SectionMethod {
 public:
  void Set(const Key& row, RopeType type) {
    row_ = row.name;
    type_ = type;
  }
  // Whether the ForMethods row `row` applies to the method; a row before
  // any method row is a mistake in the table.
  bool Applies(const Key& row, const ForMethods& only) const {
    ROTOR_CHECK(type_.has_value(), "the row ", row.name,
                " carries ForMethods, but its section has no method row "
                "(rope_type) before it");
    return only.Has(*type_);
  }
  // A section whose method has no keys is written as null (rope_scaling
  // for default RoPE, as HF writes it).
  bool WrittenAsNull() const {
    return type_.has_value() && RopeScalingKeys(*type_).empty();
  }
  RopeType type() const { return type_.value_or(RopeType::kDefault); }
  const char* row() const { return row_; }  // the method row's name

 private:
  const char* row_ = "";
  std::optional<RopeType> type_;
};

// What the readers say of a rope_type that names no method: "unknown
// rope_type 'X' (known: default, linear, ...)".
std::string RefuseRopeType(const std::string& given);

// The keys of rope_scaling, in HF's spelling: rope_type (the method, read
// first), then each method's keys.
template <typename Visitor>
void VisitFields(Visitor& v, RopeScalingConfig& r) {
  constexpr RopeType kYarn = RopeType::kYarn;
  constexpr RopeType kLlama3 = RopeType::kLlama3;
  constexpr RopeType kLongRope = RopeType::kLongRope;
  v(Key{"rope_type",
        "the method (default, linear, ntk, dynamic, yarn, "
        "llama3, longrope)",
        "type"},
    r.rope_type,
    field::Choice<RopeType>{RopeTypeName, RopeTypeFromName, RefuseRopeType});
  v(Key{"factor", "s: the new context over the original"}, r.factor,
    field::AnyReal{},
    ForMethods{{RopeType::kLinear, RopeType::kNtk, RopeType::kDynamic, kYarn,
                kLlama3, kLongRope}});
  v(Key{"original_max_position_embeddings",
        "L0: the length the model was pre-trained at"},
    r.original_max_position_embeddings, field::Int{1, limits::kMaxPositions},
    ForMethods{{kYarn, kLlama3, kLongRope}});
  v(Key{"attention_factor", "yarn, longrope: the attention temperature"},
    r.attention_factor, field::AnyReal{}, ForMethods{{kYarn, kLongRope}});
  v(Key{"beta_fast", "yarn: rotations within L0 above which pairs stay"},
    r.beta_fast, field::AnyReal{}, ForMethods{{kYarn}});
  v(Key{"beta_slow", "yarn: rotations within L0 below which pairs scale"},
    r.beta_slow, field::AnyReal{}, ForMethods{{kYarn}});
  v(Key{"mscale", "yarn (DeepSeek): attention factor numerator"}, r.mscale,
    field::AnyReal{}, ForMethods{{kYarn}});
  v(Key{"mscale_all_dim", "yarn (DeepSeek): attention factor denominator"},
    r.mscale_all_dim, field::AnyReal{}, ForMethods{{kYarn}});
  v(Key{"truncate", "yarn: whole-pair ramp bounds (false: gpt-oss)"},
    r.truncate, field::Flag{}, ForMethods{{kYarn}});
  v(Key{"low_freq_factor", "llama3: L0 / the longest kept wavelength"},
    r.low_freq_factor, field::AnyReal{}, ForMethods{{kLlama3}});
  v(Key{"high_freq_factor", "llama3: L0 / the shortest scaled wavelength"},
    r.high_freq_factor, field::AnyReal{}, ForMethods{{kLlama3}});
  v(Key{"short_factor", "longrope: per-pair factors up to L0"}, r.short_factor,
    field::Reals{}, ForMethods{{kLongRope}});
  v(Key{"long_factor", "longrope: per-pair factors beyond L0"}, r.long_factor,
    field::Reals{}, ForMethods{{kLongRope}});
}

}  // namespace rotor

#endif  // ROTOR_NN_ROPE_SCALING_H_
