// The attention op (core/ops/attention.h): gradients through autograd against
// finite differences (causal, decode offset, grouped-query, non-causal,
// packed documents), values against the double reference, non-contiguous
// inputs, a packed row against its documents alone, shape errors.
#include "core/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/attention.h"
#include "core/kernels/attention_scalar.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

// Random q of `q_shape` and k and v of `kv_shape` (in that order from rng),
// requiring grad.
std::vector<Tensor> RandomQkv(const Shape& q_shape, const Shape& kv_shape,
                              std::mt19937& rng) {
  Tensor q = RandomTensor(q_shape, rng);
  Tensor k = RandomTensor(kv_shape, rng);
  return {q, k, RandomTensor(kv_shape, rng)};
}

TEST(AttentionOp, CausalGradCheck) {
  std::mt19937 rng(21);
  // Grouped-query: 4 query heads share 2 kv heads.
  GradCheck(
      [](const std::vector<Tensor>& x) {
        return CausalAttention(x[0], x[1], x[2], 0.7f, 0);
      },
      RandomQkv({2, 4, 5, 3}, {2, 2, 5, 3}, rng));
}

TEST(AttentionOp, DecodeOffsetGradCheck) {
  std::mt19937 rng(22);
  // 2 new queries after 4 cached positions; default scale and offset.
  GradCheck(
      [](const std::vector<Tensor>& x) {
        return CausalAttention(x[0], x[1], x[2]);
      },
      RandomQkv({1, 2, 2, 4}, {1, 1, 6, 4}, rng));
}

TEST(AttentionOp, FullGradCheck) {
  std::mt19937 rng(23);
  GradCheck(
      [](const std::vector<Tensor>& x) {
        return FullAttention(x[0], x[1], x[2], 0.5f);
      },
      RandomQkv({1, 2, 3, 5}, {1, 2, 4, 5}, rng));
}

// Packed documents (a key lower bound): two batch rows with different
// layouts, one with a document of length 1, grouped-query heads.
TEST(AttentionOp, PackedDocumentsGradCheck) {
  std::mt19937 rng(27);
  const std::vector<int32_t> key_start =
      DocumentKeyStarts({{0, 3, 4}, {2, 6}}, 7);
  GradCheck(
      [&key_start](const std::vector<Tensor>& x) {
        return CausalAttention(x[0], x[1], x[2], 0.7f, 0, key_start);
      },
      RandomQkv({2, 4, 7, 3}, {2, 2, 7, 3}, rng));
}

// The same with a query offset: 3 queries after 4 cached positions, the
// queries spanning a document boundary.
TEST(AttentionOp, PackedDocumentsWithOffsetGradCheck) {
  std::mt19937 rng(28);
  const std::vector<int32_t> key_start = DocumentKeyStarts({{0, 2, 5}}, 7);
  GradCheck(
      [&key_start](const std::vector<Tensor>& x) {
        return CausalAttention(x[0], x[1], x[2], 0.5f, 4, key_start);
      },
      RandomQkv({1, 2, 3, 4}, {1, 1, 7, 4}, rng));
}

// A copy of rows start .. start + length - 1 of x ([B, H, T, D]) as a new
// leaf requiring grad.
Tensor RowsAsLeaf(const Tensor& x, int64_t start, int64_t length) {
  NoGradGuard no_grad;
  const Tensor rows = Contiguous(Narrow(x, 2, start, length));
  return Tensor::FromVector(rows.shape(), rows.ToVector(), true);
}

std::vector<float> Rows(const Tensor& x, int64_t start, int64_t length) {
  return Contiguous(Narrow(x, 2, start, length)).ToVector();
}

// A row packing two documents gives each document the output and gradients
// of running it alone. When the second document starts on a key-tile
// boundary (64) its tiles line up with those of the document alone: bitwise.
// Otherwise the online softmax and the weighted sums group the same terms
// into other blocks, and the results differ by float rounding only: within
// 1e-6 (measured on AVX3: at most 6e-8 on out, dq and dk, 2.4e-7 on dv,
// whose entries reach 3; the first document, starting at 0, stays bitwise).
TEST(AttentionOp, PackedRowEqualsDocumentsAlone) {
  constexpr int64_t kHq = 4, kHkv = 2, kD = 34;
  for (const int64_t first_length : {64, 37}) {
    const int64_t seq = first_length + 70;
    std::mt19937 rng(29);
    const std::vector<Tensor> qkv =
        RandomQkv({1, kHq, seq, kD}, {1, kHkv, seq, kD}, rng);
    const Tensor dout = RandomTensor({1, kHq, seq, kD}, rng, -1, 1, false);
    const std::vector<int32_t> key_start =
        DocumentKeyStarts({{0, first_length}}, seq);
    const float scale = DefaultAttentionScale(kD);
    const Tensor packed =
        CausalAttention(qkv[0], qkv[1], qkv[2], scale, 0, key_start);
    packed.Backward(dout);
    const bool bitwise = first_length % kernels::kAttentionKeyTile == 0;
    for (const auto& [start, length] :
         {std::pair<int64_t, int64_t>{0, first_length},
          {first_length, seq - first_length}}) {
      const Tensor q = RowsAsLeaf(qkv[0], start, length);
      const Tensor k = RowsAsLeaf(qkv[1], start, length);
      const Tensor v = RowsAsLeaf(qkv[2], start, length);
      const Tensor alone = CausalAttention(q, k, v, scale, 0);
      alone.Backward(RowsAsLeaf(dout, start, length).Detach());
      const std::string what =
          "document at " + std::to_string(start) + " of " + std::to_string(seq);
      const std::vector<std::pair<std::vector<float>, std::vector<float>>>
          compared = {
              {Rows(packed, start, length), alone.ToVector()},
              {Rows(qkv[0].grad(), start, length), q.grad().ToVector()},
              {Rows(qkv[1].grad(), start, length), k.grad().ToVector()},
              {Rows(qkv[2].grad(), start, length), v.grad().ToVector()}};
      const char* names[] = {"out", "dq", "dk", "dv"};
      for (size_t i = 0; i < compared.size(); ++i) {
        const auto& [from_packed, from_alone] = compared[i];
        if (bitwise) {
          EXPECT_TRUE(from_packed == from_alone) << names[i] << " " << what;
        } else {
          test::ExpectNear(from_packed.data(), from_alone.data(),
                           from_alone.size(), 1e-6, 0.0,
                           std::string(names[i]) + " " + what);
        }
      }
    }
  }
}

// Values against the double reference, with q given as a strided view of a
// [batch, len, heads, head_dim] buffer (the layout a fused QKV projection
// produces), so the op's contiguous copy is exercised too.
TEST(AttentionOp, MatchesReferenceForStridedQuery) {
  constexpr int64_t kB = 2, kH = 4, kT = 9, kD = 6;
  std::mt19937 rng(24);
  const Tensor q_btd = RandomTensor({kB, kT, kH, kD}, rng, -1, 1, false);
  const Tensor q =
      q_btd.ViewAs({kB, kH, kT, kD}, {kT * kH * kD, kD, kH * kD, 1}, 0);
  ASSERT_FALSE(q.is_contiguous());
  const Tensor k = RandomTensor({kB, 2, kT, kD}, rng, -1, 1, false);
  const Tensor v = RandomTensor({kB, 2, kT, kD}, rng, -1, 1, false);
  const Tensor out = CausalAttention(q, k, v);

  kernels::AttentionShape s;
  s.batch = kB;
  s.q_heads = kH;
  s.kv_heads = 2;
  s.q_len = s.kv_len = kT;
  s.head_dim = kD;
  s.scale = DefaultAttentionScale(kD);
  const std::vector<float> qf = q.ToVector(), kf = k.ToVector(),
                           vf = v.ToVector();
  const std::vector<double> qd(qf.begin(), qf.end()), kd(kf.begin(), kf.end()),
      vd(vf.begin(), vf.end());
  std::vector<double> expected(qd.size()), lse(kB * kH * kT);
  kernels::AttentionForwardRef<double>(
      s, {qd.data(), kd.data(), vd.data(), expected.data(), lse.data()});
  const std::vector<float> actual = out.ToVector();
  test::ExpectNear(actual.data(), expected.data(), actual.size(), 1e-5, 1e-4,
                   "CausalAttention");
}

TEST(AttentionOp, NoGraphWithoutGrad) {
  std::mt19937 rng(25);
  const std::vector<Tensor> qkv = RandomQkv({1, 1, 3, 2}, {1, 1, 3, 2}, rng);
  const Tensor &q = qkv[0], &k = qkv[1], &v = qkv[2];
  EXPECT_NE(CausalAttention(q, k, v).grad_fn(), nullptr);
  NoGradGuard no_grad;
  const Tensor out = CausalAttention(q, k, v);
  EXPECT_EQ(out.grad_fn(), nullptr);
  EXPECT_FALSE(out.requires_grad());
}

// Peak tensor memory of a forward + backward at T = 4096 through autograd
// (Storage's live-byte counter sees every tensor the op and the engine
// allocate). Expected, in floats with N = T * D per head:
//   forward: out (Hq N) and lse (Hq T)
//   backward: delta (Hq T), dq (Hq N), dk and dv (2 Hkv N), and the leaves'
//   accumulated grads (as many again)
// so well under 8 Hq N + 4 Hq T floats. Materialised scores would add
// Hq T^2 floats (64 MiB per head here) and fail the bound by far.
TEST(AttentionOp, LongSequencePeakMemoryIsLinear) {
  constexpr int64_t kT = 4096, kD = 8, kHq = 2, kHkv = 1;
  std::mt19937 rng(26);
  const std::vector<Tensor> qkv =
      RandomQkv({1, kHq, kT, kD}, {1, kHkv, kT, kD}, rng);
  const Tensor &q = qkv[0], &k = qkv[1], &v = qkv[2];
  const Tensor dout = RandomTensor({1, kHq, kT, kD}, rng, -1, 1, false);
  ReleaseCachedMemory();
  ResetPeakMemory();
  const size_t before = GetMemoryStats().live_bytes;
  const Tensor out = CausalAttention(q, k, v);
  out.Backward(dout);
  const size_t peak = GetMemoryStats().peak_live_bytes - before;
  const size_t bound = (8 * kHq * kT * kD + 4 * kHq * kT) * sizeof(float);
  EXPECT_LE(peak, bound) << "peak " << peak << " bytes";
  // It really ran: every gradient reached its leaf.
  EXPECT_TRUE(q.grad().defined() && k.grad().defined() && v.grad().defined());
  EXPECT_GT(peak, size_t{kHq * kT * kD * sizeof(float)});
}

// CachedCausalAttention reads k and v where they lie, as the first kv_len
// positions of a larger cache, and q as a strided view, and writes the
// output token-major: the bits of CausalAttention on contiguous copies,
// permuted. Decoding (1 query), a prefill over several query tiles (70 >
// 64 rows, the keys transposed once for all tiles) and a chunk with an
// offset; grouped-query (4 over 2 heads), odd lengths.
TEST(AttentionOp, CachedEqualsCausalOnContiguousCopiesBitwise) {
  constexpr int64_t kB = 2, kHq = 4, kHkv = 2, kD = 8, kCapacity = 80;
  std::mt19937 rng(27);
  for (const auto& [q_len, kv_len] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {1, 37}, {3, 37}, {70, 70}, {5, 79}}) {
    SCOPED_TRACE("q_len " + std::to_string(q_len) + " kv_len " +
                 std::to_string(kv_len));
    // The cache's room past kv_len holds NaN, as recycled memory may: a
    // kernel that read a row there, even with zero weight, would spread it.
    Tensor k_cache = RandomTensor({kB, kHkv, kCapacity, kD}, rng, -1, 1, false);
    Tensor v_cache = RandomTensor({kB, kHkv, kCapacity, kD}, rng, -1, 1, false);
    for (Tensor* cache : {&k_cache, &v_cache}) {
      float* data = cache->data();
      for (int64_t row = 0; row < kB * kHkv; ++row) {
        std::fill(data + (row * kCapacity + kv_len) * kD,
                  data + (row + 1) * kCapacity * kD,
                  std::numeric_limits<float>::quiet_NaN());
      }
    }
    const Tensor q_btd = RandomTensor({kB, q_len, kHq, kD}, rng, -1, 1, false);
    const Tensor q = q_btd.ViewAs({kB, kHq, q_len, kD},
                                  {q_len * kHq * kD, kD, kHq * kD, 1}, 0);
    const Shape kv_shape = {kB, kHkv, kv_len, kD};
    const Shape cache_strides = {kHkv * kCapacity * kD, kCapacity * kD, kD, 1};
    const Tensor k = k_cache.ViewAs(kv_shape, cache_strides, 0);
    const Tensor v = v_cache.ViewAs(kv_shape, cache_strides, 0);
    Tensor k_copy = Tensor::Empty(kv_shape), v_copy = Tensor::Empty(kv_shape),
           q_copy = Tensor::Empty(q.shape());
    k_copy.CopyFrom(k);
    v_copy.CopyFrom(v);
    q_copy.CopyFrom(q);
    const Tensor cached = CachedCausalAttention(q, k, v);
    ASSERT_EQ(cached.shape(), (Shape{kB, q_len, kHq * kD}));
    const std::vector<float> expected =
        Permute(CausalAttention(q_copy, k_copy, v_copy), {0, 2, 1, 3})
            .ToVector();
    EXPECT_EQ(cached.ToVector(), expected);
    for (const float x : expected) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(AttentionOp, CachedErrorsNameTheProblem) {
  std::mt19937 rng(28);
  const std::vector<Tensor> qkv = RandomQkv({1, 2, 1, 4}, {1, 1, 3, 4}, rng);
  ROTOR_EXPECT_ERROR(CachedCausalAttention(qkv[0], qkv[1], qkv[2]),
                     "CachedCausalAttention", "records no backward",
                     "NoGradGuard");
  NoGradGuard no_grad;
  const Tensor wide = Tensor::Zeros({1, 1, 3, 8});
  const Tensor strided = wide.ViewAs({1, 1, 3, 4}, {24, 24, 8, 2}, 0);
  ROTOR_EXPECT_ERROR(CachedCausalAttention(qkv[0], strided, qkv[2]),
                     "the channels of k must be contiguous", "[24, 24, 8, 2]");
  ROTOR_EXPECT_ERROR(CachedCausalAttention(qkv[0], qkv[1], Tensor::Zeros({3})),
                     "CachedCausalAttention", "same shape");
  ROTOR_EXPECT_ERROR(
      CachedCausalAttention(Tensor::Zeros({1, 2, 4, 4}), qkv[1], qkv[2]),
      "q_len 4", "kv_len 3");
}

TEST(AttentionOp, ShapeErrorsNameTheShapes) {
  const Tensor q = Tensor::Zeros({1, 3, 4, 8});
  const Tensor k = Tensor::Zeros({1, 2, 4, 8});
  ROTOR_EXPECT_ERROR(CausalAttention(q, k, k), "CausalAttention",
                     "multiple of kv_heads", "[1, 3, 4, 8]", "[1, 2, 4, 8]");
  const Tensor q4 = Tensor::Zeros({1, 4, 4, 8});
  const Tensor k6 = Tensor::Zeros({1, 2, 4, 6});
  ROTOR_EXPECT_ERROR(CausalAttention(q4, k6, k6, 1.0f, 0), "head_dim",
                     "[1, 4, 4, 8]", "[1, 2, 4, 6]");
  const Tensor v5 = Tensor::Zeros({1, 2, 5, 8});
  ROTOR_EXPECT_ERROR(CausalAttention(q4, k, v5, 1.0f, 0), "same shape",
                     "[1, 2, 4, 8]", "[1, 2, 5, 8]");
  ROTOR_EXPECT_ERROR(FullAttention(Tensor::Zeros({4, 4, 8}), k, k, 1.0f),
                     "FullAttention", "[4, 4, 8]");
  ROTOR_EXPECT_ERROR(CausalAttention(q4, k, k, 1.0f, 1), "q_offset 1",
                     "kv_len 4");
  const Tensor k2 = Tensor::Zeros({2, 2, 4, 8});
  ROTOR_EXPECT_ERROR(CausalAttention(q4, k2, k2, 1.0f, 0), "batch",
                     "[1, 4, 4, 8]", "[2, 2, 4, 8]");
}

TEST(AttentionOp, KeyStartErrorsNameTheProblem) {
  const Tensor q = Tensor::Zeros({2, 2, 4, 8});
  const Tensor k = Tensor::Zeros({2, 1, 4, 8});
  ROTOR_EXPECT_ERROR(CausalAttention(q, k, k, 1.0f, 0, {0, 0, 0, 0}),
                     "CausalAttention", "key_start has 4 entries",
                     "batch * kv_len = 2 * 4");
  ROTOR_EXPECT_ERROR(
      CausalAttention(q, k, k, 1.0f, 0, {0, 0, 0, 0, 0, 2, 2, 2}),
      "batch row 1 at position 1 is 2", "expected 0 .. 1");
  ROTOR_EXPECT_ERROR(
      CausalAttention(q, k, k, 1.0f, 0, {0, 0, 2, 1, 0, 0, 0, 0}),
      "batch row 0 decreases at position 3", "2 then 1");
  ROTOR_EXPECT_ERROR(
      CausalAttention(q, k, k, 1.0f, 0, {0, 0, 0, 0, 0, 0, 0, -1}),
      "position 3 is -1");
  ROTOR_EXPECT_ERROR(DocumentKeyStarts({{0, 4}}, 4), "DocumentKeyStarts",
                     "row 0", "start 4 outside 0 .. 3");
  ROTOR_EXPECT_ERROR(DocumentKeyStarts({{0, 2, 2}}, 4), "2 then 2",
                     "not increasing");
}

// A row that does not list 0 begins mid-document: that document starts at 0.
TEST(AttentionOp, DocumentKeyStartsPerPosition) {
  EXPECT_EQ(DocumentKeyStarts({{0, 2, 3}, {4}, {}}, 6),
            (std::vector<int32_t>{0, 0, 2, 3, 3, 3, 0, 0, 0, 0, 4, 4, 0, 0, 0,
                                  0, 0, 0}));
}

// ---------------------------------------------------------------------------
// RopeCausalAttention: RoPE inside the kernels, token-major projections.

// The RoPE settings of a test: a plain table for `rotary_dim` channels.
struct RopeFixture {
  explicit RopeFixture(int64_t rotary_dim)
      : table(RopeTable::Default(rotary_dim, 10000.0)) {}
  AttentionRopeSettings Settings(double partial_rotary_factor = 1.0,
                                 RopeLayout layout = RopeLayout::kSplitHalf) {
    AttentionRopeSettings rope;
    rope.table = &table;
    rope.layout = layout;
    rope.partial_rotary_factor = partial_rotary_factor;
    return rope;
  }
  RopeTable table;
};

// What the model computed before RoPE moved inside attention: views of the
// projections as heads, Rope, CausalAttention, and the heads merged back.
Tensor SeparateRopeAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                             int64_t head_dim,
                             const AttentionRopeSettings& rope,
                             const std::vector<int32_t>& key_start) {
  const int64_t batch = q.size(0), seq = q.size(1);
  auto heads = [&](const Tensor& x) {
    return Permute(Reshape(x, {batch, seq, x.size(2) / head_dim, head_dim}),
                   {0, 2, 1, 3});
  };
  auto [q_rot, k_rot] = Rope(heads(q), heads(k), *rope.table, rope.positions,
                             rope.layout, rope.partial_rotary_factor);
  const Tensor attended =
      CausalAttention(q_rot, k_rot, Contiguous(heads(v)),
                      DefaultAttentionScale(head_dim), 0, key_start);
  return Reshape(Contiguous(Permute(attended, {0, 2, 1, 3})),
                 {batch, seq, q.size(2)});
}

// Gradients through autograd against finite differences: grouped-query
// heads, partial rotary, interleaved pairs, packed documents with
// restarting positions.
TEST(RopeAttentionOp, GradCheck) {
  std::mt19937 rng(41);
  RopeFixture full(4), partial(2);
  GradCheck(
      [&](const std::vector<Tensor>& x) {
        return RopeCausalAttention(x[0], x[1], x[2], 4, full.Settings());
      },
      RandomQkv({2, 5, 16}, {2, 5, 8}, rng));
  GradCheck(
      [&](const std::vector<Tensor>& x) {
        return RopeCausalAttention(
            x[0], x[1], x[2], 4,
            partial.Settings(0.5, RopeLayout::kInterleaved));
      },
      RandomQkv({1, 6, 8}, {1, 6, 4}, rng));
  const std::vector<int32_t> key_start =
      DocumentKeyStarts({{0, 3, 4}, {2, 6}}, 7);
  AttentionRopeSettings documents = full.Settings();
  for (size_t i = 0; i < key_start.size(); ++i) {
    documents.positions.ids.push_back(static_cast<int64_t>(i % 7) -
                                      key_start[i]);
  }
  GradCheck(
      [&](const std::vector<Tensor>& x) {
        return RopeCausalAttention(x[0], x[1], x[2], 4, documents, key_start);
      },
      RandomQkv({2, 7, 16}, {2, 7, 8}, rng));
}

// The same bits as the separate ops, forward and every gradient, at 1 and 2
// threads, with and without packed documents, and at a position offset.
TEST(RopeAttentionOp, EqualsSeparateRopeAndAttentionBitwise) {
  constexpr int64_t kD = 34;
  for (int threads : {1, 2}) {
    for (bool documents : {false, true}) {
      test::RunAtThreads(threads, [&] {
        std::mt19937 rng(42);
        RopeFixture fixture(kD);
        AttentionRopeSettings rope = fixture.Settings();
        std::vector<int32_t> key_start;
        if (documents) {
          key_start = DocumentKeyStarts({{0, 5, 70}, {0, 64, 65}}, 130);
          for (size_t i = 0; i < key_start.size(); ++i) {
            rope.positions.ids.push_back(static_cast<int64_t>(i % 130) -
                                         key_start[i]);
          }
        } else {
          rope.positions.offset = 3;
        }
        std::mt19937 same_rng = rng;  // the same values for both paths
        const std::vector<Tensor> fused_in =
            RandomQkv({2, 130, 4 * kD}, {2, 130, 2 * kD}, rng);
        const std::vector<Tensor> separate_in =
            RandomQkv({2, 130, 4 * kD}, {2, 130, 2 * kD}, same_rng);
        const Tensor dy =
            RandomTensor({2, 130, 4 * kD}, rng, -1, 1, /*requires_grad=*/false);
        const Tensor fused = RopeCausalAttention(
            fused_in[0], fused_in[1], fused_in[2], kD, rope, key_start);
        const Tensor separate =
            SeparateRopeAttention(separate_in[0], separate_in[1],
                                  separate_in[2], kD, rope, key_start);
        Sum(Mul(fused, dy)).Backward();
        Sum(Mul(separate, dy)).Backward();
        const std::string what = "threads=" + std::to_string(threads) +
                                 (documents ? " documents" : " offset 3");
        EXPECT_TRUE(fused.ToVector() == separate.ToVector()) << what;
        for (int i = 0; i < 3; ++i) {
          EXPECT_TRUE(fused_in[i].grad().ToVector() ==
                      separate_in[i].grad().ToVector())
              << "gradient of input " << i << ", " << what;
        }
        return 0;
      });
    }
  }
}

// FusedRopeCausalAttention on one qkv [batch, seq, (heads + 2 kv_heads) D]:
// the gradient check, and the bits of RopeCausalAttention on qkv's three
// column blocks copied out, forward and gradient (d(qkv)'s column blocks
// are dq, dk and dv), at 1 and 2 threads, with packed documents.
TEST(FusedRopeAttentionOp, GradCheck) {
  std::mt19937 rng(44);
  RopeFixture full(4), partial(2);
  GradCheck(
      [&](const std::vector<Tensor>& x) {
        return FusedRopeCausalAttention(x[0], 4, 2, 4, full.Settings());
      },
      {RandomTensor({2, 5, 32}, rng)});
  const std::vector<int32_t> key_start = DocumentKeyStarts({{0, 3}}, 6);
  GradCheck(
      [&](const std::vector<Tensor>& x) {
        return FusedRopeCausalAttention(
            x[0], 2, 1, 4, partial.Settings(0.5, RopeLayout::kInterleaved),
            key_start);
      },
      {RandomTensor({1, 6, 16}, rng)});
}

TEST(FusedRopeAttentionOp, EqualsRopeAttentionOnTheColumnBlocksBitwise) {
  constexpr int64_t kD = 34, kSeq = 130;
  for (int threads : {1, 2}) {
    for (bool documents : {false, true}) {
      test::RunAtThreads(threads, [&] {
        std::mt19937 rng(45);
        RopeFixture fixture(kD);
        AttentionRopeSettings rope = fixture.Settings();
        std::vector<int32_t> key_start;
        if (documents) {
          key_start = DocumentKeyStarts({{0, 5, 70}, {0, 64, 65}}, kSeq);
        }
        const Tensor qkv = RandomTensor({2, kSeq, 8 * kD}, rng);
        std::vector<Tensor> blocks;
        for (const auto& [column, width] :
             {std::pair<int64_t, int64_t>{0, 4 * kD},
              {4 * kD, 2 * kD},
              {6 * kD, 2 * kD}}) {
          Tensor block = Tensor::Empty({2, kSeq, width});
          block.CopyFrom(Narrow(qkv, 2, column, width).Detach());
          blocks.push_back(block.set_requires_grad(true));
        }
        const Tensor dy = RandomTensor({2, kSeq, 4 * kD}, rng, -1, 1, false);
        const Tensor fused =
            FusedRopeCausalAttention(qkv, 4, 2, kD, rope, key_start);
        const Tensor separate = RopeCausalAttention(
            blocks[0], blocks[1], blocks[2], kD, rope, key_start);
        fused.Backward(dy);
        separate.Backward(dy);
        const std::string what = "threads=" + std::to_string(threads) +
                                 (documents ? " documents" : "");
        EXPECT_TRUE(fused.ToVector() == separate.ToVector()) << what;
        const Tensor dqkv = qkv.grad();
        EXPECT_TRUE(Contiguous(Narrow(dqkv, 2, 0, 4 * kD)).ToVector() ==
                        blocks[0].grad().ToVector() &&
                    Contiguous(Narrow(dqkv, 2, 4 * kD, 2 * kD)).ToVector() ==
                        blocks[1].grad().ToVector() &&
                    Contiguous(Narrow(dqkv, 2, 6 * kD, 2 * kD)).ToVector() ==
                        blocks[2].grad().ToVector())
            << what;
        return 0;
      });
    }
  }
}

TEST(FusedRopeAttentionOp, ErrorsNameTheProblem) {
  RopeFixture fixture(4);
  const AttentionRopeSettings rope = fixture.Settings();
  ROTOR_EXPECT_ERROR(
      FusedRopeCausalAttention(Tensor::Zeros({1, 3, 20}), 2, 1, 4, rope),
      "FusedRopeCausalAttention", "[batch, seq, 16]", "[1, 3, 20]");
  ROTOR_EXPECT_ERROR(
      FusedRopeCausalAttention(Tensor::Zeros({1, 3, 28}), 3, 2, 4, rope),
      "FusedRopeCausalAttention", "multiple of kv_heads");
}

TEST(RopeAttentionOp, ErrorsNameTheProblem) {
  std::mt19937 rng(43);
  RopeFixture fixture(4);
  const AttentionRopeSettings rope = fixture.Settings();
  const Tensor q = RandomTensor({1, 3, 8}, rng);
  const Tensor k = RandomTensor({1, 3, 4}, rng);
  ROTOR_EXPECT_ERROR(
      RopeCausalAttention(q, k, RandomTensor({1, 3, 8}, rng), 4, rope),
      "RopeCausalAttention", "must have the same shape");
  ROTOR_EXPECT_ERROR(RopeCausalAttention(q, RandomTensor({1, 2, 4}, rng),
                                         RandomTensor({1, 2, 4}, rng), 4, rope),
                     "RopeCausalAttention", "batch and seq");
  ROTOR_EXPECT_ERROR(RopeCausalAttention(q, k, k, 3, rope),
                     "multiples of head_dim 3");
  ROTOR_EXPECT_ERROR(RopeCausalAttention(RandomTensor({1, 3, 12}, rng),
                                         RandomTensor({1, 3, 8}, rng),
                                         RandomTensor({1, 3, 8}, rng), 4, rope),
                     "q_heads 3 must be a multiple of kv_heads 2");
  ROTOR_EXPECT_ERROR(RopeCausalAttention(q, k, k, 4, fixture.Settings(0.5)),
                     "the table rotates 4 channels", "needs rotary dim 2");
  AttentionRopeSettings bad_ids = rope;
  bad_ids.positions.ids = {0, 1};
  ROTOR_EXPECT_ERROR(RopeCausalAttention(q, k, k, 4, bad_ids), "ids");
  ROTOR_EXPECT_ERROR(RopeCausalAttention(q, k, k, 4, rope, {0, 0}),
                     "key_start has 2 entries");
}

}  // namespace
}  // namespace rotor
