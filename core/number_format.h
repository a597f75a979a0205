// Numbers as text at full precision, for output a reader compares or pastes
// back (`rotor rope`'s tables, the RoPE records' notes). In core/ because nn/
// formats with it; train/metrics.h has the formatters for people (a
// duration, a count), and core/memory_limit.h the one for bytes.
#ifndef ROTOR_CORE_NUMBER_FORMAT_H_
#define ROTOR_CORE_NUMBER_FORMAT_H_

#include <string>

namespace rotor {

// `value` to 17 significant digits (%.17g, full double precision): 0.1 ->
// "0.10000000000000001", 32 -> "32".
std::string FullDigits(double value);

}  // namespace rotor

#endif  // ROTOR_CORE_NUMBER_FORMAT_H_
