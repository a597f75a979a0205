#include "train/config/extension_lint.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/limits.h"
#include "nn/rope_methods.h"
#include "nn/rope_scaling.h"

namespace rotor::train {
namespace {

constexpr char kFactor[] = "model.rope_scaling.factor";
constexpr char kOriginal[] =
    "model.rope_scaling.original_max_position_embeddings";
constexpr char kMaxPositions[] = "model.max_position_embeddings";
constexpr char kRopeType[] = "model.rope_scaling.rope_type";
constexpr char kSeqLen[] = "train.seq_len";
constexpr char kTheta[] = "model.rope_theta";
constexpr double kFloat32Max = std::numeric_limits<float>::max();
// q and k are each multiplied by the attention factor a, so q.k by a^2:
// a^2 must stay below float32's largest value.
const double kLargestAttentionFactor = std::sqrt(kFloat32Max);  // 2^64

LintFinding Finding(LintSeverity severity, std::vector<std::string> keys,
                    std::string message) {
  return LintFinding{severity, std::move(keys), std::move(message)};
}

// L0 and how to name it in a message.
struct BaseLength {
  int64_t tokens = 0;
  std::string name;  // "model.rope_scaling.original_max_position_embeddings"
};

// L0 of the methods that read it; linear and ntk, which do not, measure
// from the base model's length when it is known.
std::optional<BaseLength> BaseLengthOf(const RopeScalingConfig& rope,
                                       const ExtensionLengths& lengths) {
  const OriginalLengthFrom from =
      RopeMethodOf(rope.rope_type).original_length_from;
  if (from == OriginalLengthFrom::kOriginalKey) {
    return BaseLength{OriginalLength(rope), kOriginal};
  }
  if (from == OriginalLengthFrom::kMaxPositionsOverFactor &&
      lengths.pretraining) {
    return BaseLength{lengths.pretraining->tokens,
                      StrCat("the pre-training length (",
                             lengths.pretraining->statement, ")")};
  }
  return std::nullopt;
}

std::string JoinLengths(const std::vector<int64_t>& lengths) {
  std::string text;
  for (const int64_t length : lengths) {
    if (!text.empty()) text += ", ";
    text += std::to_string(length);
  }
  return text;
}

// A number for a message: integers in full, others to 6 digits.
std::string Num(double value) {
  if (std::fabs(value) < 1e15 && value == std::floor(value)) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return StrCat(value);
}

bool Same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

void CheckPretraining(const RopeScalingConfig& rope,
                      const ExtensionLengths& lengths,
                      std::vector<LintFinding>& findings) {
  if (!RopeMethodOf(rope.rope_type).reads_original_length() ||
      !lengths.pretraining) {
    return;
  }
  if (const std::optional<std::string> problem = PretrainingLengthProblem(
          OriginalLength(rope), *lengths.pretraining)) {
    findings.push_back(Finding(LintSeverity::kError, {kOriginal},
                               StrCat(kOriginal, ": ", *problem)));
  }
}

void CheckFactorAgainstRatio(const RopeScalingConfig& rope,
                             const BaseLength& original,
                             std::vector<LintFinding>& findings) {
  // Llama 3.1 itself declares 131072 positions with factor 8 of 8192: its
  // bands keep the fast pairs, and it was trained past s * L0.
  const RopeMethod& method = RopeMethodOf(rope.rope_type);
  if (!rope.factor || !method.factor_is_length_ratio) return;
  const double s = *rope.factor;
  const int64_t m = rope.max_position_embeddings;
  const double ratio =
      static_cast<double>(m) / static_cast<double>(original.tokens);
  if (Same(s, ratio)) return;
  const double covered = s * static_cast<double>(original.tokens);
  // Past rotor's positions LintRopeRange's error says what to set.
  if (covered > static_cast<double>(limits::kMaxPositions)) return;
  const std::string consequence =
      method.factor_disagreement ? method.factor_disagreement(original.tokens)
                                 : std::string();
  std::vector<std::string> keys = {kFactor, kMaxPositions};
  if (original.name == kOriginal) keys.push_back(kOriginal);
  findings.push_back(Finding(
      LintSeverity::kWarning, keys,
      StrCat(kFactor, " ", Num(s), " disagrees with ", kMaxPositions, " / ",
             original.name, " = ", m, " / ", original.tokens, " = ", Num(ratio),
             ": the scaling covers ", Num(s), " x ", original.tokens, " = ",
             Num(covered), " positions but the model declares ", m, consequence,
             "; set ", kMaxPositions, ": ", Num(std::floor(covered)), ", or ",
             kFactor, ": ", Num(ratio))));
}

void CheckTrainingCoverage(const RopeScalingConfig& rope,
                           const BaseLength& original, int64_t seq_len,
                           std::vector<LintFinding>& findings) {
  const RopeMethod& method = RopeMethodOf(rope.rope_type);
  if (!method.stretches_by_factor || !rope.factor) return;
  const double s = *rope.factor;
  const double l0 = static_cast<double>(original.tokens);
  const double covered = s * l0;
  const double needed = static_cast<double>(seq_len) / l0;
  // Where the factor is not M / L0 (llama3), s * L0 is not the trained range.
  if (method.factor_is_length_ratio && static_cast<double>(seq_len) > covered &&
      !Same(needed, s)) {
    findings.push_back(Finding(
        LintSeverity::kError, {kSeqLen, kFactor},
        StrCat(kSeqLen, " ", seq_len, " is beyond the ", Num(covered),
               " positions ", kFactor, " ", Num(s), " x ", original.name, " ",
               original.tokens, " covers: positions past ", Num(covered),
               " lie outside the range the scaling maps into the pre-trained "
               "one, so the run would train on extrapolated positions; set ",
               kFactor, ": ", Num(needed), " (", kSeqLen, " / ",
               original.tokens, "), or ", kSeqLen, ": ",
               static_cast<int64_t>(std::floor(covered)))));
    return;
  }
  // A run at or below L0 is a fine-tune that keeps a model's own scaling
  // (as Llama 3.1's are), not an extension.
  const double length = static_cast<double>(seq_len);
  if (length > l0 && covered > 2.0 * length && !Same(covered, 2.0 * length)) {
    findings.push_back(Finding(
        LintSeverity::kWarning, {kFactor, kSeqLen},
        StrCat(kFactor, " ", Num(s), " makes room for ", Num(s), " x ",
               original.tokens, " = ", Num(covered),
               " positions, more than twice ", kSeqLen, " ", seq_len,
               ": the run trains only the first of them, and a larger factor "
               "blurs nearby positions more for lengths it never trains "
               "(the YaRN paper trains at half its s x L0 at most); set ",
               kFactor, ": ", Num(needed), " (", kSeqLen, " / ",
               original.tokens, ", with ", kMaxPositions, ": ", seq_len,
               "), or ", kSeqLen, ": ",
               std::min<int64_t>(static_cast<int64_t>(std::floor(covered)),
                                 rope.max_position_embeddings))));
  }
}

void CheckFactorOne(const RopeScalingConfig& rope,
                    const std::optional<BaseLength>& original,
                    std::vector<LintFinding>& findings) {
  if (!RopeMethodOf(rope.rope_type).stretches_by_factor || !rope.factor ||
      *rope.factor != 1.0) {
    return;
  }
  const std::string ratio =
      original && original->tokens < rope.max_position_embeddings
          ? StrCat(" (", kMaxPositions, " / ", original->name, " = ",
                   rope.max_position_embeddings, " / ", original->tokens, " = ",
                   Num(static_cast<double>(rope.max_position_embeddings) /
                       static_cast<double>(original->tokens)),
                   ")")
          : "";
  findings.push_back(Finding(
      LintSeverity::kWarning, {kFactor},
      StrCat(kFactor, " 1 leaves every frequency of rope_type '",
             RopeTypeName(rope.rope_type),
             "' as it is (attention factor 1): the model is default RoPE; set ",
             kFactor, " to the new length over the pre-training length",
             ratio)));
}

// No pair is interpolated when every frequency is the unscaled one (with
// low < high, iff the slowest pair i = F-1, wavelength 2 pi b^(2(F-1)/r),
// is at or below the ramp's start: L0 / wavelength >= beta_fast).
void CheckYarnRamp(const RopeScalingConfig& rope,
                   std::vector<LintFinding>& findings) {
  if (!RopeMethodOf(rope.rope_type).ramps_by_turns ||
      rope.factor.value_or(1.0) == 1.0) {
    return;
  }
  const std::vector<double> unscaled = UnscaledInvFreq(rope);
  if (ComputeRopeFrequencies(rope, rope.max_position_embeddings).inv_freq !=
      unscaled) {
    return;
  }
  const int64_t last = static_cast<int64_t>(unscaled.size()) - 1;
  const int64_t original = OriginalLength(rope);
  const double wavelength = 2.0 * M_PI / unscaled.back();
  const double turns = static_cast<double>(original) / wavelength;
  findings.push_back(Finding(
      LintSeverity::kWarning, {"model.rope_scaling.beta_fast", kOriginal},
      StrCat("rope_type yarn interpolates no pair: a pair is divided by the "
             "factor only when it turns fewer than "
             "model.rope_scaling.beta_fast ",
             Num(rope.beta_fast), " times within ", kOriginal, " ", original,
             ", and even the slowest pair (i = ", last, ", wavelength ",
             Num(wavelength), " tokens) turns ", Num(turns),
             " times, so YaRN changes only the attention factor; set "
             "model.rope_scaling.beta_fast: ",
             Num(std::floor(turns) + 1.0), " (above ", Num(turns),
             ") or more")));
}

void CheckLongRopeUsesLongFactor(const RopeScalingConfig& rope,
                                 const ExtensionLengths& lengths,
                                 std::vector<LintFinding>& findings) {
  const RopeMethod& method = RopeMethodOf(rope.rope_type);
  if (!method.length_switch) return;
  const std::string up_to_original =
      StrCat("model.", method.length_switch->up_to_original);
  const std::string past_original =
      StrCat("model.", method.length_switch->past_original);
  std::vector<std::string> used;
  std::vector<std::string> keys = {past_original, kOriginal};
  int64_t longest = 0;
  if (lengths.train_seq_len) {
    used.push_back(StrCat(kSeqLen, " ", *lengths.train_seq_len));
    keys.push_back(kSeqLen);
    longest = *lengths.train_seq_len;
  }
  if (!lengths.eval_lengths.empty()) {
    used.push_back(StrCat(lengths.eval_lengths_key, " ",
                          JoinLengths(lengths.eval_lengths)));
    keys.push_back(lengths.eval_lengths_key);
    longest = std::max(longest, *std::max_element(lengths.eval_lengths.begin(),
                                                  lengths.eval_lengths.end()));
  }
  const int64_t original = OriginalLength(rope);
  if (used.empty() || longest > original) return;
  const std::string setting =
      lengths.train_seq_len ? std::string(kSeqLen) : lengths.eval_lengths_key;
  const std::string range =
      rope.max_position_embeddings > original
          ? StrCat(setting, " between ", original + 1, " and ",
                   rope.max_position_embeddings, " (", kMaxPositions, ")")
          : StrCat(kMaxPositions, " and ", setting, " above ", original);
  findings.push_back(Finding(
      LintSeverity::kWarning, keys,
      StrCat("every length used (",
             used.size() == 1 ? used[0] : used[0] + " and " + used[1],
             ") is at most ", kOriginal, " ", original, ", where rope_type '",
             method.name, "' uses ", up_to_original, ": ", past_original,
             " is never used; set ", range, " to use it")));
}

void CheckDynamicTraining(const RopeScalingConfig& rope, int64_t seq_len,
                          std::vector<LintFinding>& findings) {
  if (!RopeMethodOf(rope.rope_type).scales_only_past_max_positions()) return;
  findings.push_back(Finding(
      LintSeverity::kWarning, {kRopeType, kSeqLen},
      StrCat(kRopeType, " dynamic scales only sequences longer than ",
             kMaxPositions, " ", rope.max_position_embeddings,
             " (its L0), and ", kSeqLen, " ", seq_len,
             " cannot exceed it, so this run trains plain RoPE and ", kFactor,
             " does nothing. A warning, not an error: a dynamic model is a "
             "plain-RoPE model scaled at inference, so fine-tuning it at L0 is "
             "sound; but dynamic NTK cannot extend a model by training (HF "
             "recomputes the base from each batch's length, so training past "
             "L0 would learn a different frequency for every length). To "
             "extend by fine-tuning, set ",
             kRopeType, ": ntk or yarn, with ", kMaxPositions,
             ": the new length")));
}

void CheckEvaluationBeyond(const RopeScalingConfig& rope,
                           const ExtensionLengths& lengths,
                           std::vector<LintFinding>& findings) {
  // Dynamic NTK is made for lengths past max_position_embeddings (its L0).
  if (RopeMethodOf(rope.rope_type).original_length_from ==
      OriginalLengthFrom::kMaxPositions) {
    return;
  }
  std::vector<int64_t> beyond;
  for (const int64_t length : lengths.eval_lengths) {
    if (length > rope.max_position_embeddings) beyond.push_back(length);
  }
  if (beyond.empty()) return;
  findings.push_back(Finding(
      LintSeverity::kWarning, {kMaxPositions, lengths.eval_lengths_key},
      StrCat(lengths.eval_lengths_key, " ", JoinLengths(beyond),
             beyond.size() == 1 ? " is" : " are", " beyond ", kMaxPositions,
             " ", rope.max_position_embeddings,
             ": positions past it are extrapolation with rope_type '",
             RopeTypeName(rope.rope_type),
             "' (expect the perplexity to rise there); to cover ",
             beyond.back(), ", set ", kMaxPositions, ": ", beyond.back(),
             " with a rope_scaling that stretches the positions that far")));
}

// The keys that set the attention factor a, for messages.
std::vector<std::string> AttentionFactorKeys(const RopeScalingConfig& rope) {
  if (rope.attention_factor) return {"model.rope_scaling.attention_factor"};
  const RopeMethod& method = RopeMethodOf(rope.rope_type);
  std::vector<std::string> keys;
  if (method.attention_factor_keys) {
    for (const std::string& key : method.attention_factor_keys(rope)) {
      keys.push_back("model." + key);
    }
  }
  if (keys.empty()) keys.push_back(kFactor);
  return keys;
}

void CheckFloat32(const std::string& key, double value,
                  std::vector<LintFinding>& findings) {
  if (std::fabs(value) <= kFloat32Max) return;
  findings.push_back(Finding(
      LintSeverity::kError, {key},
      StrCat(key, " ", Num(value), " is beyond float32's largest value ",
             kFloat32Max,
             ": RoPE's tables are float32 (and GGUF stores the value as "
             "one), so it cannot be computed with")));
}

}  // namespace

std::vector<LintFinding> LintRopeRange(const RopeScalingConfig& rope,
                                       const ExtensionLengths& lengths) {
  std::vector<LintFinding> findings;
  CheckFloat32(kTheta, rope.rope_theta, findings);
  if (rope.factor) CheckFloat32(kFactor, *rope.factor, findings);
  // L0: the length the factor stretches (dynamic's is M).
  std::optional<BaseLength> original = BaseLengthOf(rope, lengths);
  if (RopeMethodOf(rope.rope_type).original_length_from ==
      OriginalLengthFrom::kMaxPositions) {
    original = BaseLength{rope.max_position_embeddings, kMaxPositions};
  }
  if (rope.factor && original &&
      *rope.factor * static_cast<double>(original->tokens) >
          static_cast<double>(limits::kMaxPositions)) {
    const double covered = *rope.factor * static_cast<double>(original->tokens);
    findings.push_back(Finding(
        LintSeverity::kError, {kFactor},
        StrCat(kFactor, " ", Num(*rope.factor), " x ", original->name, " ",
               original->tokens, " = ", Num(covered),
               " positions, beyond rotor's longest sequence of ",
               limits::kMaxPositions,
               " positions (2^24): the scaling stretches the positions past "
               "any length rotor runs; set ",
               kFactor, " to the new length over ", original->tokens,
               " (at most ", limits::kMaxPositions / original->tokens, ")")));
  }
  if (findings.empty()) {
    const double a = ComputeRopeFrequencies(rope, rope.max_position_embeddings)
                         .attention_factor;
    if (!(a <= kLargestAttentionFactor)) {
      const std::vector<std::string> keys = AttentionFactorKeys(rope);
      findings.push_back(Finding(
          LintSeverity::kError, keys,
          StrCat("the attention factor ", Num(a), " that ", keys[0],
                 keys.size() > 1 ? " / " + keys[1] : std::string(),
                 " gives is beyond 2^64 = ", kLargestAttentionFactor,
                 ", the square root of float32's largest value: q and k are "
                 "each multiplied by it, so q.k by its square, which "
                 "would overflow float32")));
    }
  }
  return findings;
}

PretrainingLength PretrainingLengthOf(const ModelConfig& base,
                                      const std::string& source) {
  PretrainingLength length;
  length.tokens = PretrainedLength(base);
  length.statement = StrCat(
      source, " says the model was pre-trained at ", length.tokens, " tokens (",
      length.tokens == base.rope.max_position_embeddings
          ? "its max_position_embeddings"
          : "its rope_scaling.original_max_position_embeddings",
      ")");
  return length;
}

std::optional<std::string> PretrainingLengthProblem(
    int64_t original, const PretrainingLength& pretraining) {
  if (original == pretraining.tokens) return std::nullopt;
  return StrCat(original, ", but ", pretraining.statement, "; set ",
                pretraining.tokens,
                pretraining.inherited_when_absent
                    ? ", or leave the key out to take it from the folder"
                    : "");
}

// The base of a fine-tune: a lint that could not read it says so, and a
// rope_theta other than the base's is flagged (every rotation angle moves:
// a run that changed it started at loss 2.04 where its base ended at 1.41),
// unless raising it is the method, as Code Llama's 10^4 -> 10^6.
void CheckAgainstBase(const RopeScalingConfig& rope,
                      const ExtensionLengths& lengths,
                      std::vector<LintFinding>& findings) {
  if (!lengths.base_unread.empty()) {
    findings.push_back(
        {LintSeverity::kWarning,
         {"train.init_from"},
         StrCat("could not check the scaling against the base model: ",
                lengths.base_unread)});
  }
  if (lengths.base_rope_theta && *lengths.base_rope_theta != rope.rope_theta) {
    findings.push_back(
        {LintSeverity::kWarning,
         {"model.rope_theta"},
         StrCat("model.rope_theta is ", rope.rope_theta, ", but ",
                lengths.base_source, " says the base was trained with ",
                *lengths.base_rope_theta,
                ": every rotation angle moves, so the run starts far from "
                "the base's loss; set model.rope_theta: ",
                *lengths.base_rope_theta,
                " (or leave it out), unless raising it is the extension "
                "method")});
  }
}

std::vector<LintFinding> LintContextExtension(const ModelConfig& model,
                                              const ExtensionLengths& lengths) {
  const RopeScalingConfig& rope = model.rope;
  std::vector<LintFinding> findings = LintRopeRange(rope, lengths);
  CheckPretraining(rope, lengths, findings);
  CheckAgainstBase(rope, lengths, findings);
  const std::optional<BaseLength> original = BaseLengthOf(rope, lengths);
  if (original) {
    CheckFactorAgainstRatio(rope, *original, findings);
    if (lengths.train_seq_len) {
      CheckTrainingCoverage(rope, *original, *lengths.train_seq_len, findings);
    }
  }
  CheckFactorOne(rope, original, findings);
  CheckYarnRamp(rope, findings);
  CheckLongRopeUsesLongFactor(rope, lengths, findings);
  if (lengths.train_seq_len) {
    CheckDynamicTraining(rope, *lengths.train_seq_len, findings);
  }
  CheckEvaluationBeyond(rope, lengths, findings);
  std::stable_partition(
      findings.begin(), findings.end(),
      [](const LintFinding& f) { return f.severity == LintSeverity::kError; });
  return findings;
}

bool HasLintErrors(const std::vector<LintFinding>& findings) {
  return std::any_of(
      findings.begin(), findings.end(),
      [](const LintFinding& f) { return f.severity == LintSeverity::kError; });
}

std::string FormatLintFinding(const LintFinding& finding) {
  return StrCat(finding.severity == LintSeverity::kError ? "error" : "warning",
                ": ", finding.message);
}

}  // namespace rotor::train
