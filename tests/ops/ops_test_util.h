// Helpers for the op tests in tests/ops/ and tests/core/.
#ifndef ROTOR_TESTS_OPS_OPS_TEST_UTIL_H_
#define ROTOR_TESTS_OPS_OPS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace rotor {
namespace test {

// The message of the rotor::Error that fn throws, or "(no error)".
template <class Fn>
std::string ErrorMessage(const Fn& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// For EXPECT_PRED_FORMAT2: passes when `text` contains `part`, else prints
// both.
inline ::testing::AssertionResult ContainsText(const char*, const char*,
                                               const std::string& text,
                                               const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected \"" << text << "\" to contain \"" << part << "\"";
}

// Values of a tensor as doubles (for comparisons against references).
inline std::vector<double> ToDoubles(const Tensor& t) {
  const std::vector<float> v = t.ToVector();
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace test
}  // namespace rotor

// EXPECT_CONTAINS(message, "Add: shapes [2, 3]")
#define EXPECT_CONTAINS(text, part) \
  EXPECT_PRED_FORMAT2(::rotor::test::ContainsText, text, part)

#endif  // ROTOR_TESTS_OPS_OPS_TEST_UTIL_H_
