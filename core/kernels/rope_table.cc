// The RoPE cos/sin table and the plain (non-SIMD) helpers of
// core/kernels/rope.h. The SIMD kernels are in core/kernels/rope.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/kernels/rope.h"
#include "core/parallel.h"

namespace rotor {
namespace kernels {

namespace {

void CheckFrequencies(const std::vector<double>& inv_freq,
                      double attention_factor) {
  ROTOR_CHECK(!inv_freq.empty(),
              "RopeTable: inv_freq is empty (rotary dim 0); it needs "
              "rotary_dim / 2 >= 1 frequencies");
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    ROTOR_CHECK(std::isfinite(inv_freq[i]), "RopeTable: inv_freq[", i,
                "] = ", inv_freq[i], " is not finite");
  }
  ROTOR_CHECK(std::isfinite(attention_factor) && attention_factor > 0,
              "RopeTable: attention_factor must be finite and > 0, got ",
              attention_factor);
}

// Rows [begin, end) of the table, written into values (row stride r):
// a cos(p inv_freq[i]) and a sin(p inv_freq[i]), in double, rounded once.
void ComputeRows(const std::vector<double>& inv_freq, double attention_factor,
                 int64_t begin, int64_t end, float* values) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  ParallelFor(end - begin, 256, [&](int64_t first, int64_t last) {
    for (int64_t p = begin + first; p < begin + last; ++p) {
      float* row = values + p * 2 * half;
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(p) * inv_freq[i];
        row[i] = static_cast<float>(attention_factor * std::cos(angle));
        row[half + i] = static_cast<float>(attention_factor * std::sin(angle));
      }
    }
  });
}

}  // namespace

const char* RopeLayoutName(RopeLayout layout) {
  return layout == RopeLayout::kSplitHalf ? "split-half" : "interleaved";
}

int64_t RopeRotaryDim(int64_t head_dim, double partial_rotary_factor) {
  ROTOR_CHECK(head_dim > 0, "RoPE: head_dim must be positive, got ", head_dim);
  ROTOR_CHECK(partial_rotary_factor > 0 && partial_rotary_factor <= 1,
              "RoPE: partial_rotary_factor must be in (0, 1], got ",
              partial_rotary_factor);
  const int64_t rotary_dim =
      TruncatedRotaryDim(head_dim, partial_rotary_factor);
  ROTOR_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0,
              "RoPE: rotary dim int(head_dim ", head_dim,
              " * partial_rotary_factor ", partial_rotary_factor,
              ") = ", rotary_dim,
              " must be even and positive (channels rotate in "
              "pairs)");
  return rotary_dim;
}

RopeRows::RopeRows(int64_t rotary_dim, int64_t num_positions,
                   std::vector<float> values)
    : rotary_dim_(rotary_dim),
      num_positions_(num_positions),
      values_(std::move(values)) {
  ROTOR_CHECK(
      static_cast<int64_t>(values_.size()) == rotary_dim_ * num_positions_,
      "RopeRows: ", values_.size(), " values for ", num_positions_,
      " positions of rotary dim ", rotary_dim_);
}

RopeTable::RopeTable(std::vector<double> inv_freq, double attention_factor)
    : inv_freq_(std::move(inv_freq)), attention_factor_(attention_factor) {
  CheckFrequencies(inv_freq_, attention_factor_);
}

std::vector<double> RopeTable::DefaultInvFreq(int64_t rotary_dim, double base) {
  ROTOR_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0,
              "RoPE: rotary dim must be even and positive (channels rotate "
              "in pairs), got ",
              rotary_dim);
  ROTOR_CHECK(std::isfinite(base) && base > 0,
              "RoPE: base (rope_theta) must be finite and > 0, got ", base);
  std::vector<double> inv_freq(rotary_dim / 2);
  for (int64_t i = 0; i < rotary_dim / 2; ++i) {
    inv_freq[i] = 1.0 / std::pow(base, 2.0 * static_cast<double>(i) /
                                           static_cast<double>(rotary_dim));
  }
  return inv_freq;
}

RopeTable RopeTable::Default(int64_t rotary_dim, double base) {
  return RopeTable(DefaultInvFreq(rotary_dim, base), 1.0);
}

void RopeTable::Rebuild(std::vector<double> inv_freq, double attention_factor) {
  CheckFrequencies(inv_freq, attention_factor);
  if (inv_freq == inv_freq_ && attention_factor == attention_factor_) return;
  inv_freq_ = std::move(inv_freq);
  attention_factor_ = attention_factor;
  rows_.reset();
}

int64_t RopeTable::num_positions() const {
  return rows_ ? rows_->num_positions() : 0;
}

std::shared_ptr<const RopeRows> RopeTable::Rows(int64_t num_positions) {
  ROTOR_CHECK(num_positions >= 0, "RopeTable::Rows: negative count ",
              num_positions);
  ROTOR_CHECK(num_positions <= kMaxRopePositions, "RoPE: position ",
              num_positions - 1, " is beyond the largest supported position ",
              kMaxRopePositions - 1);
  const int64_t have = this->num_positions();
  if (rows_ && have >= num_positions) return rows_;
  // Geometric growth keeps the cost of token-by-token decoding linear.
  const int64_t count = std::min(
      std::max<int64_t>({num_positions, 2 * have, 64}), kMaxRopePositions);
  const int64_t r = rotary_dim();
  std::vector<float> values;
  try {
    values.resize(static_cast<size_t>(count * r));
  } catch (const std::bad_alloc&) {
    throw Error(StrCat("RoPE: the cos/sin table for positions 0..",
                       num_positions - 1, " (", count, " rows of ", r,
                       " floats, ", count * r * sizeof(float) >> 20,
                       " MiB) does not fit in memory"));
  }
  if (have > 0 && r > 0) {  // values.data() may be null when empty
    std::memcpy(values.data(), rows_->row(0), sizeof(float) * have * r);
  }
  ComputeRows(inv_freq_, attention_factor_, have, count, values.data());
  rows_ = std::make_shared<const RopeRows>(r, count, std::move(values));
  return rows_;
}

RopeStrides ContiguousRopeStrides(int64_t heads, int64_t seq,
                                  int64_t head_dim) {
  return {heads * seq * head_dim, seq * head_dim, head_dim};
}

int64_t RopePositionsEnd(const RopeShape& shape,
                         const RopePositions& positions) {
  const auto count = static_cast<int64_t>(positions.ids.size());
  if (count == 0) {
    ROTOR_CHECK(positions.offset >= 0,
                "RoPE: position offset must be >= 0, got ", positions.offset);
    return positions.offset + shape.seq;
  }
  ROTOR_CHECK(count == shape.seq || count == shape.batch * shape.seq,
              "RoPE: ", count, " position ids for batch ", shape.batch,
              " and seq ", shape.seq, " (expected seq = ", shape.seq,
              " ids shared by the batch, or batch * seq = ",
              shape.batch * shape.seq, ")");
  ROTOR_CHECK(positions.offset == 0,
              "RoPE: give either position ids or an offset, not both (offset ",
              positions.offset, ")");
  int64_t end = 0;
  for (int64_t i = 0; i < count; ++i) {
    ROTOR_CHECK(positions.ids[i] >= 0, "RoPE: position id ", i, " is ",
                positions.ids[i], ", positions must be >= 0");
    end = std::max(end, positions.ids[i] + 1);
  }
  return end;
}

void RopeForward(RopeTable& table, const RopeShape& shape,
                 const RopePositions& positions, const RopeOperand& q,
                 const RopeOperand& k) {
  const auto rows = table.Rows(RopePositionsEnd(shape, positions));
  RopeForward(*rows, shape, positions, q, k);
}

void RopeBackward(RopeTable& table, const RopeShape& shape,
                  const RopePositions& positions, const RopeOperand& dq,
                  const RopeOperand& dk, bool accumulate) {
  const auto rows = table.Rows(RopePositionsEnd(shape, positions));
  RopeBackward(*rows, shape, positions, dq, dk, accumulate);
}

}  // namespace kernels
}  // namespace rotor
