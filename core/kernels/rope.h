// Rotary position embedding (RoPE, Su et al. 2021, arXiv 2104.09864):
// kernels, the cos/sin table and the raw-pointer API. The differentiable op
// on tensors is in core/ops/rope.h; docs/rope.md explains the math.
//
// RoPE rotates pairs of channels of every query and key row by an angle that
// grows with the token's position p. Pair i (i = 0 .. r/2-1) turns by
//   theta_i(p) = p * inv_freq[i],       inv_freq[i] = base^(-2i/r) by default,
// and with a = attention_factor (1 unless YaRN/LongRoPE scaling asks for it):
//   y_a = a (x_a cos theta - x_b sin theta)
//   y_b = a (x_b cos theta + x_a sin theta)
// Which channels form pair i depends on the layout (RopeLayout). Only the
// first r = rotary_dim channels of each row are rotated ("partial rotary");
// channels [r, head_dim) pass through unchanged.
//
// Data layout: queries and keys are [batch, heads, seq, head_dim] arrays,
// contiguous along head_dim. The other three dimensions have arbitrary
// strides (RopeStrides), so the q and k views of a fused qkv projection
// ([batch, seq, heads, head_dim] in memory) are read and written in place.
// Queries and keys may have different head counts (grouped-query attention).
//
// Backward: the rotation is orthogonal up to the factor a, so
//   dx = a R(theta)^T dy = a R(-theta) dy,
// the same kernel with sin negated. Positions are not differentiable.
#ifndef ROTOR_CORE_KERNELS_ROPE_H_
#define ROTOR_CORE_KERNELS_ROPE_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace rotor {
namespace kernels {

// Which channels of a row form the rotated pair of frequency i (r = rotary
// dim). The two are the same rotation up to a fixed permutation of channels:
// split-half(x[perm]) == interleaved(x)[perm], perm = [0, 2, 4, .., 1, 3, ..].
enum class RopeLayout {
  // Pairs (i, i + r/2): GPT-NeoX and Hugging Face Llama, Mistral, Qwen, Phi
  // (`q * cos + rotate_half(q) * sin`). ggml's NEOX mode.
  kSplitHalf,
  // Pairs (2i, 2i + 1): GPT-J and Meta's reference Llama (complex multiply),
  // DeepSeek, GLM. ggml's NORMAL mode.
  kInterleaved,
};

// "split-half" or "interleaved".
const char* RopeLayoutName(RopeLayout layout);

// r = int(head_dim * partial_rotary_factor) (Python's truncation, as Hugging
// Face), unchecked: for validators that report a bad r themselves.
inline int64_t TruncatedRotaryDim(int64_t head_dim,
                                  double partial_rotary_factor) {
  return static_cast<int64_t>(static_cast<double>(head_dim) *
                              partial_rotary_factor);
}

// TruncatedRotaryDim, checked: throws unless 0 < factor <= 1 and r is even
// and positive.
int64_t RopeRotaryDim(int64_t head_dim, double partial_rotary_factor);

// Immutable cos/sin rows for positions [0, num_positions). Row p holds
// rotary_dim floats:
//   [a cos(p inv_freq[0]), .., a cos(p inv_freq[r/2-1]),
//    a sin(p inv_freq[0]), .., a sin(p inv_freq[r/2-1])]
// computed in double and rounded to float once.
class RopeRows {
 public:
  RopeRows(int64_t rotary_dim, int64_t num_positions,
           std::vector<float> values);
  int64_t rotary_dim() const { return rotary_dim_; }
  int64_t num_positions() const { return num_positions_; }
  // Row of `position` (unchecked: 0 <= position < num_positions()).
  const float* row(int64_t position) const {
    return values_.data() + position * rotary_dim_;
  }

 private:
  int64_t rotary_dim_;
  int64_t num_positions_;
  std::vector<float> values_;
};

// The cos/sin table of one RoPE configuration: the frequencies and the
// attention factor, plus the rows computed so far. The table grows on demand
// (Rows(n) extends it geometrically when a position passes its end), so there
// is no fixed maximum length below kMaxRopePositions, and Rebuild() replaces
// the frequencies (RoPE
// scaling methods such as dynamic NTK change them with the length).
//
// The rows are handed out as shared immutable snapshots: growing or
// rebuilding the table makes a new snapshot, and a snapshot already handed
// out (e.g. kept for a backward pass) stays unchanged. Not thread-safe:
// call Rows() and Rebuild() from one thread at a time, like a std::vector.
// Positions a table may cover: 2^28 (far beyond any context a CPU model
// trains on; the table alone would take rotary_dim GiB).
inline constexpr int64_t kMaxRopePositions = int64_t{1} << 28;

class RopeTable {
 public:
  // inv_freq: the r/2 angular frequencies (radians per position step), so
  // rotary_dim() = 2 * inv_freq.size(); attention_factor multiplies cos and
  // sin. This is the interface for RoPE scaling methods (linear, dynamic NTK,
  // YaRN, LongRoPE, llama3), which compute both. Throws if inv_freq is empty
  // or not finite, or if attention_factor is not a finite positive number.
  explicit RopeTable(std::vector<double> inv_freq,
                     double attention_factor = 1.0);

  // The unscaled frequencies inv_freq[i] = 1 / base^(2i / rotary_dim),
  // i = 0 .. rotary_dim/2 - 1, in double. Throws if rotary_dim is odd or not
  // positive, or base is not a finite positive number.
  static std::vector<double> DefaultInvFreq(int64_t rotary_dim, double base);
  // RopeTable(DefaultInvFreq(rotary_dim, base), 1.0): plain RoPE.
  static RopeTable Default(int64_t rotary_dim, double base);

  // Replaces the frequencies and attention factor (same checks as the
  // constructor; rotary_dim may change). Rows are recomputed on the next
  // Rows() call; if nothing changed the current rows are kept.
  void Rebuild(std::vector<double> inv_freq, double attention_factor = 1.0);

  int64_t rotary_dim() const {
    return 2 * static_cast<int64_t>(inv_freq_.size());
  }
  const std::vector<double>& inv_freq() const { return inv_freq_; }
  double attention_factor() const { return attention_factor_; }
  // Positions computed so far (0 before the first Rows() call).
  int64_t num_positions() const;

  // A snapshot covering at least positions [0, num_positions), extending the
  // table (to at least twice its size) if it is shorter. Throws rotor::Error
  // for num_positions above kMaxRopePositions or a table that does not fit
  // in memory.
  std::shared_ptr<const RopeRows> Rows(int64_t num_positions);

 private:
  std::vector<double> inv_freq_;
  double attention_factor_;
  std::shared_ptr<const RopeRows> rows_;
};

// Strides (in floats) of the batch, head and seq dimensions of a
// [batch, heads, seq, head_dim] array whose head_dim is contiguous. Row
// (b, h, t) starts at data + b * batch + h * head + t * seq.
struct RopeStrides {
  int64_t batch;
  int64_t head;
  int64_t seq;
};
// Strides of a contiguous [batch, heads, seq, head_dim] array.
RopeStrides ContiguousRopeStrides(int64_t heads, int64_t seq, int64_t head_dim);

// One array to rotate: queries or keys (or their gradients). `src` is read
// and `dst` written; they may be the same array with the same strides (in
// place) but must not otherwise overlap. heads == 0 means "absent" (the
// pointers are then ignored), e.g. to rotate only the queries.
struct RopeOperand {
  const float* src = nullptr;
  RopeStrides src_strides = {0, 0, 0};
  float* dst = nullptr;
  RopeStrides dst_strides = {0, 0, 0};
  int64_t heads = 0;
};

// Extents shared by the queries and keys of one call.
struct RopeShape {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t head_dim = 0;
  int64_t rotary_dim = 0;  // channels [0, rotary_dim) are rotated
  RopeLayout layout = RopeLayout::kSplitHalf;
};

// The position of token t of batch row b:
//   ids empty:           offset + t       (KV-cache decoding: offset = cache
//                                          length; training: offset = 0)
//   ids.size() == seq:   ids[t]           (shared by every batch row)
//   ids.size() == batch * seq: ids[b * seq + t]  (packed sequences whose
//                                          positions restart per document)
// With ids, offset must stay 0 (one or the other, not both).
struct RopePositions {
  int64_t offset = 0;
  std::vector<int64_t> ids;
};

// The position of token t of batch row b under `positions` (unchecked; see
// RopePositionsEnd for the checks), for sequences of `seq` tokens.
inline int64_t RopePositionOf(const RopePositions& positions, int64_t b,
                              int64_t t, int64_t seq) {
  if (positions.ids.empty()) return positions.offset + t;
  const bool shared = static_cast<int64_t>(positions.ids.size()) == seq;
  return positions.ids[(shared ? 0 : b * seq) + t];
}

// Checks `positions` against `shape` (sizes, no negative offset or id) and
// returns 1 + the largest position: the table length the call needs.
int64_t RopePositionsEnd(const RopeShape& shape,
                         const RopePositions& positions);

// Forward, queries and keys in one sweep over memory:
//   q.dst[b, h, t, :] = Rotate(q.src[b, h, t, :], theta(position(b, t)))
// and the same for k; channels [rotary_dim, head_dim) are copied. For each
// tile of positions the table rows are loaded once and reused for every head
// of q and k. Throws (rotor::Error) on inconsistent shapes, positions past
// the end of `rows`, or rows built for another rotary_dim.
void RopeForward(const RopeRows& rows, const RopeShape& shape,
                 const RopePositions& positions, const RopeOperand& q,
                 const RopeOperand& k);
// Backward, the transpose: dst = R(-theta) src for the rotated channels and
// dst = src for the rest, or dst += ... when `accumulate` (the gradient of
// the input is added to what dst holds). src is the gradient of the output.
void RopeBackward(const RopeRows& rows, const RopeShape& shape,
                  const RopePositions& positions, const RopeOperand& dq,
                  const RopeOperand& dk, bool accumulate);

// Convenience overloads that first grow `table` to cover the positions.
void RopeForward(RopeTable& table, const RopeShape& shape,
                 const RopePositions& positions, const RopeOperand& q,
                 const RopeOperand& k);
void RopeBackward(RopeTable& table, const RopeShape& shape,
                  const RopePositions& positions, const RopeOperand& dq,
                  const RopeOperand& dk, bool accumulate);

// Name of the Highway target the RoPE dispatch chose ("AVX3", "AVX2", ...).
const char* RopeTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ROPE_H_
