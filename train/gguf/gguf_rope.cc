#include "train/gguf/gguf_rope.h"

#include <cmath>

#include "core/error.h"
#include "core/limits.h"
#include "train/gguf/gguf_tensors.h"

namespace rotor::train {

namespace {

// The factors rope_freqs[i] = theta_i / inv_freq_i that turn llama.cpp's
// unscaled angles into the method's, and the method's attention factor.
void PerDimension(const RopeScalingConfig& rope, int64_t length,
                  const std::string& source, GgufRope& out) {
  const RopeFrequencies scaled = ComputeRopeFrequencies(rope, length);
  const std::vector<double> unscaled = UnscaledInvFreq(rope);
  std::vector<float> factors(unscaled.size());
  for (size_t i = 0; i < unscaled.size(); ++i) {
    factors[i] = ToFloat32(unscaled[i] / scaled.inv_freq[i],
                           StrCat(source, ": rope_freqs.weight[", i,
                                  "] (the unscaled frequency over the "
                                  "scaled one)"));
  }
  out.rope_freqs = std::move(factors);
  if (scaled.attention_factor != 1.0) {
    out.attn_factor = scaled.attention_factor;
  }
  out.how = "rope_freqs";
}

}  // namespace

GgufRope GgufRopeFor(const RopeScalingConfig& rope,
                     std::optional<int64_t> static_length,
                     const std::string& source) {
  ROTOR_CHECK(rope.partial_rotary_factor == 1.0, source,
              ": partial_rotary_factor ", rope.partial_rotary_factor,
              ": llama.cpp's llama architecture rotates whole heads "
              "(partial_rotary_factor 1), so this model cannot be exported "
              "to GGUF");
  ROTOR_CHECK(!static_length || rope.rope_type == RopeType::kDynamic, source,
              ": --rope-static-length ", static_length.value_or(0),
              ": rope_scaling.rope_type is '", RopeTypeName(rope.rope_type),
              "', not dynamic: only dynamic NTK's frequencies change with the "
              "sequence length, so there is nothing to freeze (leave the "
              "flag out)");
  GgufRope out;
  out.how = "no scaling";
  switch (rope.rope_type) {
    case RopeType::kDefault:
      return out;
    case RopeType::kLinear:
      out.scaling_type = "linear";
      out.factor = *rope.factor;
      out.how = "linear keys";
      return out;
    case RopeType::kYarn: {
      const bool llama_cpp_ramp =
          rope.beta_fast == 32.0 && rope.beta_slow == 1.0 && rope.truncate;
      if (!llama_cpp_ramp) break;
      const RopeFrequencies scaled =
          ComputeRopeFrequencies(rope, rope.max_position_embeddings);
      const double s = *rope.factor;
      out.scaling_type = "yarn";
      out.factor = s;
      out.original_context_length =
          rope.original_max_position_embeddings.value_or(
              rope.max_position_embeddings);
      // llama.cpp multiplies by 0.1 ln s + 1 itself (s > 1).
      const double built_in = s > 1.0 ? 0.1 * std::log(s) + 1.0 : 1.0;
      if (scaled.attention_factor != built_in) {
        out.attn_factor = scaled.attention_factor / built_in;
      }
      out.how = "yarn keys";
      return out;
    }
    case RopeType::kDynamic:
      ROTOR_CHECK(
          static_length.has_value(), source,
          ": rope_scaling.rope_type dynamic: llama.cpp has no "
          "dynamic NTK (its frequencies would have to change with "
          "the sequence length). Export the static NTK base that "
          "dynamic uses at the length you will run, e.g. "
          "--rope-static-length ",
          static_cast<int64_t>(*rope.factor * rope.max_position_embeddings),
          " (factor x max_position_embeddings)",
          " (then sequences of that length match rotor's exactly; "
          "shorter ones see a larger base than dynamic would use)");
      ROTOR_CHECK(*static_length <= limits::kMaxPositions, source,
                  ": --rope-static-length ", *static_length,
                  " is beyond rotor's longest sequence of ",
                  limits::kMaxPositions,
                  " positions (2^24): the frozen base would be one of a "
                  "length rotor never runs");
      PerDimension(rope, *static_length, source, out);
      out.how = "rope_freqs (dynamic frozen at " +
                std::to_string(*static_length) + ")";
      return out;
    case RopeType::kNtk:
    case RopeType::kLlama3:
    case RopeType::kLongRope:
      break;
  }
  // ntk, llama3, longrope, and yarn with a ramp llama.cpp cannot set.
  PerDimension(rope, rope.max_position_embeddings, source, out);
  return out;
}

}  // namespace rotor::train
