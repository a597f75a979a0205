// Embedding lookup: out[i..., :] = table[ids[i...], :].
// table: [vocab, dim]; ids: ids_shape; out: ids_shape + [dim].
//
// Backward scatter-adds each gradient row into the row of its id:
//   dL/dtable[v, :] = sum over positions p with ids[p] == v of g[p, :].
// A repeated id adds several rows into one, so the rows are added one after
// another in position order (no float reduction across threads).
#include <cstring>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/profile.h"

namespace rotor {

Tensor Embedding(const Tensor& table, const std::vector<int32_t>& ids,
                 const Shape& ids_shape) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(table.dim() == 2, "Embedding: table must be [vocab, dim], got ",
              ShapeToString(table.shape()));
  ROTOR_CHECK(NumElements(ids_shape) == static_cast<int64_t>(ids.size()),
              "Embedding: ids shape ", ShapeToString(ids_shape), " needs ",
              NumElements(ids_shape), " ids, got ", ids.size());
  const int64_t vocab = table.shape()[0];
  const int64_t dim = table.shape()[1];
  for (size_t p = 0; p < ids.size(); ++p) {
    ROTOR_CHECK(ids[p] >= 0 && ids[p] < vocab, "Embedding: id ", ids[p],
                " at position ", p, " is out of range for vocab size ", vocab);
  }
  const Tensor table_c =
      table.is_contiguous() ? table : internal::ContiguousCopy(table);
  Shape out_shape = ids_shape;
  out_shape.push_back(dim);
  Tensor out = Tensor::Empty(out_shape);
  const float* pt = table_c.data();
  float* po = out.data();
  const int64_t rows = ids.size();
  ParallelFor(rows,
              std::max<int64_t>(
                  1, internal::kElementwiseGrain / std::max<int64_t>(dim, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  std::memcpy(po + p * dim, pt + ids[p] * dim,
                              dim * sizeof(float));
                }
              });
  return RecordOp(
      out, "Embedding", {table}, [ids, vocab, dim](const Tensor& g) {
        const Tensor gc = g.is_contiguous() ? g : internal::ContiguousCopy(g);
        Tensor dtable = Tensor::Zeros({vocab, dim});
        for (size_t p = 0; p < ids.size(); ++p) {
          kernels::Axpy(1.0f, gc.data() + p * dim, dtable.data() + ids[p] * dim,
                        dim);
        }
        return std::vector<Tensor>{dtable};
      });
}

}  // namespace rotor
