// The measurements of rotor extend-report (train/extend/runner.h), one
// VariantResult per method and zero-shot/fine-tuned (in full, or with LoRA
// when the report asks for both), and their JSON files:
// <output_dir>/results/<variant>.json, written as each evaluation finishes
// so that a rerun reuses it, and <output_dir>/results.json with all of them.
#ifndef ROTOR_TRAIN_EXTEND_RESULTS_H_
#define ROTOR_TRAIN_EXTEND_RESULTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/rope_methods.h"
#include "nn/rope_scaling.h"
#include "train/eval/variant_eval.h"

namespace rotor::train {

// The measurements (perplexity, passkey, retrieval: EvaluateVariant; the
// retrieval cells are absent in results written before the report had
// retrieval tasks), and what they are of.
struct VariantResult : VariantEvaluation {
  RopeType method = RopeType::kDefault;
  bool finetuned = false;
  bool lora =
      false;  // fine-tuned with LoRA (finetune.lora) rather than in full
  double eval_seconds = 0.0;
  // Seconds of each part of the evaluation, as EvaluateVariant measured it:
  // together eval_seconds, but for moments between parts. A part the grid
  // skips has none, and so has every part of a result written before the
  // report recorded them.
  std::map<EvalPart, double> eval_part_seconds;
  // Training time of the fine-tune (its checkpoint's elapsed_seconds, so it
  // counts every invocation that worked on it); 0 for zero-shot.
  double finetune_seconds = 0.0;
  // What the result was computed from, one fingerprint per part ("base",
  // "tokenizer", "data", "method", "eval": ReportRunner's VariantInputs). A
  // stored result is reused only when every part equals this invocation's;
  // results written before the report kept them have none, and are redone.
  std::map<std::string, std::string> inputs;
  // Not stored: whether this invocation found the result stored.
  bool reused = false;
};

// A fine-tune folder's record of the inputs it was trained from
// (<folder>/report_inputs.json): empty when there is none.
std::map<std::string, std::string> LoadInputsRecord(const std::string& folder);
void SaveInputsRecord(const std::string& folder,
                      const std::map<std::string, std::string>& inputs);

// The parts of `stored` that differ from `wanted` (or are missing there),
// e.g. "base, eval"; "" when the two are equal.
std::string InputsDifferences(const std::map<std::string, std::string>& stored,
                              const std::map<std::string, std::string>& wanted);

// "yarn-zeroshot", "yarn-finetuned", "yarn-finetuned-lora": the name of a
// variant's files.
std::string VariantName(RopeType method, bool finetuned, bool lora = false);

// The perplexity measured at `length`, or null.
const LengthPerplexity* PerplexityAt(const VariantResult& result,
                                     int64_t length);
// Whether passkey retrieval was measured at `length`.
bool HasPasskeyLength(const VariantResult& result, int64_t length);
// The result of a variant, or null.
const VariantResult* FindVariant(const std::vector<VariantResult>& results,
                                 RopeType method, bool finetuned,
                                 bool lora = false);

// <output_dir>/results/<VariantName>.json.
std::string VariantResultPath(const std::string& output_dir, RopeType method,
                              bool finetuned, bool lora = false);
// <output_dir>/export/<method>[-lora]: the fine-tune as an HF folder
// (`export: hf`), named as its run folder <output_dir>/finetune/<...>.
std::string ReportExportDir(const std::string& output_dir, RopeType method,
                            bool lora);
// The result stored at `path`, or nullopt if there is none.
std::optional<VariantResult> LoadVariantResult(const std::string& path);
void SaveVariantResult(const std::string& path, const VariantResult& result);

// <output_dir>/results.json: the base checkpoint, L, s and every variant.
void SaveAllResults(const std::string& output_dir,
                    const std::string& base_checkpoint, int64_t base_length,
                    double factor, const std::vector<VariantResult>& results);

// What results.json holds.
struct AllResults {
  std::string base_checkpoint;
  int64_t base_length = 0;  // L
  double factor = 0.0;      // s
  std::vector<VariantResult> variants;
};
// Reads <output_dir>/results.json; throws rotor::Error naming the file when
// it is missing or malformed.
AllResults LoadAllResults(const std::string& output_dir);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EXTEND_RESULTS_H_
