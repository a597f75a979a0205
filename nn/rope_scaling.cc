#include "nn/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/kernels/rope.h"
#include "core/limits.h"
#include "nn/rope_methods.h"

namespace rotor {
namespace {

// head_dim, rope_theta, partial_rotary_factor and the rotary dimension r
// they give (even, >= 2; >= 4 for a method that raises the base).
std::optional<RopeConfigProblem> CheckRotaryDim(const RopeScalingConfig& config,
                                                const RopeMethod& method) {
  if (config.head_dim < 1) {
    return RopeProblem("head_dim",
                       StrCat("must be >= 1, got ", config.head_dim));
  }
  if (!(std::isfinite(config.rope_theta) && config.rope_theta > 1.0)) {
    return RopeProblem("rope_theta", StrCat("must be a finite number > 1, got ",
                                            config.rope_theta));
  }
  const double prf = config.partial_rotary_factor;
  if (!(std::isfinite(prf) && prf > 0.0 && prf <= 1.0)) {
    return RopeProblem("partial_rotary_factor",
                       StrCat("must be in (0, 1], got ", prf));
  }
  const int64_t r = RotaryDim(config);
  const std::string r_key = prf == 1.0 ? "head_dim" : "partial_rotary_factor";
  if (r < 2 || r % 2 != 0) {
    return RopeProblem(
        r_key, StrCat("rotary dimension r = int(head_dim ", config.head_dim,
                      " * partial_rotary_factor ", prf, ") = ", r,
                      " must be even and >= 2 (RoPE rotates channel pairs)"));
  }
  if (method.raised_base && r < 4) {
    return RopeProblem(r_key, StrCat("rope_type '", method.name,
                                     "' needs a rotary dimension r >= 4 (its "
                                     "base exponent is r/(r-2)), got r = ",
                                     r));
  }
  return std::nullopt;
}

// A method that raises the base does so to b * s^(r/(r-2)) (dynamic: at
// every length past max_position_embeddings, up to rotor's longest
// sequence). A factor whose base is not finite, or whose frequencies
// b^(-2i/r) underflow float32 (which the RoPE tables are), is refused here,
// where the caller can name the file, not at the first forward pass.
std::optional<RopeConfigProblem> CheckRaisedBase(
    const RopeScalingConfig& config, const RopeMethod& method) {
  if (!method.raised_base || !config.factor) return std::nullopt;
  const double r = static_cast<double>(RotaryDim(config));
  for (const int64_t length :
       {config.max_position_embeddings, limits::kMaxPositions}) {
    const double base = method.raised_base(config, length);
    const double slowest = std::pow(base, -(r - 2.0) / r);
    if (!(std::isfinite(base) && base > 1.0 &&
          slowest >= std::numeric_limits<float>::min())) {
      return RopeProblem(
          "rope_scaling.factor",
          StrCat(*config.factor, " gives a RoPE base of ", base, " at ", length,
                 " positions, whose frequencies are not finite in float32 "
                 "(give a smaller factor)"));
    }
  }
  return std::nullopt;
}

std::optional<RopeConfigProblem> CheckFactor(const RopeScalingConfig& config,
                                             const RopeMethod& method) {
  if (method.factor_use == FactorUse::kRequired && !config.factor) {
    return RopeProblem(
        "rope_scaling.factor",
        StrCat("required for rope_type '", method.name,
               "' but missing (the context extension ratio s >= 1)"));
  }
  if (auto p =
          CheckRopeNumber(config.factor, "rope_scaling.factor", 1.0, true)) {
    return p;
  }
  return CheckRaisedBase(config, method);
}

std::optional<RopeConfigProblem> CheckOriginalLength(
    const RopeScalingConfig& config, const RopeMethod& method) {
  const std::optional<int64_t>& original =
      config.original_max_position_embeddings;
  if (method.original_length_hint && !original) {
    return RopeProblem(
        "rope_scaling.original_max_position_embeddings",
        StrCat("required for rope_type '", method.name, "' but missing (",
               method.original_length_hint, ")"));
  }
  if (original && *original < 2) {
    return RopeProblem("rope_scaling.original_max_position_embeddings",
                       StrCat("must be >= 2, got ", *original));
  }
  return std::nullopt;
}

}  // namespace

int64_t OriginalLength(const RopeScalingConfig& config) {
  return config.original_max_position_embeddings.value_or(
      config.max_position_embeddings);
}

const char* RopeTypeName(RopeType type) { return RopeMethodOf(type).name; }

std::optional<RopeType> RopeTypeFromName(const std::string& name) {
  for (const RopeMethod& method : RopeMethods()) {
    if (name == method.name) return method.type;
  }
  return std::nullopt;
}

std::string RopeTypeNames() {
  std::string names;
  for (const RopeMethod& method : RopeMethods()) {
    if (!names.empty()) names += ", ";
    names += method.name;
  }
  return names;
}

namespace {

// The names of the rope_scaling rows that apply to one method.
struct MethodKeys {
  RopeType type;
  std::vector<std::string> keys;
  template <typename T, typename Check>
  void operator()(const Key&, T&, const Check&) {}
  template <typename T, typename Check>
  void operator()(const Key& key, T&, const Check&, const ForMethods& only) {
    if (only.Has(type)) keys.push_back(key.name);
  }
};

}  // namespace

std::vector<std::string> RopeScalingKeys(RopeType type) {
  return VisitedOnDefaults<RopeScalingConfig>(MethodKeys{type, {}}).keys;
}

bool ForMethods::Has(RopeType type) const {
  return std::find(methods.begin(), methods.end(), type) != methods.end();
}

std::string RefuseRopeType(const std::string& given) {
  return StrCat("unknown rope_type '", Excerpt(given),
                "' (known: ", RopeTypeNames(), ")");
}

int64_t RotaryDim(const RopeScalingConfig& config) {
  return kernels::TruncatedRotaryDim(config.head_dim,
                                     config.partial_rotary_factor);
}

bool RopeDependsOnSequenceLength(RopeType type) {
  return RopeMethodOf(type).depends_on_sequence_length;
}

std::optional<RopeConfigProblem> FindRopeConfigProblem(
    const RopeScalingConfig& config) {
  const RopeMethod& method = RopeMethodOf(config.rope_type);
  if (auto p = CheckRotaryDim(config, method)) return p;
  if (config.max_position_embeddings < 2) {
    return RopeProblem(
        "max_position_embeddings",
        StrCat("must be >= 2, got ", config.max_position_embeddings));
  }
  if (auto p = CheckFactor(config, method)) return p;
  if (auto p = CheckOriginalLength(config, method)) return p;
  if (auto p = CheckRopeNumber(config.attention_factor,
                               "rope_scaling.attention_factor", 0.0, false)) {
    return p;
  }
  return method.check ? method.check(config) : std::nullopt;
}

std::vector<double> UnscaledInvFreq(const RopeScalingConfig& config) {
  const int64_t r = RotaryDim(config);
  std::vector<double> inv_freq(
      static_cast<size_t>(std::max<int64_t>(r / 2, 0)));
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq[i] = 1.0 / std::pow(config.rope_theta, 2.0 * i / r);
  }
  return inv_freq;
}

double DynamicNtkBase(const RopeScalingConfig& config,
                      int64_t sequence_length) {
  const double r = static_cast<double>(RotaryDim(config));
  const double s = config.factor.value_or(1.0);
  const double original = static_cast<double>(config.max_position_embeddings);
  const double length =
      std::max(static_cast<double>(sequence_length), original);
  return config.rope_theta *
         std::pow(s * length / original - (s - 1.0), r / (r - 2.0));
}

YarnRampBounds ComputeYarnRampBounds(const RopeScalingConfig& config) {
  const double r = static_cast<double>(RotaryDim(config));
  const double original = static_cast<double>(OriginalLength(config));
  // The pair index whose wavelength 2 pi b^(2i/r) fits n times into L0.
  auto correction_dim = [&](double n) {
    return r * std::log(original / (2.0 * M_PI * n)) /
           (2.0 * std::log(config.rope_theta));
  };
  double low = correction_dim(config.beta_fast);
  double high = correction_dim(config.beta_slow);
  if (config.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {std::max(low, 0.0), std::min(high, r - 1.0)};
}

RopeFrequencies ComputeRopeFrequencies(const RopeScalingConfig& config,
                                       int64_t sequence_length) {
  if (auto problem = FindRopeConfigProblem(config)) {
    throw Error(StrCat("RoPE config: ", problem->key, ": ", problem->message));
  }
  ROTOR_CHECK(sequence_length >= 1,
              "ComputeRopeFrequencies: sequence_length must be >= 1, got ",
              sequence_length);
  RopeFrequencies out;
  out.rope_type = config.rope_type;
  out.head_dim = config.head_dim;
  out.rotary_dim = RotaryDim(config);
  out.base = config.rope_theta;
  out.inv_freq = UnscaledInvFreq(config);
  const RopeMethod& method = RopeMethodOf(config.rope_type);
  if (method.frequencies) method.frequencies(config, sequence_length, out);
  return out;
}

}  // namespace rotor
