#include "nn/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/kernels/rope.h"
#include "core/limits.h"

namespace rotor {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct RopeTypeInfo {
  RopeType type;
  const char* name;
};

const std::vector<RopeTypeInfo>& RopeTypeTable() {
  static const std::vector<RopeTypeInfo> table = {
      {RopeType::kDefault, "default"},   {RopeType::kLinear, "linear"},
      {RopeType::kNtk, "ntk"},           {RopeType::kDynamic, "dynamic"},
      {RopeType::kYarn, "yarn"},         {RopeType::kLlama3, "llama3"},
      {RopeType::kLongRope, "longrope"},
  };
  return table;
}

const RopeTypeInfo& InfoFor(RopeType type) {
  for (const RopeTypeInfo& info : RopeTypeTable()) {
    if (info.type == type) return info;
  }
  throw Error("RopeType: invalid enum value");
}

bool FactorRequired(RopeType type) {
  return type == RopeType::kLinear || type == RopeType::kNtk ||
         type == RopeType::kDynamic || type == RopeType::kYarn ||
         type == RopeType::kLlama3;
}

// s; longrope without `factor` uses max_position_embeddings / L0.
double ScaleFactor(const RopeScalingConfig& config) {
  if (config.factor) return *config.factor;
  return static_cast<double>(config.max_position_embeddings) /
         static_cast<double>(OriginalLength(config));
}

// YaRN's magnitude correction g(s, m) = 0.1 m ln s + 1 (1 for s <= 1).
double YarnMscale(double scale, double m) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * m * std::log(scale) + 1.0;
}

std::optional<RopeConfigProblem> Problem(const std::string& key,
                                         const std::string& message) {
  return RopeConfigProblem{key, message};
}

// Checks that an optional value is finite and >= minimum (inclusive) or
// > minimum.
std::optional<RopeConfigProblem> CheckNumber(const std::optional<double>& value,
                                             const std::string& key,
                                             double minimum, bool inclusive) {
  if (!value) return std::nullopt;
  const double v = *value;
  const bool ok = std::isfinite(v) && (inclusive ? v >= minimum : v > minimum);
  if (ok) return std::nullopt;
  return Problem(key, StrCat("must be a finite number ",
                             inclusive ? ">= " : "> ", minimum, ", got ", v));
}

std::optional<RopeConfigProblem> CheckFactorList(
    const std::optional<std::vector<double>>& list, const std::string& key,
    int64_t rotary_dim) {
  if (!list) {
    return Problem(key, StrCat("required for rope_type 'longrope' but missing "
                               "(one factor per frequency, r/2 = ",
                               rotary_dim / 2, ")"));
  }
  if (static_cast<int64_t>(list->size()) != rotary_dim / 2) {
    return Problem(key, StrCat("has ", list->size(),
                               " numbers; longrope needs one per frequency, "
                               "r/2 = ",
                               rotary_dim / 2,
                               " (rotary dimension r = ", rotary_dim, ")"));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const double v = (*list)[i];
    if (!(std::isfinite(v) && v > 0.0)) {
      return Problem(
          key, StrCat("element ", i, " must be a finite number > 0, got ", v));
    }
  }
  return std::nullopt;
}

// NTK-aware and dynamic scaling raise the base to b * s^(r/(r-2)) (dynamic:
// at every length past max_position_embeddings, up to rotor's longest
// sequence). A factor whose base is not finite, or whose frequencies
// b^(-2i/r) underflow float32 (which the RoPE tables are), is refused here,
// where the caller can name the file, not at the first forward pass.
std::optional<RopeConfigProblem> CheckNtkBase(const RopeScalingConfig& config) {
  if ((config.rope_type != RopeType::kNtk &&
       config.rope_type != RopeType::kDynamic) ||
      !config.factor) {
    return std::nullopt;
  }
  const double r = static_cast<double>(RotaryDim(config));
  for (const int64_t length :
       {config.max_position_embeddings, limits::kMaxPositions}) {
    const double base =
        config.rope_type == RopeType::kNtk
            ? config.rope_theta * std::pow(*config.factor, r / (r - 2.0))
            : DynamicNtkBase(config, length);
    const double slowest = std::pow(base, -(r - 2.0) / r);
    if (!(std::isfinite(base) && base > 1.0 &&
          slowest >= std::numeric_limits<float>::min())) {
      return Problem(
          "rope_scaling.factor",
          StrCat(*config.factor, " gives a RoPE base of ", base, " at ", length,
                 " positions, whose frequencies are not finite in float32 "
                 "(give a smaller factor)"));
    }
  }
  return std::nullopt;
}

}  // namespace

int64_t OriginalLength(const RopeScalingConfig& config) {
  return config.original_max_position_embeddings.value_or(
      config.max_position_embeddings);
}

const char* RopeTypeName(RopeType type) { return InfoFor(type).name; }

std::optional<RopeType> RopeTypeFromName(const std::string& name) {
  for (const RopeTypeInfo& info : RopeTypeTable()) {
    if (name == info.name) return info.type;
  }
  return std::nullopt;
}

std::string RopeTypeNames() {
  std::string names;
  for (const RopeTypeInfo& info : RopeTypeTable()) {
    if (!names.empty()) names += ", ";
    names += info.name;
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
  return type == RopeType::kDynamic || type == RopeType::kLongRope;
}

std::optional<RopeConfigProblem> FindRopeConfigProblem(
    const RopeScalingConfig& config) {
  const std::string type_name = RopeTypeName(config.rope_type);
  if (config.head_dim < 1) {
    return Problem("head_dim", StrCat("must be >= 1, got ", config.head_dim));
  }
  if (!(std::isfinite(config.rope_theta) && config.rope_theta > 1.0)) {
    return Problem("rope_theta", StrCat("must be a finite number > 1, got ",
                                        config.rope_theta));
  }
  const double prf = config.partial_rotary_factor;
  if (!(std::isfinite(prf) && prf > 0.0 && prf <= 1.0)) {
    return Problem("partial_rotary_factor",
                   StrCat("must be in (0, 1], got ", prf));
  }
  const int64_t r = RotaryDim(config);
  const std::string r_key = prf == 1.0 ? "head_dim" : "partial_rotary_factor";
  if (r < 2 || r % 2 != 0) {
    return Problem(
        r_key, StrCat("rotary dimension r = int(head_dim ", config.head_dim,
                      " * partial_rotary_factor ", prf, ") = ", r,
                      " must be even and >= 2 (RoPE rotates channel pairs)"));
  }
  if ((config.rope_type == RopeType::kNtk ||
       config.rope_type == RopeType::kDynamic) &&
      r < 4) {
    return Problem(r_key, StrCat("rope_type '", type_name,
                                 "' needs a rotary dimension r >= 4 (its base "
                                 "exponent is r/(r-2)), got r = ",
                                 r));
  }
  if (config.max_position_embeddings < 2) {
    return Problem(
        "max_position_embeddings",
        StrCat("must be >= 2, got ", config.max_position_embeddings));
  }

  if (FactorRequired(config.rope_type) && !config.factor) {
    return Problem(
        "rope_scaling.factor",
        StrCat("required for rope_type '", type_name,
               "' but missing (the context extension ratio s >= 1)"));
  }
  if (auto p = CheckNumber(config.factor, "rope_scaling.factor", 1.0, true)) {
    return p;
  }
  if (auto p = CheckNtkBase(config)) return p;
  if (config.rope_type == RopeType::kLlama3 &&
      !config.original_max_position_embeddings) {
    return Problem("rope_scaling.original_max_position_embeddings",
                   "required for rope_type 'llama3' but missing (the "
                   "pre-training context length, 8192 for Llama 3.1)");
  }
  if (config.original_max_position_embeddings &&
      *config.original_max_position_embeddings < 2) {
    return Problem(
        "rope_scaling.original_max_position_embeddings",
        StrCat("must be >= 2, got ", *config.original_max_position_embeddings));
  }
  if (auto p = CheckNumber(config.attention_factor,
                           "rope_scaling.attention_factor", 0.0, false)) {
    return p;
  }

  switch (config.rope_type) {
    case RopeType::kYarn: {
      if (auto p = CheckNumber(config.beta_fast, "rope_scaling.beta_fast", 0.0,
                               false)) {
        return p;
      }
      if (auto p = CheckNumber(config.beta_slow, "rope_scaling.beta_slow", 0.0,
                               false)) {
        return p;
      }
      if (!(config.beta_fast > config.beta_slow)) {
        return Problem("rope_scaling.beta_fast",
                       StrCat("must be greater than beta_slow (",
                              config.beta_slow, "), got ", config.beta_fast));
      }
      if (auto p =
              CheckNumber(config.mscale, "rope_scaling.mscale", 0.0, true)) {
        return p;
      }
      if (auto p = CheckNumber(config.mscale_all_dim,
                               "rope_scaling.mscale_all_dim", 0.0, true)) {
        return p;
      }
      break;
    }
    case RopeType::kLlama3: {
      if (!config.low_freq_factor) {
        return Problem("rope_scaling.low_freq_factor",
                       "required for rope_type 'llama3' but missing (1 for "
                       "Llama 3.1)");
      }
      if (!config.high_freq_factor) {
        return Problem("rope_scaling.high_freq_factor",
                       "required for rope_type 'llama3' but missing (4 for "
                       "Llama 3.1)");
      }
      if (auto p = CheckNumber(config.low_freq_factor,
                               "rope_scaling.low_freq_factor", 0.0, false)) {
        return p;
      }
      if (!(std::isfinite(*config.high_freq_factor) &&
            *config.high_freq_factor > *config.low_freq_factor)) {
        return Problem("rope_scaling.high_freq_factor",
                       StrCat("must be a finite number greater than "
                              "low_freq_factor (",
                              *config.low_freq_factor, "), got ",
                              *config.high_freq_factor));
      }
      break;
    }
    case RopeType::kLongRope: {
      if (auto p = CheckFactorList(config.short_factor,
                                   "rope_scaling.short_factor", r)) {
        return p;
      }
      if (auto p = CheckFactorList(config.long_factor,
                                   "rope_scaling.long_factor", r)) {
        return p;
      }
      break;
    }
    default:
      break;
  }
  return std::nullopt;
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
    return r * std::log(original / (2.0 * kPi * n)) /
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
  const double r = static_cast<double>(out.rotary_dim);
  const size_t pairs = out.inv_freq.size();
  std::vector<double>& inv = out.inv_freq;

  switch (config.rope_type) {
    case RopeType::kDefault:
      break;
    case RopeType::kLinear:
      for (double& f : inv) f /= *config.factor;
      break;
    case RopeType::kNtk:
    case RopeType::kDynamic: {
      out.base =
          config.rope_type == RopeType::kNtk
              ? config.rope_theta * std::pow(*config.factor, r / (r - 2.0))
              : DynamicNtkBase(config, sequence_length);
      for (size_t i = 0; i < pairs; ++i) {
        inv[i] = 1.0 / std::pow(out.base, 2.0 * i / r);
      }
      break;
    }
    case RopeType::kYarn: {
      const double s = *config.factor;
      YarnRampBounds bounds = ComputeYarnRampBounds(config);
      if (bounds.low == bounds.high) bounds.high += 0.001;
      for (size_t i = 0; i < pairs; ++i) {
        const double pos_freq = std::pow(config.rope_theta, 2.0 * i / r);
        const double extrapolation = 1.0 / pos_freq;        // theta_i
        const double interpolation = 1.0 / (s * pos_freq);  // theta_i / s
        const double ramp = std::clamp(
            (static_cast<double>(i) - bounds.low) / (bounds.high - bounds.low),
            0.0, 1.0);
        const double extrapolation_weight = 1.0 - ramp;
        inv[i] = interpolation * (1.0 - extrapolation_weight) +
                 extrapolation * extrapolation_weight;
      }
      if (config.attention_factor) {
        out.attention_factor = *config.attention_factor;
      } else if (config.mscale.value_or(0.0) != 0.0 &&
                 config.mscale_all_dim.value_or(0.0) != 0.0) {
        out.attention_factor = YarnMscale(s, *config.mscale) /
                               YarnMscale(s, *config.mscale_all_dim);
      } else {
        out.attention_factor = YarnMscale(s, 1.0);
      }
      break;
    }
    case RopeType::kLlama3: {
      const double s = *config.factor;
      const double original =
          static_cast<double>(*config.original_max_position_embeddings);
      const double low = *config.low_freq_factor;
      const double high = *config.high_freq_factor;
      const double low_freq_wavelength = original / low;    // longer: theta/s
      const double high_freq_wavelength = original / high;  // shorter: theta
      for (size_t i = 0; i < pairs; ++i) {
        const double theta = inv[i];
        const double wavelength = 2.0 * kPi / theta;
        if (wavelength < high_freq_wavelength) continue;
        if (wavelength > low_freq_wavelength) {
          inv[i] = theta / s;
        } else {
          const double smooth = (original / wavelength - low) / (high - low);
          inv[i] = (1.0 - smooth) * theta / s + smooth * theta;
        }
      }
      break;
    }
    case RopeType::kLongRope: {
      const int64_t original = OriginalLength(config);
      const std::vector<double>& factors = sequence_length > original
                                               ? *config.long_factor
                                               : *config.short_factor;
      for (size_t i = 0; i < pairs; ++i) {
        inv[i] = 1.0 / (factors[i] * std::pow(config.rope_theta, 2.0 * i / r));
      }
      const double s = ScaleFactor(config);
      if (config.attention_factor) {
        out.attention_factor = *config.attention_factor;
      } else if (s > 1.0) {
        out.attention_factor = std::sqrt(
            1.0 + std::log(s) / std::log(static_cast<double>(original)));
      }
      break;
    }
  }
  return out;
}

}  // namespace rotor
