#include "train/gguf/gguf_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/kernels/convert.h"

namespace rotor::train {

const char* GgmlTypeName(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return "f32";
    case GgmlType::kF16:
      return "f16";
    case GgmlType::kBF16:
      return "bf16";
    case GgmlType::kQ8_0:
      return "q8_0";
  }
  return "?";
}

uint16_t FloatToHalfBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: keep the top of the payload, quiet
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 2^16
  if (magnitude < 0x38800000u) {  // below 2^-14: a half subnormal (or zero)
    // value = m * 2^-24 with m = |x| * 2^24, rounded to nearest even.
    const float scaled = std::fabs(value) * 16777216.0f;  // exact: * 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa
  // to 10 bits, ties to even; a carry into the exponent is correct.
  const uint32_t rebased = magnitude - (uint32_t{112} << 23);
  const uint32_t lsb = (rebased >> 13) & 1u;
  return sign | static_cast<uint16_t>((rebased + 0xfffu + lsb) >> 13);
}

namespace {

constexpr uint16_t kHalfInfinity = 0x7c00;

// Q8_0's scale of a block whose largest magnitude is `amax`.
float Q8_0Scale(float amax) { return amax / 127.0f; }

// One Q8_0 block of 32 (finite) values.
void AppendQ8_0Block(const float* x, std::string& out) {
  float amax = 0.0f;
  for (int64_t i = 0; i < kQ8_0BlockSize; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
  }
  const float d = Q8_0Scale(amax);
  const uint16_t d_bits = FloatToHalfBits(d);
  AppendLittleEndian<uint16_t>(out, d_bits);
  // A scale that is 0 as a half (d at most 2^-25: amax below about
  // 3.8e-6; d may be a float subnormal whose inverse overflows to inf)
  // makes the block all zeros: so are its quants.
  if ((d_bits & 0x7fffu) == 0) {
    out.append(kQ8_0BlockSize, '\0');
    return;
  }
  // Here d > 2^-25, so the inverse is finite and |x| * inverse is at most
  // 127 but for rounding; the clamp keeps the cast defined regardless.
  const float inverse = 1.0f / d;
  for (int64_t i = 0; i < kQ8_0BlockSize; ++i) {
    const float q = std::clamp(std::round(x[i] * inverse), -127.0f, 127.0f);
    AppendLittleEndian<int8_t>(out, static_cast<int8_t>(q));
  }
}

// Whether `type` writes a finite magnitude `amax` (and every smaller one)
// as a finite value.
bool Holds(GgmlType type, float amax) {
  switch (type) {
    case GgmlType::kF32:
      return true;
    case GgmlType::kF16:
      return (FloatToHalfBits(amax) & 0x7fffu) != kHalfInfinity;
    case GgmlType::kBF16: {
      uint16_t bits = 0;
      kernels::F32ToBF16(&amax, &bits, 1);
      return (bits & 0x7fffu) != 0x7f80u;
    }
    case GgmlType::kQ8_0:
      return (FloatToHalfBits(Q8_0Scale(amax)) & 0x7fffu) != kHalfInfinity;
  }
  return false;
}

// What `type` holds, for a message.
std::string Capacity(GgmlType type) {
  switch (type) {
    case GgmlType::kF16:
      return "f16's largest value is 65504";
    case GgmlType::kBF16:
      return "bf16's largest value is 3.38953e+38";
    case GgmlType::kQ8_0:
      return "q8_0 stores each block's scale max|x| / 127 as an f16, whose "
             "largest value is 65504, so it holds magnitudes up to about "
             "127 x 65504 = 8.319e+06";
    case GgmlType::kF32:
      break;
  }
  return "f32's largest value is 3.40282e+38";
}

// Throws naming `name` unless every value is finite and `type` holds the
// largest magnitude.
void CheckRepresentable(const float* values, size_t n, GgmlType type,
                        const std::string& name) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    ROTOR_CHECK(std::isfinite(values[i]), "GGUF: tensor ", name, " holds ",
                values[i], " at index ", i,
                ": GGUF export writes finite weights only (a model with a NaN "
                "or infinite weight computes NaN)");
    amax = std::max(amax, std::fabs(values[i]));
  }
  if (Holds(type, amax)) return;
  // "q8_0, bf16 or f32": the types that hold it (f32 holds every finite
  // value, so there is one).
  std::string choices;
  for (GgmlType other : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kBF16}) {
    if (Holds(other, amax)) choices += StrCat(GgmlTypeName(other), ", ");
  }
  if (!choices.empty()) choices.replace(choices.size() - 2, 2, " or ");
  choices += GgmlTypeName(GgmlType::kF32);
  throw Error(StrCat("GGUF: tensor ", name, " holds a value of magnitude ",
                     amax, ", more than ", GgmlTypeName(type), " can write (",
                     Capacity(type), "; it would be written as inf): export ",
                     "it with --dtype ", choices));
}

}  // namespace

std::string EncodeGgmlTensor(const float* values, size_t n, int64_t row_length,
                             GgmlType type, const std::string& name) {
  CheckRepresentable(values, n, type, name);
  std::string out;
  switch (type) {
    case GgmlType::kF32:
      out.assign(reinterpret_cast<const char*>(values), n * sizeof(float));
      break;
    case GgmlType::kF16:
      out.reserve(n * 2);
      for (size_t i = 0; i < n; ++i) {
        AppendLittleEndian<uint16_t>(out, FloatToHalfBits(values[i]));
      }
      break;
    case GgmlType::kBF16: {
      std::vector<uint16_t> bits(n);
      kernels::F32ToBF16(values, bits.data(), n);
      out.assign(reinterpret_cast<const char*>(bits.data()), n * 2);
      break;
    }
    case GgmlType::kQ8_0:
      ROTOR_CHECK(row_length % kQ8_0BlockSize == 0, "GGUF: tensor ", name,
                  " has rows of ", row_length,
                  " values; q8_0 needs a multiple of ", kQ8_0BlockSize,
                  " (export it as f16, bf16 or f32)");
      out.reserve(n / kQ8_0BlockSize * kQ8_0BlockBytes);
      for (size_t i = 0; i < n; i += kQ8_0BlockSize) {
        AppendQ8_0Block(values + i, out);
      }
      break;
  }
  return out;
}

float ToFloat32(double value, const std::string& what) {
  constexpr double kLargest = std::numeric_limits<float>::max();
  ROTOR_CHECK(std::isfinite(value) && std::fabs(value) <= kLargest, what, " ",
              value, " is not a finite float32 (float32's largest value is ",
              kLargest, "), and GGUF stores it as one");
  return static_cast<float>(value);
}

}  // namespace rotor::train
