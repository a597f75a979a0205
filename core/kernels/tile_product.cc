// Dispatch for core/kernels/tile_product.h; the body is the per-target
// TileProduct of core/kernels/tile_product-inl.h.
#include "core/kernels/tile_product.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/tile_product.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/tile_product-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {

void TileProductDispatched(bool accumulate, size_t rows, size_t cols,
                           size_t depth, float alpha, const TileOperands& o) {
  if (accumulate) {
    TileProduct<true>(rows, cols, depth, o.a, o.a_row, o.a_col, o.b, o.ldb,
                      alpha, o.c, o.ldc);
  } else {
    TileProduct<false>(rows, cols, depth, o.a, o.a_row, o.a_col, o.b, o.ldb,
                       alpha, o.c, o.ldc);
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(TileProductDispatched);

void TileProduct(bool accumulate, size_t rows, size_t cols, size_t depth,
                 float alpha, const TileOperands& operands) {
  HWY_DYNAMIC_DISPATCH(TileProductDispatched)
  (accumulate, rows, cols, depth, alpha, operands);
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE
