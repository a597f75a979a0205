// LayerNorm over the last dimension. For each row x of length D:
// clang-format off
//   mean = sum(x) / D,  var = sum((x - mean)^2) / D,  rstd = 1 / sqrt(var + eps)
//   xhat = (x - mean) * rstd,  y = xhat * weight + bias
// clang-format on
// x: [..., D], weight, bias: [D].
//
// Backward, per row (with dxhat = g * weight):
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
// and, summed over all rows,
//   dweight = sum_rows g * xhat,   dbias = sum_rows g.
// Rows run in parallel. The weight/bias sums cross rows, so they are built
// deterministically: rows are grouped into fixed blocks of kRowBlock, each
// block sums its rows in order into its own partial sum, and the partial sums
// are then added in block order on one thread. The block size does not
// depend on the thread count, so neither do the results.
#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/profile.h"

namespace rotor {

namespace {

constexpr int64_t kRowBlock = 32;

Tensor ContiguousOf(const Tensor& t) {
  return t.is_contiguous() ? t : internal::ContiguousCopy(t);
}

}  // namespace

Tensor LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 float eps) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(x.dim() >= 1, "LayerNorm: input must have a last dimension, got ",
              ShapeToString(x.shape()));
  const int64_t dim = x.shape().back();
  ROTOR_CHECK(weight.shape() == Shape{dim} && bias.shape() == Shape{dim},
              "LayerNorm: input shape ", ShapeToString(x.shape()),
              " needs weight and bias of shape [", dim, "], got ",
              ShapeToString(weight.shape()), " and ",
              ShapeToString(bias.shape()));
  const int64_t rows = dim == 0 ? 0 : x.numel() / dim;
  const Tensor xc = ContiguousOf(x), wc = ContiguousOf(weight),
               bc = ContiguousOf(bias);
  Tensor out = Tensor::Empty(x.shape());
  // Per-row statistics, saved for backward.
  auto mean = std::make_shared<std::vector<float>>(rows);
  auto rstd = std::make_shared<std::vector<float>>(rows);
  const float* px = xc.data();
  const float* pw = wc.data();
  const float* pb = bc.data();
  float* po = out.data();
  ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(dim, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const float* row = px + r * dim;
                  double sum = 0.0;
                  for (int64_t j = 0; j < dim; ++j) sum += row[j];
                  const double m = sum / dim;
                  double squares = 0.0;
                  for (int64_t j = 0; j < dim; ++j) {
                    squares += (row[j] - m) * (row[j] - m);
                  }
                  const float s =
                      static_cast<float>(1.0 / std::sqrt(squares / dim + eps));
                  (*mean)[r] = static_cast<float>(m);
                  (*rstd)[r] = s;
                  float* y = po + r * dim;
                  for (int64_t j = 0; j < dim; ++j) {
                    y[j] = (row[j] - (*mean)[r]) * s * pw[j] + pb[j];
                  }
                }
              });
  return RecordOp(
      out, "LayerNorm", {x, weight, bias},
      [xc, wc, mean, rstd, rows, dim](const Tensor& g) {
        const Tensor gc = ContiguousOf(g);
        Tensor dx = Tensor::Empty(xc.shape());
        const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
        // Per-block partial sums of g * xhat and g.
        std::vector<float> partial_w(blocks * dim, 0.0f);
        std::vector<float> partial_b(blocks * dim, 0.0f);
        const float* px = xc.data();
        const float* pw = wc.data();
        const float* pg = gc.data();
        float* pdx = dx.data();
        ParallelFor(blocks, 1, [&](int64_t block_begin, int64_t block_end) {
          std::vector<float> xhat(dim), dxhat(dim);
          for (int64_t block = block_begin; block < block_end; ++block) {
            float* sum_w = partial_w.data() + block * dim;
            float* sum_b = partial_b.data() + block * dim;
            const int64_t last = std::min(rows, (block + 1) * kRowBlock);
            for (int64_t r = block * kRowBlock; r < last; ++r) {
              const float* row = px + r * dim;
              const float* grow = pg + r * dim;
              const float m = (*mean)[r], s = (*rstd)[r];
              double mean_dxhat = 0.0, mean_dxhat_xhat = 0.0;
              for (int64_t j = 0; j < dim; ++j) {
                xhat[j] = (row[j] - m) * s;
                dxhat[j] = grow[j] * pw[j];
                mean_dxhat += dxhat[j];
                mean_dxhat_xhat += dxhat[j] * xhat[j];
                sum_w[j] += grow[j] * xhat[j];
                sum_b[j] += grow[j];
              }
              const float a = static_cast<float>(mean_dxhat / dim);
              const float c = static_cast<float>(mean_dxhat_xhat / dim);
              float* drow = pdx + r * dim;
              for (int64_t j = 0; j < dim; ++j) {
                drow[j] = s * (dxhat[j] - a - xhat[j] * c);
              }
            }
          }
        });
        Tensor dweight = Tensor::Zeros({dim});
        Tensor dbias = Tensor::Zeros({dim});
        for (int64_t block = 0; block < blocks; ++block) {
          kernels::Axpy(1.0f, partial_w.data() + block * dim, dweight.data(),
                        dim);
          kernels::Axpy(1.0f, partial_b.data() + block * dim, dbias.data(),
                        dim);
        }
        return std::vector<Tensor>{dx, dweight, dbias};
      });
}

}  // namespace rotor
