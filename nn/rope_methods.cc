#include "nn/rope_methods.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace rotor {
namespace {

// A note with its label and value: a row `rotor rope` prints. The
// explorer draws it only once the caller sets its curve_key (and numbers or
// word), as YarnNotes does for the ramp.
RopeNote Row(std::string label, std::string value) {
  RopeNote note;
  note.label = std::move(label);
  note.value = std::move(value);
  return note;
}

// --- default: theta unscaled ---

RopeMethod DefaultMethod() { return {RopeType::kDefault, "default"}; }

// --- linear: inv = theta / s ---

void LinearFrequencies(const RopeScalingConfig& config,
                       int64_t /*sequence_length*/, RopeFrequencies& out) {
  for (double& f : out.inv_freq) f /= *config.factor;
}

RopeMethod LinearMethod() {
  RopeMethod linear{RopeType::kLinear, "linear"};
  linear.factor_use = FactorUse::kRequired;
  linear.original_length_from = OriginalLengthFrom::kMaxPositionsOverFactor;
  linear.stretches_by_factor = true;
  linear.factor_is_length_ratio = true;
  linear.frequencies = LinearFrequencies;
  return linear;
}

// --- ntk and dynamic: inv = base'^(-2i/r) with a raised base ---

// NTK-aware: b' = b * s^(r/(r-2)) at every length.
double NtkBase(const RopeScalingConfig& config, int64_t /*sequence_length*/) {
  const double r = static_cast<double>(RotaryDim(config));
  return config.rope_theta * std::pow(*config.factor, r / (r - 2.0));
}

void RaisedBaseFrequencies(const RopeScalingConfig& config,
                           int64_t sequence_length, RopeFrequencies& out) {
  out.base =
      RopeMethodOf(config.rope_type).raised_base(config, sequence_length);
  const double r = static_cast<double>(out.rotary_dim);
  for (size_t i = 0; i < out.inv_freq.size(); ++i) {
    out.inv_freq[i] = 1.0 / std::pow(out.base, 2.0 * i / r);
  }
}

RopeMethod NtkMethod() {
  RopeMethod ntk{RopeType::kNtk, "ntk"};
  ntk.factor_use = FactorUse::kRequired;
  ntk.original_length_from = OriginalLengthFrom::kMaxPositionsOverFactor;
  ntk.stretches_by_factor = true;
  ntk.factor_is_length_ratio = true;
  ntk.raised_base = NtkBase;
  ntk.frequencies = RaisedBaseFrequencies;
  return ntk;
}

// Dynamic NTK: unscaled up to L0 = max_position_embeddings, NTK with
// s' = s*L/L0 - (s-1) past it (DynamicNtkBase).
RopeMethod DynamicMethod() {
  RopeMethod dynamic{RopeType::kDynamic, "dynamic"};
  dynamic.factor_use = FactorUse::kRequired;
  dynamic.original_length_from = OriginalLengthFrom::kMaxPositions;
  dynamic.depends_on_sequence_length = true;
  dynamic.raised_base = DynamicNtkBase;
  dynamic.frequencies = RaisedBaseFrequencies;
  return dynamic;
}

// --- yarn: theta/s below the ramp, theta above it, attention factor ---

std::optional<RopeConfigProblem> CheckYarn(const RopeScalingConfig& config) {
  if (auto p = CheckRopeNumber(config.beta_fast, "rope_scaling.beta_fast", 0.0,
                               false)) {
    return p;
  }
  if (auto p = CheckRopeNumber(config.beta_slow, "rope_scaling.beta_slow", 0.0,
                               false)) {
    return p;
  }
  if (!(config.beta_fast > config.beta_slow)) {
    return RopeProblem("rope_scaling.beta_fast",
                       StrCat("must be greater than beta_slow (",
                              config.beta_slow, "), got ", config.beta_fast));
  }
  if (auto p =
          CheckRopeNumber(config.mscale, "rope_scaling.mscale", 0.0, true)) {
    return p;
  }
  return CheckRopeNumber(config.mscale_all_dim, "rope_scaling.mscale_all_dim",
                         0.0, true);
}

// YaRN's magnitude correction g(s, m) = 0.1 m ln s + 1 (1 for s <= 1).
double YarnMscale(double scale, double m) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * m * std::log(scale) + 1.0;
}

// attention_factor, else g(s, mscale) / g(s, mscale_all_dim) when both are
// non-zero (DeepSeek), else g(s, 1).
double YarnAttentionFactor(const RopeScalingConfig& config) {
  const double s = *config.factor;
  if (config.attention_factor) return *config.attention_factor;
  if (config.mscale.value_or(0.0) != 0.0 &&
      config.mscale_all_dim.value_or(0.0) != 0.0) {
    return YarnMscale(s, *config.mscale) /
           YarnMscale(s, *config.mscale_all_dim);
  }
  return YarnMscale(s, 1.0);
}

void YarnFrequencies(const RopeScalingConfig& config,
                     int64_t /*sequence_length*/, RopeFrequencies& out) {
  const double s = *config.factor;
  const double r = static_cast<double>(out.rotary_dim);
  YarnRampBounds bounds = ComputeYarnRampBounds(config);
  if (bounds.low == bounds.high) bounds.high += 0.001;
  for (size_t i = 0; i < out.inv_freq.size(); ++i) {
    const double pos_freq = std::pow(config.rope_theta, 2.0 * i / r);
    const double extrapolation = 1.0 / pos_freq;        // theta_i
    const double interpolation = 1.0 / (s * pos_freq);  // theta_i / s
    const double ramp = std::clamp(
        (static_cast<double>(i) - bounds.low) / (bounds.high - bounds.low), 0.0,
        1.0);
    const double extrapolation_weight = 1.0 - ramp;
    out.inv_freq[i] = interpolation * (1.0 - extrapolation_weight) +
                      extrapolation * extrapolation_weight;
  }
  out.attention_factor = YarnAttentionFactor(config);
}

// The keys of YarnAttentionFactor's DeepSeek case; empty: the factor's.
std::vector<std::string> YarnAttentionFactorKeys(
    const RopeScalingConfig& config) {
  if (config.mscale.value_or(0.0) != 0.0 &&
      config.mscale_all_dim.value_or(0.0) != 0.0) {
    return {"rope_scaling.mscale", "rope_scaling.mscale_all_dim"};
  }
  return {};
}

std::vector<RopeNote> YarnNotes(const RopeScalingConfig& config,
                                int64_t /*sequence_length*/) {
  const YarnRampBounds bounds = ComputeYarnRampBounds(config);
  RopeNote ramp =
      Row("ramp (pair indices)",
          StrCat(FullDigits(bounds.low), " .. ", FullDigits(bounds.high)));
  ramp.curve_key = "yarn_ramp";
  ramp.curve_numbers = {bounds.low, bounds.high};
  std::vector<RopeNote> notes = {
      Row("beta_fast, beta_slow", StrCat(FullDigits(config.beta_fast), ", ",
                                         FullDigits(config.beta_slow))),
      Row("truncate", config.truncate ? "true" : "false"), ramp};
  if (config.mscale) notes.push_back(Row("mscale", FullDigits(*config.mscale)));
  if (config.mscale_all_dim) {
    notes.push_back(Row("mscale_all_dim", FullDigits(*config.mscale_all_dim)));
  }
  return notes;
}

std::string YarnFactorDisagreement(int64_t /*original_length*/) {
  return ", and transformers 4.51-4.55 replace a yarn factor by that ratio";
}

RopeMethod YarnMethod() {
  RopeMethod yarn{RopeType::kYarn, "yarn"};
  yarn.factor_use = FactorUse::kRequired;
  yarn.original_length_from = OriginalLengthFrom::kOriginalKey;
  yarn.stretches_by_factor = true;
  yarn.factor_is_length_ratio = true;
  yarn.ramps_by_turns = true;
  yarn.check = CheckYarn;
  yarn.frequencies = YarnFrequencies;
  yarn.notes = YarnNotes;
  yarn.attention_factor_keys = YarnAttentionFactorKeys;
  yarn.factor_disagreement = YarnFactorDisagreement;
  return yarn;
}

// --- llama3: the three bands by wavelength ---

std::optional<RopeConfigProblem> CheckLlama3(const RopeScalingConfig& config) {
  if (!config.low_freq_factor) {
    return RopeProblem("rope_scaling.low_freq_factor",
                       "required for rope_type 'llama3' but missing (1 for "
                       "Llama 3.1)");
  }
  if (!config.high_freq_factor) {
    return RopeProblem("rope_scaling.high_freq_factor",
                       "required for rope_type 'llama3' but missing (4 for "
                       "Llama 3.1)");
  }
  if (auto p = CheckRopeNumber(config.low_freq_factor,
                               "rope_scaling.low_freq_factor", 0.0, false)) {
    return p;
  }
  if (std::isfinite(*config.high_freq_factor) &&
      *config.high_freq_factor > *config.low_freq_factor) {
    return std::nullopt;
  }
  return RopeProblem(
      "rope_scaling.high_freq_factor",
      StrCat("must be a finite number greater than "
             "low_freq_factor (",
             *config.low_freq_factor, "), got ", *config.high_freq_factor));
}

void Llama3Frequencies(const RopeScalingConfig& config,
                       int64_t /*sequence_length*/, RopeFrequencies& out) {
  const double s = *config.factor;
  const double original =
      static_cast<double>(*config.original_max_position_embeddings);
  const double low = *config.low_freq_factor;
  const double high = *config.high_freq_factor;
  const double low_freq_wavelength = original / low;    // longer: theta/s
  const double high_freq_wavelength = original / high;  // shorter: theta
  for (double& inv : out.inv_freq) {
    const double theta = inv;
    const double wavelength = 2.0 * M_PI / theta;
    if (wavelength < high_freq_wavelength) continue;
    if (wavelength > low_freq_wavelength) {
      inv = theta / s;
    } else {
      const double smooth = (original / wavelength - low) / (high - low);
      inv = (1.0 - smooth) * theta / s + smooth * theta;
    }
  }
}

// Meta's Llama 3.1 bands: wavelengths above L0 interpolated, below L0/4
// kept, a smooth blend in between.
void Llama3Settings(double /*factor*/, RopeScalingConfig& rope) {
  rope.low_freq_factor = 1.0;
  rope.high_freq_factor = 4.0;
}

// Wavelengths below L0 / high_freq_factor kept, above L0 / low_freq_factor
// divided by s.
std::vector<RopeNote> Llama3Notes(const RopeScalingConfig& config,
                                  int64_t /*sequence_length*/) {
  const double original =
      static_cast<double>(*config.original_max_position_embeddings);
  const double kept_below = original / *config.high_freq_factor;
  const double divided_above = original / *config.low_freq_factor;
  RopeNote bands = Row("wavelength bands (tokens)",
                       StrCat("< ", FullDigits(kept_below), " unchanged, > ",
                              FullDigits(divided_above), " divided by factor"));
  bands.curve_key = "llama3_bands";
  bands.curve_numbers = {kept_below, divided_above};
  return {Row("low_freq_factor", FullDigits(*config.low_freq_factor)),
          Row("high_freq_factor", FullDigits(*config.high_freq_factor)), bands};
}

RopeMethod Llama3Method() {
  RopeMethod llama3{RopeType::kLlama3, "llama3"};
  llama3.factor_use = FactorUse::kRequired;
  llama3.original_length_from = OriginalLengthFrom::kOriginalKey;
  llama3.original_length_hint =
      "the pre-training context length, 8192 for Llama 3.1";
  llama3.stretches_by_factor = true;
  llama3.check = CheckLlama3;
  llama3.frequencies = Llama3Frequencies;
  llama3.settings_at_factor = Llama3Settings;
  llama3.notes = Llama3Notes;
  return llama3;
}

// --- longrope: inv = theta / lambda_i, short factors up to L0, long beyond ---

std::optional<RopeConfigProblem> CheckFactorList(
    const std::optional<std::vector<double>>& list, const std::string& key,
    int64_t rotary_dim) {
  if (!list) {
    return RopeProblem(key,
                       StrCat("required for rope_type 'longrope' but missing "
                              "(one factor per frequency, r/2 = ",
                              rotary_dim / 2, ")"));
  }
  if (static_cast<int64_t>(list->size()) != rotary_dim / 2) {
    return RopeProblem(key, StrCat("has ", list->size(),
                                   " numbers; longrope needs one per "
                                   "frequency, r/2 = ",
                                   rotary_dim / 2,
                                   " (rotary dimension r = ", rotary_dim, ")"));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const double v = (*list)[i];
    if (!(std::isfinite(v) && v > 0.0)) {
      return RopeProblem(
          key, StrCat("element ", i, " must be a finite number > 0, got ", v));
    }
  }
  return std::nullopt;
}

std::optional<RopeConfigProblem> CheckLongRope(
    const RopeScalingConfig& config) {
  const int64_t r = RotaryDim(config);
  if (auto p = CheckFactorList(config.short_factor, "rope_scaling.short_factor",
                               r)) {
    return p;
  }
  return CheckFactorList(config.long_factor, "rope_scaling.long_factor", r);
}

void LongRopeFrequencies(const RopeScalingConfig& config,
                         int64_t sequence_length, RopeFrequencies& out) {
  const int64_t original = OriginalLength(config);
  const std::vector<double>& factors =
      sequence_length > original ? *config.long_factor : *config.short_factor;
  const double r = static_cast<double>(out.rotary_dim);
  for (size_t i = 0; i < out.inv_freq.size(); ++i) {
    out.inv_freq[i] =
        1.0 / (factors[i] * std::pow(config.rope_theta, 2.0 * i / r));
  }
  // s; without `factor`, max_position_embeddings / L0.
  const double s = config.factor.value_or(
      static_cast<double>(config.max_position_embeddings) /
      static_cast<double>(original));
  if (config.attention_factor) {
    out.attention_factor = *config.attention_factor;
  } else if (s > 1.0) {
    out.attention_factor =
        std::sqrt(1.0 + std::log(s) / std::log(static_cast<double>(original)));
  }
}

// LongRoPE searches one factor per pair; rotor has no search, so the long
// factors are an illustrative smooth rise: 1 up to YaRN's lower ramp bound
// (pairs that turn >= 32 times within L0), then a raised cosine up to s at
// the slowest pair. Short factors 1: sequences up to L0 run exactly as the
// base model.
void LongRopeSettings(double factor, RopeScalingConfig& rope) {
  const int64_t pairs = RotaryDim(rope) / 2;
  const double low = ComputeYarnRampBounds(rope).low;
  std::vector<double> factors;
  for (int64_t i = 0; i < pairs; ++i) {
    const double t = pairs - 1 > low
                         ? std::clamp((i - low) / (pairs - 1 - low), 0.0, 1.0)
                         : 1.0;
    factors.push_back(1.0 + (factor - 1.0) * 0.5 * (1.0 - std::cos(M_PI * t)));
  }
  rope.short_factor = std::vector<double>(factors.size(), 1.0);
  rope.long_factor = std::move(factors);
}

// The long factors beyond L0, the short ones up to it.
std::vector<RopeNote> LongRopeNotes(const RopeScalingConfig& config,
                                    int64_t sequence_length) {
  const bool long_factors = sequence_length > OriginalLength(config);
  RopeNote in_use =
      Row("factors in use", long_factors ? "long_factor (length > original)"
                                         : "short_factor (length <= original)");
  in_use.curve_key = "longrope_factors";
  in_use.curve_word = long_factors ? "long" : "short";
  return {in_use};
}

// Without `factor`, s is max_position_embeddings / L0 (as transformers'
// _compute_longrope_parameters derives it), so those two keys set the
// attention factor.
std::vector<std::string> LongRopeAttentionFactorKeys(
    const RopeScalingConfig& config) {
  if (config.factor) return {};
  return {"max_position_embeddings",
          "rope_scaling.original_max_position_embeddings"};
}

std::string LongRopeFactorDisagreement(int64_t original_length) {
  return StrCat(", and the attention factor sqrt(1 + ln s / ln ",
                original_length, ") is computed from the factor");
}

RopeMethod LongRopeMethod() {
  RopeMethod longrope{RopeType::kLongRope, "longrope"};
  longrope.factor_use = FactorUse::kOptional;
  longrope.original_length_from = OriginalLengthFrom::kOriginalKey;
  longrope.depends_on_sequence_length = true;
  longrope.factor_is_length_ratio = true;
  longrope.check = CheckLongRope;
  longrope.frequencies = LongRopeFrequencies;
  longrope.settings_at_factor = LongRopeSettings;
  longrope.notes = LongRopeNotes;
  longrope.attention_factor_keys = LongRopeAttentionFactorKeys;
  longrope.length_switch =
      LengthSwitch{"rope_scaling.short_factor", "rope_scaling.long_factor"};
  longrope.factor_disagreement = LongRopeFactorDisagreement;
  return longrope;
}

}  // namespace

const std::vector<RopeMethod>& RopeMethods() {
  static const std::vector<RopeMethod> methods = {
      DefaultMethod(), LinearMethod(), NtkMethod(),     DynamicMethod(),
      YarnMethod(),    Llama3Method(), LongRopeMethod()};
  return methods;
}

std::vector<RopeType> RopeTypes() {
  std::vector<RopeType> types;
  for (const RopeMethod& method : RopeMethods()) types.push_back(method.type);
  return types;
}

const RopeMethod& RopeMethodOf(RopeType type) {
  for (const RopeMethod& method : RopeMethods()) {
    if (method.type == type) return method;
  }
  throw Error("RopeType: invalid enum value");
}

std::vector<RopeNote> RopeNotes(const RopeScalingConfig& config,
                                int64_t sequence_length) {
  const RopeMethod& method = RopeMethodOf(config.rope_type);
  if (!method.notes) return {};
  return method.notes(config, sequence_length);
}

RopeScalingConfig RopeSettingsAtFactor(const RopeScalingConfig& base,
                                       RopeType type, double factor,
                                       int64_t base_length) {
  const RopeMethod& method = RopeMethodOf(type);
  RopeScalingConfig rope;
  rope.rope_theta = base.rope_theta;
  rope.head_dim = base.head_dim;
  rope.partial_rotary_factor = base.partial_rotary_factor;
  rope.rope_type = type;
  rope.max_position_embeddings =
      method.original_length_from == OriginalLengthFrom::kMaxPositions
          ? base_length
          : static_cast<int64_t>(std::llround(factor * base_length));
  if (!method.scales()) return rope;
  rope.factor = factor;
  if (method.reads_original_length()) {
    rope.original_max_position_embeddings = base_length;
  }
  if (method.settings_at_factor) method.settings_at_factor(factor, rope);
  return rope;
}

std::optional<RopeConfigProblem> RopeProblem(const std::string& key,
                                             const std::string& message) {
  return RopeConfigProblem{key, message};
}

std::optional<RopeConfigProblem> CheckRopeNumber(
    const std::optional<double>& value, const std::string& key, double minimum,
    bool inclusive) {
  if (!value) return std::nullopt;
  const double v = *value;
  const bool ok = std::isfinite(v) && (inclusive ? v >= minimum : v > minimum);
  if (ok) return std::nullopt;
  return RopeProblem(
      key, StrCat("must be a finite number ", inclusive ? ">= " : "> ", minimum,
                  ", got ", v));
}

}  // namespace rotor
