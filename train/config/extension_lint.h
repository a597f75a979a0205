// The context-extension lint: checks that a model's RoPE scaling fits the
// lengths it is trained and evaluated at, run by `rotor train`, `rotor eval`
// and `rotor rope` (and `rotor rope --check CONFIG` on its own). A config
// that parses is valid key by key (FindRopeConfigProblem); the lint judges
// the keys together with the lengths. An error is a result that would be
// wrong; a warning, one that is only suspicious. Each finding names its keys
// as full YAML paths and says what to set.
//
// Notation: M = model.max_position_embeddings, s = rope_scaling.factor,
// L0 = the pre-training length (rope_scaling.original_max_position_embeddings
// for yarn, llama3 and longrope, default M; M for dynamic; the base model's,
// when known, for linear and ntk), L = train.seq_len, r/2 rotary pairs.
//
//   pre-training length  (error)   yarn, llama3, longrope: L0 must be the
//       base model's pre-training length when it is known (a Hugging Face
//       folder's config.json, a checkpoint): the ramp, the bands and the
//       attention factor are measured from it.
//   factor vs ratio      (warning) yarn, longrope (linear, ntk: when the
//       base's length is known): s = M / L0; else the scaled positions
//       cover s * L0 tokens while the model declares M (and transformers
//       4.51-4.55 replaced a yarn factor by M / L0). Not llama3: Llama 3.1
//       declares M = 131072 with s = 8 of L0 = 8192, and was trained there.
//   training coverage    (error)   yarn (linear, ntk: when the base's
//       length is known): L <= s * L0; positions past s * L0 lie outside
//       the range the scaling maps into the pre-trained one, so training
//       would extrapolate.
//   factor too large     (warning) the same and llama3, for L > L0:
//       s * L0 <= 2 L; a larger factor blurs nearby positions for lengths
//       never trained (the YaRN paper's s = 32 at 64k of 4k is the limit).
//       A run at L <= L0 is a fine-tune keeping a model's own scaling.
//   factor 1             (warning) s = 1 leaves every frequency as it is.
//   YaRN ramp            (warning) no inv_freq differs from theta: with
//       the ramp rising (low < high, nn/rope_scaling.h
//       ComputeYarnRampBounds), pair i is interpolated iff i > low, i.e. it
//       turns fewer than beta_fast times within L0, L0 / (2 pi b^(2i/r)) <
//       beta_fast; if even the slowest pair turns more, YaRN changes only
//       the attention factor.
//   past-L0 key unused  (warning) a method that switches keys at L0 (its
//       record's length_switch; longrope: short_factor up to L0,
//       long_factor past it): training and evaluating only at lengths
//       <= L0 never use the second.
//   dynamic in training  (warning) dynamic NTK is unscaled up to L0 = M,
//       and rotor trains at L <= M, so a run trains plain RoPE.
//   evaluation beyond M  (warning) static methods: lengths > M extrapolate.
//   float32 and positions (error) what leaves float32 or rotor's positions
//       (LintRopeRange): rope_theta or s beyond float32's largest value
//       3.40282e38 (RoPE's tables are float32, and so are GGUF's keys);
//       s * L0 beyond kMaxPositions = 2^24 (L0 = M for dynamic; linear and
//       ntk: when the base's length is known); the attention factor a
//       (attention_factor, yarn's mscale / mscale_all_dim) beyond
//       2^64 = sqrt(float32's largest value): q and k are each multiplied by
//       a, so q.k by a^2. The attention factor is checked only when the rest
//       passes (it is computed from them).
//
// Two checks live where the line of the key is known: a legacy
// rope_scaling `type` that contradicts rope_type is refused by the reader
// (model_reader.h ReadRopeType), and train.seq_len > M by
// FindTrainConfigProblem. The model reader (ModelReader::Amend, for
// train.init_from's folder) refuses a pre-training length that differs
// from the folder's with this lint's message (PretrainingLengthProblem),
// at the key's line.
#ifndef ROTOR_TRAIN_CONFIG_EXTENSION_LINT_H_
#define ROTOR_TRAIN_CONFIG_EXTENSION_LINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/config/model_config.h"

namespace rotor::train {

enum class LintSeverity { kError, kWarning };

struct LintFinding {
  LintSeverity severity = LintSeverity::kWarning;
  // Full YAML paths: "model.rope_scaling.factor", "train.seq_len".
  std::vector<std::string> keys;
  std::string message;  // names the keys and the value to set
};

// The length a base model was pre-trained at, and who says so.
struct PretrainingLength {
  int64_t tokens = 0;
  // "runs/base/config.json says the model was pre-trained at 512 tokens
  // (its max_position_embeddings)".
  std::string statement;
  // A fine-tuning config that leaves the key out takes the base's value
  // (ParseTrainConfig): the message offers that too.
  bool inherited_when_absent = false;
};

// `base`'s pre-training length (PretrainedLength), as `source` (a file)
// declares it.
PretrainingLength PretrainingLengthOf(const ModelConfig& base,
                                      const std::string& source);

// The lengths a model is used at; each one optional.
struct ExtensionLengths {
  std::optional<PretrainingLength> pretraining;
  std::optional<int64_t> train_seq_len;  // train.seq_len
  std::vector<int64_t> eval_lengths;     // the lengths rotor eval measures
  // How the evaluation lengths were given, for messages: "--lengths".
  std::string eval_lengths_key = "--lengths";
  // The base model (train.init_from): its rope_theta and the file that says
  // so, or why it could not be read ("train.init_from runs/default does not
  // exist ..."), in which case the checks against it are skipped and a
  // warning says so.
  std::optional<double> base_rope_theta;
  std::string base_source;
  std::string base_unread;
};

// The float32 and positions check alone: its errors (GGUF export refuses a
// model that has any).
std::vector<LintFinding> LintRopeRange(const RopeScalingConfig& rope,
                                       const ExtensionLengths& lengths = {});

// Every finding, errors first.
std::vector<LintFinding> LintContextExtension(const ModelConfig& model,
                                              const ExtensionLengths& lengths);

// The pre-training length check on the value `original` given for
// rope_scaling.original_max_position_embeddings: what is wrong, after the
// key ("256, but DIR/config.json says ...; set 512"), or nullopt if it is
// the base's. ModelReader::Amend reports it at the key's line.
std::optional<std::string> PretrainingLengthProblem(
    int64_t original, const PretrainingLength& pretraining);

bool HasLintErrors(const std::vector<LintFinding>& findings);

// "error: MESSAGE" or "warning: MESSAGE".
std::string FormatLintFinding(const LintFinding& finding);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_EXTENSION_LINT_H_
