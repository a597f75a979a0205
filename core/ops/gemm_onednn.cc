// The oneDNN backend of core/ops/gemm.h: one row block of C as a oneDNN
// `matmul` primitive,
//
//   C [m, n] = op(A) [m, k] op(B) [k, n] + beta C,
//
// with float32 operands, or bfloat16 operands and a float32 result (the
// multiply-adds accumulate in float32). BLAS's transposes are strides: op(A)
// is [m, k] with strides {lda, 1}, or {1, lda} when A is stored transposed,
// and likewise op(B); C has strides {ldc, 1}. beta = 1 is oneDNN's `sum`
// post-op (C += the product), beta = 0 writes C.
//
// Threads: oneDNN 2.6 as Debian builds it runs on OpenMP. rotor already
// splits every product over its own (oneTBB) threads, so each call must stay
// on the thread that makes it: every thread that calls in sets its OpenMP
// team to one thread first (omp_set_num_threads is per thread), and
// oneDNN's parallel sections then run inline. A product's bits thus depend
// on its shape alone, never on how many threads share the blocks.
//
// A primitive is made once per thread, shape, layout, precision and beta,
// and kept in that thread's cache (its creation costs far more than a small
// product); its scratchpad is the thread's own buffer (scratchpad_mode
// user), so no two threads ever share memory inside oneDNN.
#include <omp.h>

#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/ops/gemm_backends.h"

namespace rotor {
namespace internal {

namespace {

using dnnl::memory;

dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Everything a primitive depends on.
using PrimitiveKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t,
                                int64_t, int64_t, float, bool>;

PrimitiveKey KeyOf(const GemmBlock& block, bool bf16) {
  return {block.a_trans == CblasTrans,
          block.b_trans == CblasTrans,
          block.m,
          block.n,
          block.k,
          block.lda,
          block.ldb,
          block.ldc,
          block.beta,
          bf16};
}

memory::desc OperandDesc(int64_t rows, int64_t cols, CBLAS_TRANSPOSE trans,
                         int64_t ld, memory::data_type type) {
  const memory::dims strides =
      trans == CblasNoTrans ? memory::dims{ld, 1} : memory::dims{1, ld};
  return memory::desc({rows, cols}, type, strides);
}

dnnl::matmul::primitive_desc MakePrimitiveDesc(const GemmBlock& block,
                                               bool bf16) {
  const memory::data_type in =
      bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::desc a =
      OperandDesc(block.m, block.k, block.a_trans, block.lda, in);
  const memory::desc b =
      OperandDesc(block.k, block.n, block.b_trans, block.ldb, in);
  const memory::desc c = memory::desc(
      {block.m, block.n}, memory::data_type::f32, memory::dims{block.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (block.beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(block.beta);
    attr.set_post_ops(sum);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr,
                                      Engine());
}

// What this thread keeps: its stream, its primitives and its scratchpad.
struct ThreadContext {
  dnnl::stream stream{Engine()};
  struct Entry {
    dnnl::matmul primitive;
    memory::desc a, b, c, scratchpad;
  };
  std::map<PrimitiveKey, Entry> primitives;
  std::vector<unsigned char> scratchpad;
};

// A thread's cache holds at most this many primitives (then it starts
// over): products of a step come in a few dozen shapes, but a long
// generation or a sweep of lengths would otherwise keep every one.
constexpr size_t kMaxCachedPrimitives = 1024;

// oneDNN does not check every allocation it makes while it generates a
// primitive's kernels (its just-in-time code): under an address-space limit
// (`ulimit -v`, `prlimit --as`) a product crashed inside oneDNN when it
// made a primitive with 1-64 MiB of address space left (2-thread runs of
// configs/tiny.yaml at 120-200 MB; a new thread's first malloc reserves a
// 64 MiB arena). So before making a primitive, check that this much is
// left, and fail with a message if not: with it, the same runs at 120 to
// 400 MB each trained or stopped with this message.
constexpr uint64_t kOneDnnPrimitiveAddressSpace = uint64_t{80} << 20;

ThreadContext& ThisThread() {
  thread_local std::unique_ptr<ThreadContext> context = [] {
    omp_set_num_threads(1);  // see the top of this file
    return std::make_unique<ThreadContext>();
  }();
  return *context;
}

}  // namespace

void OneDnnGemm(const GemmBlock& block, bool bf16, const char* op) {
  ThreadContext& context = ThisThread();
  const PrimitiveKey key = KeyOf(block, bf16);
  auto found = context.primitives.find(key);
  if (found == context.primitives.end()) {
    if (context.primitives.size() >= kMaxCachedPrimitives) {
      context.primitives.clear();
    }
    CheckAddressSpaceLeft(kOneDnnPrimitiveAddressSpace, op, "oneDNN",
                          "to generate the kernels of a matrix product");
    dnnl::matmul::primitive_desc pd;
    try {
      pd = MakePrimitiveDesc(block, bf16);
    } catch (const dnnl::error& e) {
      throw Error(StrCat(op, ": oneDNN has no ", bf16 ? "bf16" : "float32",
                         " matmul for [", block.m, ", ", block.k, "] x [",
                         block.k, ", ", block.n, "] on this CPU (", OneDnnIsa(),
                         "): ", e.what()));
    }
    ThreadContext::Entry entry{dnnl::matmul(pd), pd.src_desc(),
                               pd.weights_desc(), pd.dst_desc(),
                               pd.scratchpad_desc()};
    found = context.primitives.emplace(key, std::move(entry)).first;
  }
  const ThreadContext::Entry& entry = found->second;
  const size_t scratch_bytes = entry.scratchpad.get_size();
  if (context.scratchpad.size() < scratch_bytes) {
    context.scratchpad.resize(scratch_bytes);
  }
  // oneDNN takes non-const handles but only reads the sources.
  memory a(entry.a, Engine(), const_cast<void*>(block.a));
  memory b(entry.b, Engine(), const_cast<void*>(block.b));
  memory c(entry.c, Engine(), block.c);
  memory scratch(entry.scratchpad, Engine(), context.scratchpad.data());
  entry.primitive.execute(context.stream, {{DNNL_ARG_SRC, a},
                                           {DNNL_ARG_WEIGHTS, b},
                                           {DNNL_ARG_DST, c},
                                           {DNNL_ARG_SCRATCHPAD, scratch}});
  context.stream.wait();
}

std::string OneDnnImplementation(const GemmBlock& block, bool bf16) {
  ThisThread();  // one OpenMP thread, as the products run
  try {
    return MakePrimitiveDesc(block, bf16).impl_info_str();
  } catch (const dnnl::error& e) {
    return std::string("unimplemented: ") + e.what();
  }
}

GemmBlock TypicalGemmBlock() {
  GemmBlock block;  // a step's fused q, k, v projection: 4096 x 320 x 192
  block.m = 4096, block.n = 320, block.k = 192;
  block.b_trans = CblasTrans;
  block.lda = block.k, block.ldb = block.k, block.ldc = block.n;
  return block;
}

bool OneDnnRunsBf16() {
  static const bool runs = OneDnnImplementation(TypicalGemmBlock(), true)
                               .rfind("unimplemented", 0) != 0;
  return runs;
}

std::string OneDnnIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "unknown";
  }
}

}  // namespace internal
}  // namespace rotor
