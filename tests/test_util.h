// Shared test helpers:
// - random data,
// - GradCheck: an op's autograd gradient against central finite differences,
// - ComplexStepGradient: exact-to-rounding derivatives of scalar references
//   templated on T (run them on std::complex<double>),
//   and ComplexStepGradientOfWeightedSum, what a backward pass must return,
// - ExpectNear: element-wise comparison that names the first bad index,
// - TransposedViewAndCopy: a non-contiguous input and its contiguous copy,
// - ThreadCountGuard and RunAtThreads: a thread count for a scope or a call,
// - ROTOR_EXPECT_ERROR (a rotor::Error naming what is wrong),
//   EXPECT_CONTAINS (a string holds a part) and ReplaceOnce (an edited
//   copy of a file's text),
// - the per-Highway-target fixture (ROTOR_PER_TARGET_TEST) and the kernel
//   sweeps: ForEachSizeAndMisalignment (and ForEachShapeAndMisalignment for
//   row kernels) over KernelTestSizes() and KernelTestMisalignments(), with
//   MisalignedFloats for the arrays,
// - ROTOR_SKIP_WITHOUT_BF16_DOT: skips a bf16 tile test on a CPU without
//   AVX512_BF16, naming it.
#ifndef ROTOR_TESTS_TEST_UTIL_H_
#define ROTOR_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/bf16_tile_product.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "hwy/targets.h"
#include "hwy/tests/hwy_gtest.h"

namespace rotor {
namespace test {

inline std::vector<float> RandomVector(size_t n, std::mt19937& rng,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The same in double, for the scalar references' double checks.
inline std::vector<double> RandomDoubles(size_t n, std::mt19937& rng, double lo,
                                         double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

inline Tensor RandomTensor(const Shape& shape, std::mt19937& rng,
                           float lo = -1.0f, float hi = 1.0f,
                           bool requires_grad = true) {
  return Tensor::FromVector(
      shape, RandomVector(NumElements(shape), rng, lo, hi), requires_grad);
}

// Checks every input's autograd gradient against central differences of
// L(x) = sum_i dy_i * f(x)_i, with a random dy (fixed seed), so every output
// element contributes. f runs in float; L is accumulated in double. The error
// of element j is |numeric_j - autograd_j| / max(max_k |numeric_k|, 1e-3),
// which must stay below `tolerance`. Inputs that do not require grad are
// held fixed.
inline void GradCheck(
    const std::function<Tensor(const std::vector<Tensor>&)>& f,
    const std::vector<Tensor>& inputs, double eps = 1e-3,
    double tolerance = 1e-2) {
  std::mt19937 rng(1234);
  Tensor y = f(inputs);
  const Tensor dy = RandomTensor(y.shape(), rng, -1.0f, 1.0f, false);
  for (const Tensor& x : inputs) {
    if (x.requires_grad()) const_cast<Tensor&>(x).ZeroGrad();
  }
  y.Backward(dy);  // dL/dy = dy

  const std::vector<float> dy_values = dy.ToVector();
  auto loss = [&]() {
    NoGradGuard no_grad;
    const std::vector<float> out = f(inputs).ToVector();
    double sum = 0.0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += double(out[i]) * dy_values[i];
    return sum;
  };

  for (size_t which = 0; which < inputs.size(); ++which) {
    Tensor x = inputs[which];
    if (!x.requires_grad()) continue;
    ASSERT_TRUE(x.is_contiguous()) << "GradCheck needs contiguous inputs";
    ASSERT_TRUE(x.grad().defined()) << "input " << which << " got no gradient";
    const std::vector<float> analytic = x.grad().ToVector();
    std::vector<double> numeric(x.numel());
    float* data = x.data();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const float saved = data[j];
      data[j] = saved + static_cast<float>(eps);
      const double plus = loss();
      data[j] = saved - static_cast<float>(eps);
      const double minus = loss();
      data[j] = saved;
      numeric[j] = (plus - minus) / (2.0 * eps);
    }
    double scale = 1e-3;
    for (double g : numeric) scale = std::max(scale, std::abs(g));
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double error = std::abs(numeric[j] - analytic[j]) / scale;
      ASSERT_LT(error, tolerance)
          << "input " << which << " (shape " << ShapeToString(x.shape())
          << ") element " << j << ": finite differences " << numeric[j]
          << ", autograd " << analytic[j];
    }
  }
}

// Gradient of a scalar function by the complex step: df/dx_j = Im f(x + ih
// e_j) / h, with h = 1e-30. No subtraction, so it is exact to rounding.
inline std::vector<double> ComplexStepGradient(
    const std::function<
        std::complex<double>(const std::vector<std::complex<double>>&)>& f,
    const std::vector<double>& x) {
  constexpr double kStep = 1e-30;
  std::vector<std::complex<double>> z(x.begin(), x.end());
  std::vector<double> gradient(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    z[j] = {x[j], kStep};
    gradient[j] = f(z).imag() / kStep;
    z[j] = {x[j], 0.0};
  }
  return gradient;
}

// The gradient of L(x) = sum_i dy_i f(x)_i by the complex step, for a
// forward f with one output per dy: what the backward pass of f must return
// for the output gradient dy.
inline std::vector<double> ComplexStepGradientOfWeightedSum(
    const std::function<std::vector<std::complex<double>>(
        const std::vector<std::complex<double>>&)>& f,
    const std::vector<double>& x, const std::vector<double>& dy) {
  using C = std::complex<double>;
  return ComplexStepGradient(
      [&](const std::vector<C>& z) {
        const std::vector<C> y = f(z);
        C loss = 0;
        for (size_t i = 0; i < y.size(); ++i) loss += dy[i] * y[i];
        return loss;
      },
      x);
}

// |actual_i - expected_i| <= abs_tol + rel_tol * |expected_i| for every i.
template <typename A, typename E>
void ExpectNear(const A* actual, const E* expected, size_t n, double abs_tol,
                double rel_tol, const std::string& what = "") {
  for (size_t i = 0; i < n; ++i) {
    const double a = static_cast<double>(actual[i]);
    const double e = static_cast<double>(expected[i]);
    const bool both_nan = std::isnan(a) && std::isnan(e);
    if (both_nan) continue;
    ASSERT_LE(std::abs(a - e), abs_tol + rel_tol * std::abs(e))
        << what << " element " << i << " of " << n << ": got " << a
        << ", expected " << e;
  }
}

// A non-contiguous [cols, rows] tensor of random values in [lo, hi): the
// transpose of a [rows, cols] one, as a view with strides [1, cols] (made
// with ViewAs, not the Transpose op), and a contiguous copy of it. Both
// require grad when `requires_grad`. An op must give the two the same
// values and gradients.
struct ViewAndCopy {
  Tensor view;
  Tensor copy;
};
inline ViewAndCopy TransposedViewAndCopy(int64_t rows, int64_t cols,
                                         std::mt19937& rng, float lo, float hi,
                                         bool requires_grad = true) {
  const Tensor base = RandomTensor({rows, cols}, rng, lo, hi, false);
  Tensor view = base.ViewAs({cols, rows}, {1, cols}, 0);
  if (requires_grad) view.set_requires_grad(true);
  Tensor copy =
      Tensor::FromVector({cols, rows}, view.ToVector(), requires_grad);
  return {view, copy};
}

// Sets the thread count (SetNumThreads) for a scope and restores the one
// before at its end, also when an assertion leaves the test early.
class ThreadCountGuard {
 public:
  explicit ThreadCountGuard(int threads) : previous_(NumThreads()) {
    SetNumThreads(threads);
  }
  ~ThreadCountGuard() { SetNumThreads(previous_); }
  ThreadCountGuard(const ThreadCountGuard&) = delete;
  ThreadCountGuard& operator=(const ThreadCountGuard&) = delete;

 private:
  int previous_;
};

// fn() run at `threads` threads; the thread count before is restored.
template <typename Fn>
auto RunAtThreads(int threads, Fn&& fn) {
  ThreadCountGuard guard(threads);
  return fn();
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

// `text` with the first `from` replaced by `to`; a failure when `text` has
// no `from` (the edit a test meant to make would silently not happen).
inline std::string ReplaceOnce(std::string text, const std::string& from,
                               const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Sizes 0 .. 2N+1 for the widest vector (16 floats on AVX-512) plus a few
// larger odd ones: covers empty, tail-only, exact and vector+tail cases.
inline std::vector<size_t> KernelTestSizes() {
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 33; ++n) sizes.push_back(n);
  for (size_t n : {63, 64, 65, 127, 255, 1000, 4097}) sizes.push_back(n);
  return sizes;
}

// Misalignments (in floats) applied to every pointer: 0, and offsets that
// break 16-, 32- and 64-byte alignment.
inline std::vector<size_t> KernelTestMisalignments() { return {0, 1, 3, 5}; }

// KernelTestSizes() plus 40001 floats, more than one ParallelFor task: for
// the kernels that split a single array over threads.
inline std::vector<size_t> KernelTestSizesAcrossTasks() {
  std::vector<size_t> sizes = KernelTestSizes();
  sizes.push_back(40001);
  return sizes;
}

// `size` floats that start `misalign` floats past the start of their
// storage, so that a kernel sees pointers off the alignment its vector
// loads prefer. Copies copy the padding too.
class MisalignedFloats {
 public:
  // Every float `fill`.
  MisalignedFloats(size_t size, size_t misalign, float fill = 0.0f)
      : storage_(size + misalign, fill), misalign_(misalign) {}
  // Uniform in [lo, hi) (the padding too: size + misalign draws from rng).
  MisalignedFloats(size_t size, size_t misalign, std::mt19937& rng,
                   float lo = -1.0f, float hi = 1.0f)
      : storage_(RandomVector(size + misalign, rng, lo, hi)),
        misalign_(misalign) {}

  float* data() { return storage_.data() + misalign_; }
  const float* data() const { return storage_.data() + misalign_; }
  size_t size() const { return storage_.size() - misalign_; }

 private:
  std::vector<float> storage_;
  size_t misalign_;
};

// The sweep of a kernel-against-reference test: calls
// fn(size, misalign, where) for every size in `sizes` (KernelTestSizes() or
// KernelTestSizesAcrossTasks()) and, for each, every misalignment in
// KernelTestMisalignments() (misaligned inputs and outputs: see
// MisalignedFloats). `where` names the case in failure messages:
// "<name>=<size> misalign=<misalign>", e.g. with name "n".
template <typename Fn>
void ForEachSizeAndMisalignment(const std::vector<size_t>& sizes,
                                const std::string& name, Fn&& fn) {
  for (size_t size : sizes) {
    for (size_t misalign : KernelTestMisalignments()) {
      fn(size, misalign,
         name + "=" + std::to_string(size) +
             " misalign=" + std::to_string(misalign));
    }
  }
}

// The same sweep for the row kernels, over [rows, cols] arrays: calls
// fn(rows, cols, misalign, where) for every count in `row_counts` and, for
// each, every cols in KernelTestSizes() and misalignment as above, with
// where = "rows=<rows> <cols_name>=<cols> misalign=<misalign>".
template <typename Fn>
void ForEachShapeAndMisalignment(const std::vector<size_t>& row_counts,
                                 const std::string& cols_name, Fn&& fn) {
  for (size_t rows : row_counts) {
    ForEachSizeAndMisalignment(
        KernelTestSizes(), "rows=" + std::to_string(rows) + " " + cols_name,
        [&](size_t cols, size_t misalign, const std::string& where) {
          fn(rows, cols, misalign, where);
        });
  }
}

}  // namespace test
}  // namespace rotor

// EXPECT_CONTAINS(message, "Add: shapes [2, 3]")
#define EXPECT_CONTAINS(text, part) \
  EXPECT_PRED_FORMAT2(::rotor::test::ContainsText, text, part)

// Runs `statement`, expecting a rotor::Error whose message contains every
// string in `parts`.
#define ROTOR_EXPECT_ERROR(statement, ...)                                  \
  do {                                                                      \
    try {                                                                   \
      statement;                                                            \
      ADD_FAILURE() << "expected rotor::Error from " #statement;            \
    } catch (const ::rotor::Error& error) {                                 \
      const std::string message = error.what();                             \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__}) \
        EXPECT_NE(message.find(part), std::string::npos)                    \
            << "message \"" << message << "\" lacks \"" << part << "\"";    \
    }                                                                       \
  } while (0)

// Per-target tests. ROTOR_PER_TARGET_SUITE(Suite) once, then any number of
//   ROTOR_PER_TARGET_TEST(Suite, Name) { body }
// Each body runs once for every Highway target compiled in and supported by
// this CPU (AVX3, AVX2, SSE4, SSSE3, SCALAR on an AVX-512 machine), with
// dynamic dispatch forced to that target; ctest lists one entry per target,
// e.g. "PerTarget/SoftmaxKernel.MatchesReference/AVX2". TargetName() is the
// forced target, to check against a kernel family's reported target.
#define ROTOR_PER_TARGET_SUITE(suite)                                      \
  class suite : public hwy::TestWithParamTarget {                          \
   protected:                                                              \
    const char* TargetName() const { return hwy::TargetName(GetParam()); } \
  };                                                                       \
  INSTANTIATE_TEST_SUITE_P(                                                \
      PerTarget, suite,                                                    \
      ::testing::ValuesIn(::hwy::SupportedAndGeneratedTargets()),          \
      ::hwy::TestParamTargetName)

#define ROTOR_PER_TARGET_TEST(suite, name) TEST_P(suite, name)

#define ROTOR_SKIP_WITHOUT_BF16_DOT()                                    \
  if (!::rotor::kernels::Bf16DotSupported()) {                           \
    GTEST_SKIP() << "this CPU has no AVX512_BF16 (VDPBF16PS): the bf16 " \
                    "tile products do not run here";                     \
  }

#endif  // ROTOR_TESTS_TEST_UTIL_H_
