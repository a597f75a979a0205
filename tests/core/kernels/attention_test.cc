// Memory-efficient attention kernels (core/kernels/attention.h):
// - per target: forward (out, lse) and backward (dq, dk, dv) against the
//   double-precision scalar reference over odd sizes, head dims, GQA ratios,
//   decode offsets, non-causal attention and misaligned pointers; a case with
//   a known answer; decode consistency; bitwise determinism;
// - packed documents (a per-query lower bound on the keys, key_start) and
//   sliding windows against the reference; one document equal to no mask,
//   and a tile-aligned packed document equal to it alone, bitwise;
// - the scalar reference's backward against complex-step derivatives, and
//   its packed documents against each document alone;
// - memory: scratch is O(T * D), and a T = 4096 forward + backward runs and
//   matches the reference on rows it can check cheaply.
#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernels/attention_scalar.h"
#include "core/kernels/bf16_tile_product.h"
#include "core/kernels/rope.h"
#include "core/kernels/rope_scalar.h"
#include "core/ops/attention.h"
#include "core/parallel.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using kernels::AttentionShape;
using test::ExpectNear;
using test::MisalignedFloats;
using test::RandomVector;

size_t QueryFloats(const AttentionShape& s) {
  return s.batch * s.q_heads * s.q_len * s.head_dim;
}
size_t KeyFloats(const AttentionShape& s) {
  return s.batch * s.kv_heads * s.kv_len * s.head_dim;
}
// Query rows: the length of lse and delta.
size_t QueryRows(const AttentionShape& s) {
  return s.batch * s.q_heads * s.q_len;
}

AttentionShape MakeShape(size_t batch, size_t q_heads, size_t kv_heads,
                         size_t q_len, size_t kv_len, size_t head_dim,
                         bool causal = true) {
  AttentionShape s;
  s.batch = batch;
  s.q_heads = q_heads;
  s.kv_heads = kv_heads;
  s.q_len = q_len;
  s.kv_len = kv_len;
  s.head_dim = head_dim;
  s.q_offset = causal ? kv_len - q_len : 0;
  s.causal = causal;
  s.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return s;
}

std::string Describe(const AttentionShape& s) {
  return "B=" + std::to_string(s.batch) + " Hq=" + std::to_string(s.q_heads) +
         " Hkv=" + std::to_string(s.kv_heads) +
         " Tq=" + std::to_string(s.q_len) + " Tk=" + std::to_string(s.kv_len) +
         " D=" + std::to_string(s.head_dim) +
         " offset=" + std::to_string(s.q_offset) +
         (s.causal ? " causal" : " full");
}

// Random q, k, v and dout for `s`, each `misalign` floats off alignment.
struct Inputs {
  Inputs(const AttentionShape& s, size_t misalign, std::mt19937& rng)
      : q(QueryFloats(s), misalign, rng),
        k(KeyFloats(s), misalign, rng),
        v(KeyFloats(s), misalign, rng),
        dout(QueryFloats(s), misalign, rng) {}
  MisalignedFloats q, k, v, dout;
};

// What the kernels compute from Inputs: the forward's out and lse, the
// backward's delta workspace and dq, dk, dv.
struct Outputs {
  Outputs(const AttentionShape& s, size_t misalign)
      : out(QueryFloats(s), misalign),
        lse(QueryRows(s), misalign),
        delta(QueryRows(s), misalign),
        dq(QueryFloats(s), misalign),
        dk(KeyFloats(s), misalign),
        dv(KeyFloats(s), misalign) {}
  MisalignedFloats out, lse, delta, dq, dk, dv;
};

// The forward and the backward through the kernels, every output
// `misalign` floats off alignment.
Outputs RunKernels(const AttentionShape& s, const Inputs& in, size_t misalign) {
  Outputs o(s, misalign);
  kernels::AttentionForward(
      s, {in.q.data(), in.k.data(), in.v.data(), o.out.data(), o.lse.data()});
  kernels::AttentionBackward(
      s,
      {in.q.data(), in.k.data(), in.v.data(), o.out.data(), o.lse.data(),
       in.dout.data(), o.delta.data(), o.dq.data(), o.dk.data(), o.dv.data()});
  return o;
}

std::vector<double> ToDoubles(const MisalignedFloats& x) {
  return std::vector<double>(x.data(), x.data() + x.size());
}

// What the scalar twins compute in double from contiguous q, k, v and dout.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

// The scalar twins' forward and backward: AttentionBackwardRef reads q, k,
// v and dout only (it recomputes the probabilities).
Reference RunReference(const AttentionShape& s, const std::vector<double>& q,
                       const std::vector<double>& k,
                       const std::vector<double>& v,
                       const std::vector<double>& dout) {
  Reference r{
      std::vector<double>(QueryFloats(s)), std::vector<double>(QueryRows(s)),
      std::vector<double>(QueryFloats(s)), std::vector<double>(KeyFloats(s)),
      std::vector<double>(KeyFloats(s))};
  kernels::AttentionForwardRef<double>(
      s, {q.data(), k.data(), v.data(), r.out.data(), r.lse.data()});
  kernels::AttentionBackwardOperandsOf<double> x;
  x.q = q.data();
  x.k = k.data();
  x.v = v.data();
  x.dout = dout.data();
  x.dq = r.dq.data();
  x.dk = r.dk.data();
  x.dv = r.dv.data();
  kernels::AttentionBackwardRef<double>(s, x);
  return r;
}

// Runs the kernels on random data (every pointer shifted by `misalign`
// floats) and compares all five outputs with the double reference.
void ExpectMatchesReference(const AttentionShape& s, size_t misalign,
                            std::mt19937& rng) {
  const std::string what =
      Describe(s) + " misalign=" + std::to_string(misalign);
  const size_t nq = QueryFloats(s), nk = KeyFloats(s), rows = QueryRows(s);
  const Inputs in(s, misalign, rng);
  const Outputs o = RunKernels(s, in, misalign);

  const auto [ref_out, ref_lse, ref_dq, ref_dk, ref_dv] = RunReference(
      s, ToDoubles(in.q), ToDoubles(in.k), ToDoubles(in.v), ToDoubles(in.dout));
  // Float accumulation over D and over up to 130 keys.
  ExpectNear(o.out.data(), ref_out.data(), nq, 2e-5, 1e-4, "out " + what);
  ExpectNear(o.lse.data(), ref_lse.data(), rows, 2e-5, 1e-5, "lse " + what);
  ExpectNear(o.dq.data(), ref_dq.data(), nq, 5e-5, 1e-4, "dq " + what);
  ExpectNear(o.dk.data(), ref_dk.data(), nk, 5e-5, 1e-4, "dk " + what);
  ExpectNear(o.dv.data(), ref_dv.data(), nk, 5e-5, 1e-4, "dv " + what);
}

// A sliding window of `window` keys as a key_start: max(0, p - window + 1).
std::vector<int32_t> WindowKeyStarts(size_t batch, size_t kv_len,
                                     size_t window) {
  std::vector<int32_t> key_start;
  for (size_t b = 0; b < batch; ++b) {
    for (size_t p = 0; p < kv_len; ++p) {
      key_start.push_back(
          static_cast<int32_t>(p + 1 > window ? p + 1 - window : 0));
    }
  }
  return key_start;
}

// Document layouts of two batch rows of length t: documents of length 1
// (at the start and in the middle), starts on both sides of the 64-key tile
// boundaries and at the last position; the second row's documents straddle
// whole tiles.
std::vector<std::vector<int64_t>> PackedLayouts(size_t t) {
  std::vector<int64_t> first = {0, 1, 2, 5, 63, 64, 65, 66, 127, 129, 190};
  std::vector<int64_t> second = {0, 3, 70, 140};
  first.push_back(static_cast<int64_t>(t) - 1);
  auto keep = [t](std::vector<int64_t> starts) {
    std::vector<int64_t> kept;
    for (int64_t start : starts) {
      if (start < static_cast<int64_t>(t) &&
          (kept.empty() || start > kept.back())) {
        kept.push_back(start);
      }
    }
    return kept;
  };
  return {keep(first), keep(second)};
}

// Every output of a run, concatenated, for bitwise comparisons.
std::vector<float> AllOutputs(const Outputs& o) {
  std::vector<float> all;
  for (const MisalignedFloats* part :
       {&o.out, &o.lse, &o.delta, &o.dq, &o.dk, &o.dv}) {
    all.insert(all.end(), part->data(), part->data() + part->size());
  }
  return all;
}

ROTOR_PER_TARGET_SUITE(AttentionKernel);

// Training shapes (causal, Tq == Tk): odd lengths around the 64-row tiles,
// head dims around the vector widths, GQA groups of 1, 2 and 4.
ROTOR_PER_TARGET_TEST(AttentionKernel, CausalMatchesReference) {
  EXPECT_STREQ(kernels::AttentionTarget(), TargetName());
  std::mt19937 rng(11);
  for (size_t t : {1, 2, 7, 33, 65, 130}) {
    for (size_t dim : {2, 6, 34, 64}) {
      for (size_t group : {1, 2, 4}) {
        ExpectMatchesReference(MakeShape(2, group, 1, t, t, dim), 0, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Decoding and chunked prefill (q_offset = Tk - Tq > 0), non-causal, several
// kv heads, and misaligned pointers.
ROTOR_PER_TARGET_TEST(AttentionKernel, OffsetsFullAndMisaligned) {
  EXPECT_STREQ(kernels::AttentionTarget(), TargetName());
  std::mt19937 rng(12);
  for (size_t kv_len : {1, 7, 65, 130}) {
    for (size_t q_len : {1, 3, 33}) {
      if (q_len > kv_len) continue;
      ExpectMatchesReference(MakeShape(1, 4, 2, q_len, kv_len, 34), 0, rng);
      ExpectMatchesReference(MakeShape(1, 4, 2, q_len, kv_len, 6, false), 0,
                             rng);
      if (HasFatalFailure()) return;
    }
  }
  ExpectMatchesReference(MakeShape(1, 2, 2, 70, 33, 64, false), 0, rng);
  for (size_t misalign : test::KernelTestMisalignments()) {
    ExpectMatchesReference(MakeShape(2, 4, 2, 65, 65, 34), misalign, rng);
    ExpectMatchesReference(MakeShape(1, 2, 1, 3, 66, 7), misalign, rng);
  }
}

// A known answer: with all keys zero every score is 0, so the softmax is
// uniform over the visible keys and out_i is the mean of v_0 .. v_{offset+i};
// L_i = log(offset + i + 1).
ROTOR_PER_TARGET_TEST(AttentionKernel, ZeroKeysAverageVisibleValues) {
  const AttentionShape s = MakeShape(1, 1, 1, 70, 100, 5);
  std::mt19937 rng(13);
  const std::vector<float> q = RandomVector(QueryFloats(s), rng);
  const std::vector<float> k(KeyFloats(s), 0.0f);
  const std::vector<float> v = RandomVector(KeyFloats(s), rng);
  std::vector<float> out(QueryFloats(s)), lse(s.q_len);
  kernels::AttentionForward(
      s, {q.data(), k.data(), v.data(), out.data(), lse.data()});
  for (size_t i = 0; i < s.q_len; ++i) {
    const size_t visible = s.q_offset + i + 1;
    for (size_t e = 0; e < s.head_dim; ++e) {
      double mean = 0.0;
      for (size_t j = 0; j < visible; ++j) mean += v[j * s.head_dim + e];
      mean /= visible;
      ASSERT_NEAR(out[i * s.head_dim + e], mean, 1e-5) << "row " << i;
    }
    ASSERT_NEAR(lse[i], std::log(double(visible)), 1e-5) << "row " << i;
  }
}

// Decoding the last position with a KV cache (Tq = 1, offset = T - 1) gives
// the last row of the full causal forward. They agree to float rounding,
// not bitwise: the one-row decode tile scores keys with direct dot products,
// the full forward's 64-row tiles with the transposed key tile.
ROTOR_PER_TARGET_TEST(AttentionKernel, DecodeMatchesLastRowOfFullForward) {
  std::mt19937 rng(14);
  for (size_t t : {1, 64, 130}) {
    const AttentionShape full = MakeShape(1, 2, 1, t, t, 34);
    const AttentionShape decode = MakeShape(1, 2, 1, 1, t, 34);
    ASSERT_EQ(decode.q_offset, t - 1);
    const size_t dim = full.head_dim;
    const std::vector<float> q = RandomVector(QueryFloats(full), rng);
    const std::vector<float> k = RandomVector(KeyFloats(full), rng);
    const std::vector<float> v = RandomVector(KeyFloats(full), rng);
    std::vector<float> out(QueryFloats(full)), lse(2 * t);
    kernels::AttentionForward(
        full, {q.data(), k.data(), v.data(), out.data(), lse.data()});
    // The last query of each head, as a [1, 2, 1, D] tensor.
    std::vector<float> q_last(2 * dim), out_last(2 * dim), lse_last(2);
    for (size_t h = 0; h < 2; ++h) {
      std::copy_n(q.begin() + ((h + 1) * t - 1) * dim, dim,
                  q_last.begin() + h * dim);
    }
    kernels::AttentionForward(decode, {q_last.data(), k.data(), v.data(),
                                       out_last.data(), lse_last.data()});
    for (size_t h = 0; h < 2; ++h) {
      const size_t row = (h + 1) * t - 1;
      for (size_t e = 0; e < dim; ++e) {
        ASSERT_NEAR(out_last[h * dim + e], out[row * dim + e], 2e-6)
            << "T=" << t << " head " << h << " element " << e;
      }
      ASSERT_NEAR(lse_last[h], lse[row], 4e-6) << "T=" << t << " head " << h;
    }
  }
}

// The backward's three ways of splitting its work (attention.cc
// ChooseBackwardScheme), each against the reference: causal, with a decode
// offset, non-causal, misaligned. One thread takes one task per kv head.
ROTOR_PER_TARGET_TEST(AttentionKernel, PerKvHeadBackwardMatchesReference) {
  test::ThreadCountGuard guard(1);
  std::mt19937 rng(17);
  for (const AttentionShape& s :
       {MakeShape(4, 4, 1, 130, 130, 34), MakeShape(2, 4, 2, 33, 97, 6),
        MakeShape(1, 8, 4, 65, 70, 64, false)}) {
    ASSERT_STREQ(kernels::AttentionBackwardScheme(s), "per kv head");
    ExpectMatchesReference(s, 3, rng);
  }
}

// One kv head on two threads: one task per query head, each head's dk and dv
// kept apart and added in head order after (as SmolLM2's 3 kv heads of 3
// query heads take it on two threads).
ROTOR_PER_TARGET_TEST(AttentionKernel, PerHeadBackwardMatchesReference) {
  test::ThreadCountGuard guard(2);
  std::mt19937 rng(18);
  for (const AttentionShape& s :
       {MakeShape(1, 4, 1, 130, 130, 34), MakeShape(1, 3, 1, 33, 97, 6),
        MakeShape(1, 8, 1, 65, 70, 64, false), MakeShape(1, 9, 3, 70, 70, 7)}) {
    ASSERT_STREQ(kernels::AttentionBackwardScheme(s), "per head");
    ExpectMatchesReference(s, 1, rng);
  }
}

// Fewer query heads than threads: dq per query tile, then dk and dv per key
// tile.
ROTOR_PER_TARGET_TEST(AttentionKernel, TwoPassBackwardMatchesReference) {
  std::mt19937 rng(19);
  {
    test::ThreadCountGuard guard(2);
    const AttentionShape s = MakeShape(1, 1, 1, 130, 130, 34);
    ASSERT_STREQ(kernels::AttentionBackwardScheme(s), "two passes");
    ExpectMatchesReference(s, 0, rng);
  }
  test::ThreadCountGuard guard(4);
  for (const AttentionShape& s :
       {MakeShape(1, 2, 1, 130, 130, 34), MakeShape(1, 2, 1, 33, 97, 6),
        MakeShape(1, 2, 1, 65, 70, 64, false)}) {
    ASSERT_STREQ(kernels::AttentionBackwardScheme(s), "two passes");
    ExpectMatchesReference(s, 3, rng);
  }
}

// No float is reduced across threads, so results are bitwise identical run
// to run at 2 threads, and equal to the 1-thread results. The thread counts
// pick different schemes: one kv head of 4 query heads takes one task per
// kv head at 1 thread and one per query head at 2; one of 2 query heads
// takes two passes at 4 threads. So this also checks that all three give
// the same bits. The same with packed documents.
ROTOR_PER_TARGET_TEST(AttentionKernel, BitwiseDeterministic) {
  const std::vector<int32_t> documents =
      DocumentKeyStarts(PackedLayouts(200), 200);
  for (const int32_t* key_start :
       {static_cast<const int32_t*>(nullptr), documents.data()}) {
    const std::string what = key_start ? "documents" : "no mask";
    for (size_t q_heads : {4, 2}) {
      const int threads = q_heads == 4 ? 2 : 4;
      AttentionShape s = MakeShape(1, q_heads, 1, 200, 200, 34);
      s.key_start = key_start;
      std::mt19937 rng(15);
      const Inputs in(s, 0, rng);
      auto run = [&] { return AllOutputs(RunKernels(s, in, 0)); };
      const std::vector<float> first = test::RunAtThreads(threads, run);
      EXPECT_TRUE(first == test::RunAtThreads(threads, run))
          << "two runs at " << threads << " threads differ, " << what;
      EXPECT_TRUE(first == test::RunAtThreads(1, run))
          << "1 and " << threads << " threads differ, " << what;
    }
  }
}

// Packed documents (a per-query lower bound on the keys) against the
// reference: training shapes around the tile sizes, GQA groups 1, 2 and 4,
// head dims around the vector widths, the three backward schemes (per kv
// head at one thread; one kv head of 4 query heads per head at two threads,
// of 2 in two passes at four), and misaligned pointers.
ROTOR_PER_TARGET_TEST(AttentionKernel, DocumentMaskMatchesReference) {
  std::mt19937 rng(18);
  for (size_t t : {1, 2, 7, 65, 130, 200}) {
    const std::vector<int32_t> key_start =
        DocumentKeyStarts(PackedLayouts(t), t);
    for (size_t dim : {2, 6, 34, 64}) {
      for (size_t group : {1, 2, 4}) {
        AttentionShape s = MakeShape(2, group, 1, t, t, dim);
        s.key_start = key_start.data();
        ExpectMatchesReference(s, 0, rng);
        if (HasFatalFailure()) return;
      }
    }
    AttentionShape one_pass = MakeShape(2, 4, 2, t, t, 34);
    one_pass.key_start = key_start.data();
    // One kv head in all (the batch row of the first layout).
    AttentionShape per_head = MakeShape(1, 4, 1, t, t, 34);
    per_head.key_start = key_start.data();
    AttentionShape two_passes = MakeShape(1, 2, 1, t, t, 34);
    two_passes.key_start = key_start.data();
    for (size_t misalign : test::KernelTestMisalignments()) {
      {
        test::ThreadCountGuard guard(1);
        ExpectMatchesReference(one_pass, misalign, rng);
      }
      {
        test::ThreadCountGuard guard(2);
        ExpectMatchesReference(per_head, misalign, rng);
      }
      test::ThreadCountGuard guard(4);
      ExpectMatchesReference(two_passes, misalign, rng);
    }
  }
}

// The lower bound with a query offset (chunked prefill, decoding: the one-
// and two-row tiles that score keys directly) and as a sliding window,
// which is the same machinery: key_start[p] = p - window + 1.
ROTOR_PER_TARGET_TEST(AttentionKernel, KeyLowerBoundWithOffsetsAndWindows) {
  std::mt19937 rng(19);
  for (size_t kv_len : {7, 65, 130}) {
    const std::vector<int32_t> documents =
        DocumentKeyStarts(PackedLayouts(kv_len), kv_len);
    for (size_t q_len : {1, 2, 3, 33}) {
      if (q_len > kv_len) continue;
      AttentionShape s = MakeShape(2, 4, 2, q_len, kv_len, 34);
      s.key_start = documents.data();
      ExpectMatchesReference(s, 0, rng);
      if (HasFatalFailure()) return;
    }
    for (size_t window : {1, 5, 64, 100}) {
      const std::vector<int32_t> windowed = WindowKeyStarts(1, kv_len, window);
      AttentionShape s = MakeShape(1, 2, 1, kv_len, kv_len, 6);
      s.key_start = windowed.data();
      ExpectMatchesReference(s, 0, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// A row that is one document (key_start all 0) takes the exact path of no
// lower bound: bitwise the same outputs, in the backward's schemes (one kv
// head: per kv head at one thread, per head at two).
ROTOR_PER_TARGET_TEST(AttentionKernel, OneDocumentEqualsUnmaskedBitwise) {
  std::mt19937 rng(20);
  for (int threads : {1, 2}) {
    const AttentionShape plain = MakeShape(1, 4, 1, 130, 130, 34);
    const Inputs in(plain, 0, rng);
    const std::vector<int32_t> zeros(plain.batch * plain.kv_len, 0);
    AttentionShape one_document = plain;
    one_document.key_start = zeros.data();
    const std::vector<float> expected = test::RunAtThreads(
        threads, [&] { return AllOutputs(RunKernels(plain, in, 0)); });
    EXPECT_TRUE(expected == test::RunAtThreads(threads,
                                               [&] {
                                                 return AllOutputs(RunKernels(
                                                     one_document, in, 0));
                                               }))
        << threads << " threads";
  }
}

// A document that starts on a key-tile boundary, packed after another one,
// gives bitwise what it gives alone: its query tiles and key tiles line up
// with those of the document alone, and the keys before it are skipped
// (not added as zeros). Checked for the second of two documents, 64 + 70
// positions, with one kv head: at 1 thread (the per-kv-head backward) and
// at 2 (per head).
ROTOR_PER_TARGET_TEST(AttentionKernel, TileAlignedDocumentEqualsAloneBitwise) {
  constexpr size_t kFirst = 64, kSecond = 70, kT = kFirst + kSecond, kDim = 34;
  std::mt19937 rng(21);
  const std::vector<int32_t> key_start = DocumentKeyStarts({{0, kFirst}}, kT);
  AttentionShape packed = MakeShape(1, 4, 1, kT, kT, kDim);
  packed.key_start = key_start.data();
  const AttentionShape alone = MakeShape(1, 4, 1, kSecond, kSecond, kDim);
  const Inputs in(packed, 0, rng);
  // The second document's rows of each of `heads` heads.
  auto second_document = [&](const MisalignedFloats& x, size_t heads) {
    MisalignedFloats part(heads * kSecond * kDim, 0);
    for (size_t h = 0; h < heads; ++h) {
      std::copy_n(x.data() + (h * kT + kFirst) * kDim, kSecond * kDim,
                  part.data() + h * kSecond * kDim);
    }
    return part;
  };
  Inputs alone_in(alone, 0, rng);
  alone_in.q = second_document(in.q, 4);
  alone_in.k = second_document(in.k, 1);
  alone_in.v = second_document(in.v, 1);
  alone_in.dout = second_document(in.dout, 4);
  for (int threads : {1, 2}) {
    test::ThreadCountGuard guard(threads);
    const Outputs whole = RunKernels(packed, in, 0);
    const Outputs expected = RunKernels(alone, alone_in, 0);
    auto expect_same = [&](const MisalignedFloats& w, const MisalignedFloats& e,
                           size_t heads, const char* name) {
      EXPECT_TRUE(ToDoubles(second_document(w, heads)) == ToDoubles(e))
          << name << " at " << threads << " threads";
    };
    expect_same(whole.out, expected.out, 4, "out");
    expect_same(whole.dq, expected.dq, 4, "dq");
    expect_same(whole.dk, expected.dk, 1, "dk");
    expect_same(whole.dv, expected.dv, 1, "dv");
  }
}

// Documents packed into a row never interact: with the mask, each document's
// outputs and gradients are the reference's for that document alone (in
// double, so to rounding), and the masked reference is checked against
// itself run per document. Gradients of keys and values of one document
// come only from its own queries.
TEST(AttentionReference, PackedDocumentsEqualDocumentsAlone) {
  const std::vector<int64_t> starts = {0, 1, 4, 9};
  constexpr size_t kT = 12, kDim = 3, kQHeads = 2, kKvHeads = 1;
  const std::vector<int32_t> key_start = DocumentKeyStarts({starts}, kT);
  AttentionShape packed = MakeShape(1, kQHeads, kKvHeads, kT, kT, kDim);
  packed.key_start = key_start.data();
  std::mt19937 rng(22);
  auto random = [&rng](size_t n) {
    const std::vector<float> f = RandomVector(n, rng);
    return std::vector<double>(f.begin(), f.end());
  };
  const std::vector<double> q = random(kQHeads * kT * kDim),
                            k = random(kKvHeads * kT * kDim),
                            v = random(kKvHeads * kT * kDim),
                            dout = random(kQHeads * kT * kDim);
  const auto [out, lse, dq, dk, dv] = RunReference(packed, q, k, v, dout);
  for (size_t d = 0; d < starts.size(); ++d) {
    const size_t begin = static_cast<size_t>(starts[d]);
    const size_t len =
        (d + 1 < starts.size() ? static_cast<size_t>(starts[d + 1]) : kT) -
        begin;
    const AttentionShape alone =
        MakeShape(1, kQHeads, kKvHeads, len, len, kDim);
    // Rows begin .. begin + len - 1 of every head of x.
    auto rows = [&](const std::vector<double>& x, size_t heads) {
      std::vector<double> part;
      for (size_t h = 0; h < heads; ++h) {
        part.insert(part.end(), x.begin() + (h * kT + begin) * kDim,
                    x.begin() + (h * kT + begin + len) * kDim);
      }
      return part;
    };
    const auto [a_out, a_lse, a_dq, a_dk, a_dv] =
        RunReference(alone, rows(q, kQHeads), rows(k, kKvHeads),
                     rows(v, kKvHeads), rows(dout, kQHeads));
    const std::string what = "document " + std::to_string(d);
    ExpectNear(rows(out, kQHeads).data(), a_out.data(), a_out.size(), 1e-14,
               1e-12, "out " + what);
    ExpectNear(rows(dq, kQHeads).data(), a_dq.data(), a_dq.size(), 1e-14, 1e-12,
               "dq " + what);
    ExpectNear(rows(dk, kKvHeads).data(), a_dk.data(), a_dk.size(), 1e-14,
               1e-12, "dk " + what);
    ExpectNear(rows(dv, kKvHeads).data(), a_dv.data(), a_dv.size(), 1e-14,
               1e-12, "dv " + what);
  }
}

// The scalar reference's backward is the exact derivative of its forward:
// complex-step gradient of L = sum(dout * out) with respect to every element
// of q, k and v, in double, causal with a decode offset and non-causal.
TEST(AttentionReference, BackwardMatchesComplexStep) {
  // Documents in both batch rows, the second row's first document of length
  // 1 (the queries are positions 2 .. 4).
  const std::vector<int32_t> documents =
      DocumentKeyStarts({{0, 3}, {0, 1, 2, 4}}, 5);
  for (int mask = 0; mask < 3; ++mask) {
    const bool causal = mask != 1;
    AttentionShape s = MakeShape(2, 4, 2, 3, 5, 3, causal);
    if (mask == 2) s.key_start = documents.data();
    const size_t nq = QueryFloats(s), nk = KeyFloats(s);
    std::mt19937 rng(16);
    std::vector<double> x(nq + 2 * nk), dout(nq);
    for (double& value : x) value = RandomVector(1, rng, -2.0f, 2.0f)[0];
    for (double& value : dout) value = RandomVector(1, rng)[0];

    using Complex = std::complex<double>;
    auto forward = [&](const std::vector<Complex>& z) {
      std::vector<Complex> out(nq), lse(QueryRows(s));
      kernels::AttentionForwardRef<Complex>(
          s, {z.data(), z.data() + nq, z.data() + nq + nk, out.data(),
              lse.data()});
      return out;
    };
    const std::vector<double> expected =
        test::ComplexStepGradientOfWeightedSum(forward, x, dout);

    std::vector<double> grads(nq + 2 * nk);
    kernels::AttentionBackwardOperandsOf<double> operands;
    operands.q = x.data();
    operands.k = x.data() + nq;
    operands.v = x.data() + nq + nk;
    operands.dout = dout.data();
    operands.dq = grads.data();
    operands.dk = grads.data() + nq;
    operands.dv = grads.data() + nq + nk;
    kernels::AttentionBackwardRef<double>(s, operands);
    ExpectNear(grads.data(), expected.data(), grads.size(), 1e-12, 1e-10,
               std::string("d(q,k,v) ") + (mask == 2 ? "documents"
                                           : causal  ? "causal"
                                                     : "full"));
  }
}

// Memory at T = 4096. Besides their inputs, outputs, lse and the delta
// workspace (both [B, Hq, T]), the kernels allocate only one task scratch
// per running task, AttentionTaskScratchFloats(D) floats (the function sizes
// that allocation), which does not depend on T. So the extra memory is
// O(B Hq T + threads D^2) instead of the O(B Hq T^2) of materialised scores:
// at B = 1, Hq = 8, D = 64 it must stay below the size of q itself, while
// one head's score matrix alone would be 64 MiB.
// (tests/core/ops/attention_test.cc measures the op's peak tensor memory.) The
// forward + backward then runs at that length (one small head, to keep the test
// fast) and is checked on rows the reference can compute without a T x T
// matrix.
TEST(AttentionKernelMemory, LongSequenceUsesLinearMemory) {
  constexpr size_t kT = 4096;
  const AttentionShape train = MakeShape(1, 8, 8, kT, kT, 64);
  const size_t extra_floats =
      2 * train.batch * train.q_heads * kT +
      static_cast<size_t>(NumThreads()) *
          kernels::AttentionTaskScratchFloats(train.head_dim);
  EXPECT_LT(extra_floats, QueryFloats(train));
  EXPECT_GT(kT * kT, 100 * extra_floats);

  const AttentionShape s = MakeShape(1, 1, 1, kT, kT, 8);
  const size_t dim = s.head_dim;
  std::mt19937 rng(17);
  const Inputs in(s, 0, rng);
  const Outputs o = RunKernels(s, in, 0);

  // The last query alone (decode shape) through the reference gives the
  // last rows of out, lse and dq (dq_i depends only on query i's row).
  const AttentionShape last = MakeShape(1, 1, 1, 1, kT, dim);
  const std::vector<double> q_last(in.q.data() + (kT - 1) * dim,
                                   in.q.data() + kT * dim);
  const std::vector<double> dout_last(in.dout.data() + (kT - 1) * dim,
                                      in.dout.data() + kT * dim);
  const auto [ref_out, ref_lse, ref_dq, ref_dk, ref_dv] =
      RunReference(last, q_last, ToDoubles(in.k), ToDoubles(in.v), dout_last);
  ExpectNear(o.out.data() + (kT - 1) * dim, ref_out.data(), dim, 1e-5, 1e-4,
             "last row of out");
  ExpectNear(o.lse.data() + kT - 1, ref_lse.data(), 1, 1e-5, 1e-5, "last lse");
  ExpectNear(o.dq.data() + (kT - 1) * dim, ref_dq.data(), dim, 1e-5, 1e-4,
             "last row of dq");
  // Only the last query sees the last key: dv_{T-1} = p dout_{T-1} and
  // dk_{T-1} = scale ds q_{T-1}, the reference's last rows.
  ExpectNear(o.dv.data() + (kT - 1) * dim, ref_dv.data() + (kT - 1) * dim, dim,
             1e-6, 1e-4, "last row of dv");
  ExpectNear(o.dk.data() + (kT - 1) * dim, ref_dk.data() + (kT - 1) * dim, dim,
             1e-6, 1e-4, "last row of dk");
}

// ---------------------------------------------------------------------------
// Strided operands and RoPE inside the kernels.

// A [batch, heads, len, D] operand stored token-major inside rows of
// `width` floats (width >= heads * D; the extra floats are padding another
// operand might own, e.g. a fused qkv projection) at channel `column`.
struct TokenMajor {
  size_t batch, heads, len, dim, width, column;
  size_t floats() const { return batch * len * width; }
  kernels::AttentionStrides strides() const {
    return {len * width, dim, width};
  }
  size_t at(size_t b, size_t h, size_t t) const {
    return b * len * width + t * width + column + h * dim;
  }
  // Contiguous [batch, heads, len, D] copy of the operand at `x`.
  std::vector<float> Gather(const float* x) const {
    std::vector<float> out;
    for (size_t b = 0; b < batch; ++b) {
      for (size_t h = 0; h < heads; ++h) {
        for (size_t t = 0; t < len; ++t) {
          out.insert(out.end(), x + at(b, h, t), x + at(b, h, t) + dim);
        }
      }
    }
    return out;
  }
};

// One training-shaped case: the kernels on token-major operands (q, k and v
// side by side in one fused row of width (q_heads + 2 kv_heads) * D + 3,
// out and dout in their own rows), with or without RoPE, against the
// separate path: contiguous copies, RopeForward, the kernels without RoPE
// and RopeBackward. Every output must be bitwise equal.
struct RopeCase {
  size_t batch, q_heads, kv_heads, len, dim;
  size_t rotary_dim;  // 0: no RoPE
  kernels::RopeLayout layout = kernels::RopeLayout::kSplitHalf;
  bool documents = false;  // packed documents, positions restarting
  int64_t offset = 0;      // RoPE position of token 0 (without documents)
  bool bf16 = false;       // bf16 tile products (AttentionShape::bf16)
};

void ExpectRopeInsideEqualsSeparate(const RopeCase& c, size_t misalign,
                                    std::mt19937& rng) {
  const size_t width = (c.q_heads + 2 * c.kv_heads) * c.dim + 3;
  const TokenMajor qm{c.batch, c.q_heads, c.len, c.dim, width, 0};
  const TokenMajor km{c.batch, c.kv_heads, c.len,
                      c.dim,   width,      c.q_heads * c.dim};
  const TokenMajor vm{c.batch, c.kv_heads, c.len,
                      c.dim,   width,      (c.q_heads + c.kv_heads) * c.dim};
  const TokenMajor om{c.batch, c.q_heads, c.len, c.dim, c.q_heads * c.dim, 0};
  const std::string what =
      "B=" + std::to_string(c.batch) + " Hq=" + std::to_string(c.q_heads) +
      " Hkv=" + std::to_string(c.kv_heads) + " T=" + std::to_string(c.len) +
      " D=" + std::to_string(c.dim) + " r=" + std::to_string(c.rotary_dim) +
      (c.layout == kernels::RopeLayout::kSplitHalf ? " split"
                                                   : " interleaved") +
      (c.documents ? " documents" : "") +
      " misalign=" + std::to_string(misalign);
  const MisalignedFloats qkv(qm.floats(), misalign, rng);
  const MisalignedFloats dout(om.floats(), misalign, rng);

  std::vector<int32_t> key_start;
  kernels::RopePositions positions;
  positions.offset = c.offset;
  if (c.documents) {
    key_start = DocumentKeyStarts(PackedLayouts(c.len), c.len);
    key_start.resize(c.batch * c.len, 0);
    positions.offset = 0;
    for (size_t i = 0; i < key_start.size(); ++i) {
      positions.ids.push_back(static_cast<int64_t>(i % c.len) - key_start[i]);
    }
  }
  std::shared_ptr<const kernels::RopeRows> rows;
  if (c.rotary_dim > 0) {
    kernels::RopeTable table = kernels::RopeTable::Default(
        static_cast<int64_t>(c.rotary_dim), 10000.0);
    rows = table.Rows(c.offset + static_cast<int64_t>(c.len));
  }

  AttentionShape s =
      MakeShape(c.batch, c.q_heads, c.kv_heads, c.len, c.len, c.dim);
  s.bf16 = c.bf16;
  if (!key_start.empty()) s.key_start = key_start.data();

  // The separate path, contiguous throughout.
  std::vector<float> q = qm.Gather(qkv.data()), k = km.Gather(qkv.data()),
                     v = vm.Gather(qkv.data()), g = om.Gather(dout.data());
  kernels::RopeShape rope_shape;
  rope_shape.batch = static_cast<int64_t>(c.batch);
  rope_shape.seq = static_cast<int64_t>(c.len);
  rope_shape.head_dim = static_cast<int64_t>(c.dim);
  rope_shape.rotary_dim = static_cast<int64_t>(c.rotary_dim);
  rope_shape.layout = c.layout;
  auto in_place = [&](std::vector<float>& x, size_t heads) {
    kernels::RopeOperand op;
    op.src = op.dst = x.data();
    op.src_strides = op.dst_strides = kernels::ContiguousRopeStrides(
        static_cast<int64_t>(heads), static_cast<int64_t>(c.len),
        static_cast<int64_t>(c.dim));
    op.heads = static_cast<int64_t>(heads);
    return op;
  };
  if (rows) {
    kernels::RopeForward(*rows, rope_shape, positions, in_place(q, c.q_heads),
                         in_place(k, c.kv_heads));
  }
  std::vector<float> out(q.size()), lse(c.batch * c.q_heads * c.len),
      delta(lse.size()), dq(q.size()), dk(k.size()), dv(v.size());
  kernels::AttentionForward(
      s, {q.data(), k.data(), v.data(), out.data(), lse.data()});
  kernels::AttentionBackward(
      s, {q.data(), k.data(), v.data(), out.data(), lse.data(), g.data(),
          delta.data(), dq.data(), dk.data(), dv.data()});
  if (rows) {
    kernels::RopeBackward(*rows, rope_shape, positions, in_place(dq, c.q_heads),
                          in_place(dk, c.kv_heads),
                          /*accumulate=*/false);
  }

  // Token-major, RoPE inside.
  AttentionShape fused = s;
  fused.q_strides = qm.strides();
  fused.k_strides = km.strides();
  fused.v_strides = vm.strides();
  fused.out_strides = om.strides();
  if (rows) {
    fused.rope.rows = rows.get();
    fused.rope.layout = c.layout;
    fused.rope.rotary_dim = c.rotary_dim;
    fused.rope.positions = &positions;
  }
  const float* base = qkv.data();
  MisalignedFloats f_out(om.floats(), misalign, 7.0f);
  MisalignedFloats f_lse(lse.size(), misalign), f_delta(lse.size(), misalign);
  MisalignedFloats f_dqkv(qm.floats(), misalign, 7.0f);
  kernels::AttentionForward(
      fused, {base + qm.column, base + km.column, base + vm.column,
              f_out.data(), f_lse.data()});
  float* dqkv = f_dqkv.data();
  kernels::AttentionBackward(
      fused, {base + qm.column, base + km.column, base + vm.column,
              f_out.data(), f_lse.data(), dout.data(), f_delta.data(),
              dqkv + qm.column, dqkv + km.column, dqkv + vm.column});
  EXPECT_TRUE(om.Gather(f_out.data()) == out) << "out " << what;
  EXPECT_TRUE(std::vector<float>(f_lse.data(), f_lse.data() + lse.size()) ==
              lse)
      << "lse " << what;
  EXPECT_TRUE(qm.Gather(dqkv) == dq) << "dq " << what;
  EXPECT_TRUE(km.Gather(dqkv) == dk) << "dk " << what;
  EXPECT_TRUE(vm.Gather(dqkv) == dv) << "dv " << what;
  // The padding of the fused gradient rows is left as it was.
  for (size_t row = 0; row < c.batch * c.len; ++row) {
    for (size_t e = width - 3; e < width; ++e) {
      ASSERT_EQ(dqkv[row * width + e], 7.0f) << "padding written, " << what;
    }
  }
}

// Token-major strided operands without RoPE: the same bits as contiguous.
ROTOR_PER_TARGET_TEST(AttentionKernel, StridedOperandsEqualContiguous) {
  std::mt19937 rng(31);
  for (size_t t : {1, 3, 65, 130}) {
    for (size_t dim : {6, 34}) {
      ExpectRopeInsideEqualsSeparate({2, 4, 2, t, t == 1 ? 6 : dim, 0}, 1, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// RoPE inside the kernels against RopeForward + attention + RopeBackward,
// bitwise: both layouts, partial rotary dims, grouped-query heads, lengths
// of 1 and 2 (the short path), across the 64-row tiles, position offsets,
// packed documents with restarting positions, the three backward schemes
// (per kv head, per head and two passes) and misaligned pointers.
ROTOR_PER_TARGET_TEST(AttentionKernel, RopeInsideEqualsSeparateKernels) {
  using kernels::RopeLayout;
  std::mt19937 rng(32);
  for (RopeLayout layout : {RopeLayout::kSplitHalf, RopeLayout::kInterleaved}) {
    for (size_t t : {1, 2, 3, 64, 65, 130}) {
      for (size_t misalign : {0, 1}) {
        ExpectRopeInsideEqualsSeparate({2, 4, 2, t, 34, 34, layout}, misalign,
                                       rng);
        ExpectRopeInsideEqualsSeparate({1, 3, 1, t, 64, 64, layout}, misalign,
                                       rng);
        // Partial rotary (16 of 34 channels) and odd rotary halves.
        ExpectRopeInsideEqualsSeparate({2, 2, 2, t, 34, 16, layout}, misalign,
                                       rng);
        ExpectRopeInsideEqualsSeparate({1, 2, 1, t, 6, 6, layout, false, 5},
                                       misalign, rng);
        ExpectRopeInsideEqualsSeparate({2, 4, 2, t, 34, 34, layout, true},
                                       misalign, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
  // The other schemes: at two threads per kv head (4 kv heads) and per
  // head (1 kv head), at four two passes (1 kv head of 2 query heads).
  test::RunAtThreads(2, [&] {
    ExpectRopeInsideEqualsSeparate({2, 4, 2, 130, 34, 34}, 0, rng);
    ExpectRopeInsideEqualsSeparate({1, 4, 1, 130, 34, 34}, 0, rng);
    ExpectRopeInsideEqualsSeparate(
        {1, 4, 1, 130, 34, 34, RopeLayout::kSplitHalf, true}, 0, rng);
    return 0;
  });
  test::RunAtThreads(4, [&] {
    ExpectRopeInsideEqualsSeparate({1, 2, 1, 130, 34, 34}, 0, rng);
    ExpectRopeInsideEqualsSeparate(
        {1, 2, 1, 130, 34, 34, RopeLayout::kSplitHalf, true}, 0, rng);
    return 0;
  });
}

// RoPE inside attention against the double-precision scalar twins composed:
// RopeForwardRef, then AttentionForwardRef and AttentionBackwardRef, then
// RopeBackwardRef.
ROTOR_PER_TARGET_TEST(AttentionKernel, RopeInsideMatchesReference) {
  std::mt19937 rng(33);
  for (size_t t : {2, 65, 130}) {
    const size_t batch = 2, hq = 4, hkv = 2, dim = 34, rotary = 34;
    AttentionShape s = MakeShape(batch, hq, hkv, t, t, dim);
    const Inputs in(s, 1, rng);
    kernels::RopeTable table = kernels::RopeTable::Default(rotary, 10000.0);
    const auto rows = table.Rows(static_cast<int64_t>(t));
    const kernels::RopePositions positions;
    s.rope.rows = rows.get();
    s.rope.rotary_dim = rotary;
    s.rope.positions = &positions;
    const Outputs o = RunKernels(s, in, 1);

    kernels::RopeShape rope_shape;
    rope_shape.batch = batch;
    rope_shape.seq = static_cast<int64_t>(t);
    rope_shape.head_dim = dim;
    rope_shape.rotary_dim = rotary;
    const std::vector<double> table_ref = kernels::RopeRowsRef<double>(
        table.inv_freq(), 1.0, static_cast<int64_t>(t));
    auto rotate = [&](const std::vector<double>& x, size_t heads,
                      bool inverse) {
      std::vector<double> y(x.size());
      kernels::RopeOperandRef<double> op;
      op.src = x.data();
      op.dst = y.data();
      op.heads = static_cast<int64_t>(heads);
      op.src_strides = op.dst_strides = kernels::ContiguousRopeStrides(
          op.heads, static_cast<int64_t>(t), dim);
      if (inverse) {
        kernels::RopeBackwardRef(table_ref.data(), rope_shape, positions, op,
                                 /*accumulate=*/false);
      } else {
        kernels::RopeForwardRef(table_ref.data(), rope_shape, positions, op);
      }
      return y;
    };
    const std::vector<double> q = rotate(ToDoubles(in.q), hq, false);
    const std::vector<double> k = rotate(ToDoubles(in.k), hkv, false);
    const std::vector<double> v = ToDoubles(in.v), dout = ToDoubles(in.dout);
    AttentionShape plain = s;
    plain.rope = kernels::AttentionRope();
    auto [out, lse, dq, dk, dv] = RunReference(plain, q, k, v, dout);
    dq = rotate(dq, hq, true);
    dk = rotate(dk, hkv, true);
    const std::string what = "T=" + std::to_string(t);
    ExpectNear(o.out.data(), out.data(), out.size(), 2e-5, 1e-4, "out " + what);
    ExpectNear(o.lse.data(), lse.data(), lse.size(), 2e-5, 1e-5, "lse " + what);
    ExpectNear(o.dq.data(), dq.data(), dq.size(), 5e-5, 1e-4, "dq " + what);
    ExpectNear(o.dk.data(), dk.data(), dk.size(), 5e-5, 1e-4, "dk " + what);
    ExpectNear(o.dv.data(), dv.data(), dv.size(), 5e-5, 1e-4, "dv " + what);
  }
}

// RoPE inside is for causal self-attention: anything else is refused.
TEST(AttentionKernelRope, RefusesDecodingShapes) {
  kernels::RopeTable table = kernels::RopeTable::Default(4, 10000.0);
  const auto rows = table.Rows(8);
  const kernels::RopePositions positions;
  AttentionShape s = MakeShape(1, 1, 1, 2, 6, 4);  // q_offset 4
  s.rope.rows = rows.get();
  s.rope.rotary_dim = 4;
  s.rope.positions = &positions;
  std::vector<float> q(8), k(24), v(24), out(8), lse(2);
  EXPECT_THROW(kernels::AttentionForward(
                   s, {q.data(), k.data(), v.data(), out.data(), lse.data()}),
               Error);
  // Positions past the end of the table's rows.
  s = MakeShape(1, 1, 1, 2, 2, 4);
  s.rope.rows = rows.get();
  s.rope.rotary_dim = 4;
  kernels::RopePositions far;
  far.offset = rows->num_positions();
  s.rope.positions = &far;
  EXPECT_THROW(kernels::AttentionForward(
                   s, {q.data(), k.data(), v.data(), out.data(), lse.data()}),
               Error);
}

// ---- bf16 tile products (AttentionShape::bf16) -----------------------------

// The bound bf16 tiles are held to, from bfloat16's 8 significant bits (unit
// roundoff u = 2^-8) and float32's 24 (2^-24):
// - a score s_ij = scale <q_i, k_j> from rounded operands is off by at most
//   E_i = (2u + u^2 + D 2^-24) scale max_j sum_d |q_id k_jd|;
// - so each weight w_ij = exp(s_ij - L_i) (numerator and normaliser) is off
//   by a factor within exp(+-2 E_i), by (1 + e)^2 more from the tiles' exp
//   (ExpForBf16, e = 2^-17), and rounding it for P V by (1 + u);
// - rounding v_j adds u |v_j|, and the float32 sums over the keys and D
//   (n + D) 2^-24.
// Since the weights of a row sum to 1, out_i is off by at most
//   (exp(2 E_i) (1 + e)^2 (1 + u)^2 (1 + (n + D) 2^-24) - 1) max_j |v_j|.
// A gradient passes through more roundings (the operands of dp and ds, and
// of its own product), each of relative u, on top of the weights' error:
// it is held to 2 E + 8u of its largest entry, with E the largest E_i.
ROTOR_PER_TARGET_TEST(AttentionKernel, Bf16WithinBfloat16sBound) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(71);
  const double u = std::ldexp(1.0, -8), f32 = std::ldexp(1.0, -24);
  const double exp_error = std::ldexp(1.0, -17);
  for (AttentionShape s :
       {MakeShape(1, 4, 2, 130, 130, 64), MakeShape(2, 2, 2, 70, 70, 33),
        MakeShape(1, 2, 1, 2, 97, 64), MakeShape(1, 2, 2, 65, 65, 72, false)}) {
    s.bf16 = true;
    const std::string what = Describe(s);
    const Inputs in(s, 1, rng);
    const Outputs o = RunKernels(s, in, 1);
    const std::vector<double> q = ToDoubles(in.q), k = ToDoubles(in.k),
                              v = ToDoubles(in.v), dout = ToDoubles(in.dout);
    const size_t nq = QueryFloats(s), nk = KeyFloats(s), dim = s.head_dim;
    const auto [out, lse, dq, dk, dv] = RunReference(s, q, k, v, dout);
    double v_max = 0.0, worst_e = 0.0, out_worst = 0.0;
    for (double x : v) v_max = std::max(v_max, std::fabs(x));
    // q and k rows are contiguous per head; every query's keys are its kv
    // head's.
    for (size_t row = 0; row < QueryRows(s); ++row) {
      const size_t head = row / s.q_len;
      const size_t kv_head = (head / s.q_heads) * s.kv_heads +
                             (head % s.q_heads) / (s.q_heads / s.kv_heads);
      double largest = 0.0;
      for (size_t j = 0; j < s.kv_len; ++j) {
        double sum = 0.0;
        for (size_t d = 0; d < dim; ++d) {
          sum += std::fabs(q[row * dim + d] *
                           k[(kv_head * s.kv_len + j) * dim + d]);
        }
        largest = std::max(largest, sum);
      }
      const double e = (2 * u + u * u + dim * f32) * s.scale * largest;
      worst_e = std::max(worst_e, e);
      const double bound =
          (std::exp(2 * e) * (1 + exp_error) * (1 + exp_error) * (1 + u) *
               (1 + u) * (1 + (s.kv_len + dim) * f32) -
           1) *
          v_max;
      for (size_t d = 0; d < dim; ++d) {
        const double error =
            std::fabs(o.out.data()[row * dim + d] - out[row * dim + d]);
        ASSERT_LE(error, bound) << "out row " << row << ", " << what;
        out_worst = std::max(out_worst, error);
      }
    }
    // The tiles did run in bf16: the error is far above float32's.
    EXPECT_GT(out_worst, 1e-4) << what;
    auto expect_gradient = [&](const char* name, const MisalignedFloats& got,
                               const std::vector<double>& want) {
      double largest = 0.0, worst = 0.0;
      for (double x : want) largest = std::max(largest, std::fabs(x));
      for (size_t i = 0; i < want.size(); ++i) {
        worst = std::max(worst, std::fabs(got.data()[i] - want[i]));
      }
      EXPECT_LE(worst, (2 * worst_e + 8 * u) * largest) << name << ", " << what;
    };
    expect_gradient("dq", o.dq, dq);
    expect_gradient("dk", o.dk, dk);
    expect_gradient("dv", o.dv, dv);
  }
}

// bf16 keeps the promise of equal bits: 1, 2 and 4 threads (the three
// backward schemes, as in BitwiseDeterministic), with and without packed
// documents.
ROTOR_PER_TARGET_TEST(AttentionKernel, Bf16BitwiseAtAnyThreadCount) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  const std::vector<int32_t> documents =
      DocumentKeyStarts(PackedLayouts(200), 200);
  for (const int32_t* key_start :
       {static_cast<const int32_t*>(nullptr), documents.data()}) {
    for (size_t q_heads : {4, 2}) {
      const int threads = q_heads == 4 ? 2 : 4;
      AttentionShape s = MakeShape(1, q_heads, 1, 200, 200, 34);
      s.key_start = key_start;
      s.bf16 = true;
      std::mt19937 rng(16);
      const Inputs in(s, 0, rng);
      auto run = [&] { return AllOutputs(RunKernels(s, in, 0)); };
      const std::vector<float> first = test::RunAtThreads(threads, run);
      EXPECT_TRUE(first == test::RunAtThreads(1, run))
          << "1 and " << threads << " threads differ"
          << (key_start ? ", documents" : "");
      s.bf16 = false;
      EXPECT_FALSE(first == test::RunAtThreads(1, run))
          << "bf16 and float32 tiles gave the same bits";
    }
  }
}

// A value no query can see never reaches the output in bf16, even a NaN:
// queries 0..2 see keys 0..2 of 8 (q_offset 0), so the shared value tile
// holds rows the forward's last, odd pair would meet; out equals that of
// the same keys with those values zeroed, bitwise.
ROTOR_PER_TARGET_TEST(AttentionKernel, Bf16HiddenValuesNeverReachTheOutput) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  AttentionShape s = MakeShape(1, 2, 1, 3, 8, 16);
  s.q_offset = 0;
  s.bf16 = true;
  std::mt19937 rng(73);
  Inputs in(s, 0, rng);
  Inputs zeroed = in;
  for (size_t key = 3; key < s.kv_len; ++key) {
    for (size_t d = 0; d < s.head_dim; ++d) {
      in.v.data()[key * s.head_dim + d] = std::nanf("");
      zeroed.v.data()[key * s.head_dim + d] = 0.0f;
    }
  }
  Outputs with_nan(s, 0), with_zero(s, 0);
  kernels::AttentionForward(s, {in.q.data(), in.k.data(), in.v.data(),
                                with_nan.out.data(), with_nan.lse.data()});
  kernels::AttentionForward(s,
                            {zeroed.q.data(), zeroed.k.data(), zeroed.v.data(),
                             with_zero.out.data(), with_zero.lse.data()});
  for (size_t i = 0; i < QueryFloats(s); ++i) {
    ASSERT_TRUE(std::isfinite(with_nan.out.data()[i])) << i;
    ASSERT_EQ(with_nan.out.data()[i], with_zero.out.data()[i]) << i;
  }
}

// RoPE inside attention equals RoPE then attention, bitwise, in bf16 too:
// the same rotated floats are rounded either way.
ROTOR_PER_TARGET_TEST(AttentionKernel, Bf16RopeInsideEqualsSeparateKernels) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(72);
  for (size_t t : {2, 65, 130}) {
    RopeCase c{2, 4, 2, t, 34, 34};
    c.bf16 = true;
    ExpectRopeInsideEqualsSeparate(c, 1, rng);
    c.documents = true;
    ExpectRopeInsideEqualsSeparate(c, 0, rng);
  }
}

}  // namespace
}  // namespace rotor
