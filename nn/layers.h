// The basic layers of a Llama-style decoder: Linear, Embedding, RMSNorm and
// the SwiGLU feed-forward block. Each is a thin Module over the ops in
// core/ops/ops.h, which carry the forward/backward math.
#ifndef ROTOR_NN_LAYERS_H_
#define ROTOR_NN_LAYERS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace rotor {
namespace nn {

// How the layers below start their weights: each matrix N(0, init_std^2)
// drawn from `rng`, or, when `rng` is null, left uninitialised
// (Tensor::Empty: no random draws, no zero-fill) for a loader that
// overwrites every parameter. Norm weights start at 1 and biases at 0 either
// way.

// A low-rank adapter's shape and strength (LoRA, Hu et al. 2021): rank r,
// scale alpha / r, and the dropout on the adapter's input.
struct LoraSettings {
  int64_t rank = 8;
  double alpha = 8.0;
  double dropout = 0.0;
};

// y = x W^T (+ b).  x: [..., in], W: [out, in] ("weight"), b: [out] ("bias").
//
// With a LoRA adapter (EnableLora), as PEFT defines it:
//   y = x W^T + b + s * dropout(x) A^T B^T,   s = alpha / r,
// A: [r, in] ("lora_A.weight", kaiming-uniform with a = sqrt(5), i.e.
// U(-1/sqrt(in), 1/sqrt(in)), as PEFT and nn.Linear start it), B: [out, r]
// ("lora_B.weight", zeros: the adapted layer starts equal to the base).
// Dropout drops only in training mode, with the mask of
// set_lora_dropout_seed (core/ops Dropout: a pure function of the seed), so
// a step recomputed by activation checkpointing sees the same mask.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias, double init_std,
         Rng* rng);
  // A layer on a given weight [out, in], e.g. a row range of FusedWeights;
  // the bias, if any, starts at 0.
  Linear(Tensor weight, bool bias);
  Tensor Forward(const Tensor& x) const;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

  // Adds the adapter (A from `rng`, B zero). Throws if it already has one.
  void EnableLora(const LoraSettings& settings, Rng& rng);
  bool has_lora() const { return lora_a_.defined(); }
  void set_lora_dropout_seed(uint64_t seed) { lora_dropout_seed_ = seed; }
  // W += s * B A (in float32, under no-grad), then drops the adapter: the
  // layer computes the same function without it, up to rounding.
  void MergeLora();

 private:
  Tensor weight_;
  Tensor bias_;    // undefined without bias
  Tensor lora_a_;  // [r, in]; undefined without an adapter
  Tensor lora_b_;  // [out, r]
  float lora_scale_ = 0.0f;
  float lora_dropout_ = 0.0f;
  uint64_t lora_dropout_seed_ = 0;
};

// The weights of Linear layers that read the same input, as consecutive row
// ranges of one [sum of rows, in] tensor: {rows[0] x in, rows[1] x in, ...}.
// Drawn like the layers' own weights one after another (the same values in
// the same order) or left uninitialised without `rng`. One GEMM then
// computes all the layers' outputs (FusedLinearForward), and anything that
// writes into a weight (a loader, an optimizer, MergeLora) writes into the
// shared storage: none may replace a weight tensor.
std::vector<Tensor> FusedWeights(const std::vector<int64_t>& rows,
                                 int64_t in_features, double init_std,
                                 Rng* rng);

// The outputs of `layers` (all on one input x [..., in], none with a LoRA
// adapter) side by side, [..., sum of out], from one product
// (rotor::FusedLinear): in place when their weights are FusedWeights.
Tensor FusedLinearForward(const std::vector<const Linear*>& layers,
                          const Tensor& x);

// Row lookup: ids -> rows of the table [vocab, dim] ("weight").
class Embedding : public Module {
 public:
  Embedding(int64_t vocab_size, int64_t dim, double init_std, Rng* rng);
  // ids: ids_shape (e.g. [batch, seq]) -> [ids_shape..., dim].
  Tensor Forward(const std::vector<int32_t>& ids, const Shape& ids_shape) const;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

// y = x / sqrt(mean(x^2) + eps) * w over the last dim; w ("weight") starts
// at 1.
class RmsNorm : public Module {
 public:
  RmsNorm(int64_t dim, float eps);
  Tensor Forward(const Tensor& x) const;
  // {x + residual, Forward(x + residual)} in one op (rotor::AddRmsNorm).
  std::pair<Tensor, Tensor> AddForward(const Tensor& x,
                                       const Tensor& residual) const;

 private:
  Tensor weight_;
  float eps_;
};

// Llama's feed-forward block: down(silu(gate(x)) * up(x)).
// gate_proj, up_proj: [intermediate, hidden]; down_proj: [hidden,
// intermediate]; with `bias` (HF's mlp_bias) each has a bias too.
//
// gate_proj's and up_proj's weights are the two row halves of one
// [2 intermediate, hidden] storage (FusedWeights), so one GEMM gives
// gate_up = x [W_gate; W_up]^T [..., 2I], SwiGlu reads its halves and its
// backward writes one d(gate_up), whose product with [W_gate; W_up] is dx
// (one GEMM with K = 2I, the two branches summed inside it). With a LoRA
// adapter on gate_proj or up_proj, or without `fused`, the two run as
// separate layers.
class SwiGluMlp : public Module {
 public:
  SwiGluMlp(int64_t hidden, int64_t intermediate, bool bias, double init_std,
            double output_init_std, bool fused, Rng* rng);
  Tensor Forward(const Tensor& x) const;

 private:
  // gate_up: gate_proj's and up_proj's weights (FusedWeights).
  SwiGluMlp(std::vector<Tensor> gate_up, int64_t hidden, bool bias,
            double output_init_std, bool fused, Rng* rng);

  bool fused_;
  Linear& gate_proj_;
  Linear& up_proj_;
  Linear& down_proj_;
};

}  // namespace nn
}  // namespace rotor

#endif  // ROTOR_NN_LAYERS_H_
