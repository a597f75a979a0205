#include "train/gguf/gguf_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// One Q8_0 block of 32 values.
void AppendQ8_0Block(const float* x, std::string& out) {
  float amax = 0.0f;
  for (int64_t i = 0; i < kQ8_0BlockSize; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
  }
  const float d = amax / 127.0f;
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  AppendLittleEndian<uint16_t>(out, FloatToHalfBits(d));
  for (int64_t i = 0; i < kQ8_0BlockSize; ++i) {
    AppendLittleEndian<int8_t>(out,
                               static_cast<int8_t>(std::round(x[i] * inverse)));
  }
}

}  // namespace

std::string EncodeGgmlTensor(const float* values, size_t n, int64_t row_length,
                             GgmlType type, const std::string& name) {
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

}  // namespace rotor::train
