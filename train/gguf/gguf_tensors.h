// Tensor data in the ggml types rotor writes to GGUF (ggml's ggml-common.h
// and ggml-quants.c define the layouts):
//
//   F32   4 bytes per value, IEEE single
//   F16   2 bytes, IEEE half, rounded to nearest even
//   BF16  2 bytes, the top half of the float32, rounded to nearest even
//   Q8_0  blocks of 32 values along a row: u16 d (IEEE half) then 32 int8
//         q, value = d * q; d = max|x| / 127 and q = round(x / d) (halves
//         away from zero), as quantize_row_q8_0_ref; a block whose d is 0
//         as a half (max|x| below about 3.8e-6) has q = 0, as it decodes
//
// A tensor is encoded as a whole: its rows (ne[0] values each) one after
// another, so Q8_0 needs a row length that is a multiple of 32.
//
// Nothing non-finite is written: a NaN or infinite value is refused in
// every type, and so is a finite one the type would turn into inf: beyond
// 65504 (rounding to 65520 or more) in F16, beyond 3.3895e38 in BF16, and
// in Q8_0 a block whose scale max|x| / 127 is beyond F16's 65504 (|x| above
// about 127 x 65504 = 8.3e6). The error names the tensor, its largest
// magnitude and the types that hold it.
#ifndef ROTOR_TRAIN_GGUF_GGUF_TENSORS_H_
#define ROTOR_TRAIN_GGUF_GGUF_TENSORS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "train/gguf/gguf_file.h"

namespace rotor::train {

inline constexpr int64_t kQ8_0BlockSize = 32;  // QK8_0
inline constexpr int64_t kQ8_0BlockBytes = 2 + kQ8_0BlockSize;

// "f32", "f16", "bf16", "q8_0" (the names of --dtype and of ggml).
const char* GgmlTypeName(GgmlType type);

// float32 -> IEEE half bits, rounded to nearest, ties to even (as F16C's
// vcvtps2ph with rounding mode 0, which ggml's FP32_TO_FP16 uses): overflow
// gives +-inf, values below half the smallest subnormal give +-0, NaN stays
// a (quiet) NaN.
uint16_t FloatToHalfBits(float value);

// The bytes of `n` float32 values (rows of `row_length`) as `type`. Throws
// naming `name` when Q8_0 is asked for a row length that is not a multiple
// of 32, and for the values above.
std::string EncodeGgmlTensor(const float* values, size_t n, int64_t row_length,
                             GgmlType type, const std::string& name);

// `value` as the float32 GGUF stores `what` in (a metadata key, a
// rope_freqs factor). Throws naming `what` when float32 cannot hold it: NaN,
// infinite, or beyond float32's largest value 3.40282e38.
float ToFloat32(double value, const std::string& what);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_GGUF_GGUF_TENSORS_H_
