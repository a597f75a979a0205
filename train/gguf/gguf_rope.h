// How each of rotor's RoPE scaling methods (nn/rope_scaling.h) becomes
// llama.cpp's, so that llama.cpp computes the same angles and attention
// factor (docs/gguf.md has the table).
//
// llama.cpp rotates pair i at position p by
//   angle_i = p * base^(-2i/r) / rope_freqs[i] * (freq_scale, yarn ramp)
// and multiplies cos and sin by its attention factor, where
//   freq_scale = 1 / rope.scaling.factor                 (linear, yarn)
//   yarn:   the ramp between the pair indices of beta_fast = 32 and
//           beta_slow = 1 (the llama architecture reads no other), over
//           rope.scaling.original_context_length, and attention factor
//           (0.1 ln s + 1) * rope.scaling.attn_factor
//   other:  attention factor rope.scaling.attn_factor (default 1)
// So:
//   default            rope.scaling.type none
//   linear             linear, factor s
//   yarn               yarn, factor s, original_context_length L0 and
//                      attn_factor a / (0.1 ln s + 1) (written when not 1),
//                      when beta_fast = 32, beta_slow = 1 and truncate;
//                      otherwise as the per-dimension methods
//   ntk, llama3,       none, with rope_freqs[i] = theta_i / inv_freq_i (the
//   longrope           unscaled frequency over the method's) and
//                      attn_factor a when not 1; longrope's factors are
//                      those of a sequence of max_position_embeddings
//                      (its long_factor when that exceeds L0)
//   dynamic            refused (llama.cpp has no dynamic NTK) unless a
//                      static length L is given: then the ntk base of
//                      length L, as rope_freqs
#ifndef ROTOR_TRAIN_GGUF_GGUF_ROPE_H_
#define ROTOR_TRAIN_GGUF_GGUF_ROPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/rope_scaling.h"

namespace rotor::train {

struct GgufRope {
  std::string scaling_type = "none";  // rope.scaling.type
  std::optional<double> factor;       // rope.scaling.factor
  std::optional<int64_t> original_context_length;
  std::optional<double> attn_factor;  // rope.scaling.attn_factor
  // The rope_freqs.weight tensor (r/2 values), when the method needs one.
  std::optional<std::vector<float>> rope_freqs;
  // In words, for the export's summary line: "yarn keys", "rope_freqs".
  std::string how;
};

// The llama.cpp form of `rope`. `static_length` is the length at which a
// dynamic method is frozen (--rope-static-length). Throws rotor::Error
// naming `source` and the key for dynamic without a static length, for a
// static length with any other method or beyond kMaxPositions (2^24), for
// a partial rotary factor below 1 (llama.cpp's llama architecture rotates
// whole heads), and for a rope_freqs factor float32 cannot hold.
GgufRope GgufRopeFor(const RopeScalingConfig& rope,
                     std::optional<int64_t> static_length,
                     const std::string& source);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_GGUF_GGUF_ROPE_H_
