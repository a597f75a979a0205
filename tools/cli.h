// What rotor's commands share on top of CLI11: the subcommand set-up, the
// value checks of their flags (ranges, comma-separated lists, non-empty
// paths) and the positional key.path=value overrides. A failed check is a
// usage error: main reports "rotor CMD: --flag: PROBLEM (see 'rotor CMD
// --help')" and exits with status 2.
#ifndef ROTOR_TOOLS_CLI_H_
#define ROTOR_TOOLS_CLI_H_

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/ops/gemm.h"
#include "nn/transformer.h"
#include "train/config/extension_lint.h"
#include "train/config/model_edit.h"
#include "train/config/train_config.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor {
namespace tools {

// Adds the subcommand `name` to `rotor`: `summary` is its line in
// `rotor --help`, `details` follows the options in `rotor NAME --help`.
CLI::App* AddCommand(CLI::App& rotor, const std::string& name,
                     const std::string& summary, const std::string& details);

// A base-10 integer in [min, max] (max: the type's largest by default;
// the size limits are in core/limits.h). Add it with ->transform(), not
// ->check(): it rewrites the value in canonical form, since CLI11's own
// conversion would read 010 as octal.
template <typename Integer>
CLI::Validator IntegerAtLeast(
    Integer min, Integer max = std::numeric_limits<Integer>::max()) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        Integer value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end ||
            value < min || value > max) {
          return max == std::numeric_limits<Integer>::max()
                     ? StrCat("expects an integer >= ", min, ", got '", text,
                              "'")
                     : StrCat("expects an integer in [", min, ", ", max,
                              "], got '", text, "'");
        }
        text = std::to_string(value);
        return "";
      },
      "");
}

// A finite number in [min, max], or in (min, max) when `open`. Add it with
// ->transform(): it rewrites the value as strtod read it, exactly.
CLI::Validator NumberIn(double min, double max, bool open = false);

// Refuses an empty value (e.g. --plot '').
CLI::Validator NotEmpty();

// An integer flag `name` N in [min, max] (`value` alone sets the type).
template <typename Integer>
CLI::Option* AddIntegerOption(CLI::App& command, const std::string& name,
                              Integer& value, std::common_type_t<Integer> min,
                              std::common_type_t<Integer> max,
                              const std::string& help) {
  return command.add_option(name, value, help)
      ->type_name("N")
      ->transform(IntegerAtLeast(min, max));
}

// An integer flag `name` N, at least `min`.
template <typename Integer>
CLI::Option* AddIntegerOption(CLI::App& command, const std::string& name,
                              Integer& value, std::common_type_t<Integer> min,
                              const std::string& help) {
  return AddIntegerOption(command, name, value, min,
                          std::numeric_limits<Integer>::max(), help);
}

// A number flag `name` X, in [min, max] or, when `open`, in (min, max).
CLI::Option* AddNumberOption(CLI::App& command, const std::string& name,
                             double& value, double min, double max,
                             const std::string& help, bool open = false);

// A comma-separated list flag, e.g. --lengths 256,512, whose items each
// pass `item` (IntegerAtLeast or NumberIn). One argument per use, so a
// positional override after it is not taken as another item.
template <typename T>
CLI::Option* AddListOption(CLI::App& command, const std::string& name,
                           std::vector<T>& values, const CLI::Validator& item,
                           const std::string& help) {
  return command.add_option(name, values, help)
      ->delimiter(',')
      ->allow_extra_args(false)
      ->option_text("LIST")
      ->transform(item);
}

// Throws the usage error "FLAG: lists N items, more than rotor's limit of
// MAX" when a list flag's `values` hold more than `max_items`.
template <typename T>
void RequireAtMostItems(const std::vector<T>& values, int64_t max_items,
                        const std::string& flag) {
  if (static_cast<uint64_t>(values.size()) > static_cast<uint64_t>(max_items)) {
    throw CLI::ValidationError(
        flag, StrCat("lists ", values.size(),
                     " items, more than rotor's limit of ", max_items));
  }
}

// --checkpoint DIR (required), as eval and generate take it.
CLI::Option* AddCheckpointOption(CLI::App& command, std::string& checkpoint);

// --force: lets the command replace an existing output file (never an
// input, a folder or a device: train/io/output_file.h).
CLI::Option* AddForceOption(CLI::App& command, bool& force);

// --threads N (0 = all cores), for rotor::SetNumThreads.
CLI::Option* AddThreadsOption(CLI::App& command, int64_t& threads);

// --precision fp32|bf16: the matmuls' precision of a command that runs a
// model (eval, score, generate); unset, the run's own train.precision.
CLI::Option* AddPrecisionOption(CLI::App& command, std::string& precision);

// Sets the precision of every product while the result lives: `flag`
// (AddPrecisionOption's value) when given, else `config`'s train.precision
// (the checkpoint's run; fp32 for a Hugging Face folder). Throws, naming
// the flag or the checkpoint and what this machine or build lacks, where
// bf16 cannot run.
std::unique_ptr<MatmulPrecisionScope> UsePrecision(
    const std::string& flag, const train::TrainConfig& config,
    const std::string& checkpoint);

// The token ids of `text`: a JSON array of integers, or integers separated
// by spaces, commas or newlines (none: an empty list). `where` names the
// source in errors ("--ids" or a file); an item that is not an id is named
// by its position: "--ids: item 2 ('x') is not an integer token id".
// Throws rotor::Error.
std::vector<train::TokenId> ParseTokenIds(const std::string& text,
                                          const std::string& where);

// ParseTokenIds of the file `path`, which may hold at most
// limits::kMaxTokenIdsFileBytes bytes.
std::vector<train::TokenId> ReadTokenIdsFile(const std::string& path);

// Throws rotor::Error naming `where` unless `ids` is what a model of
// `vocab_size` ids can read: at least one id, each in [0, vocab_size):
// "--prompt-ids: item 3 (300) is outside the model's vocabulary [0, 257)".
void CheckModelInputIds(const std::vector<train::TokenId>& ids,
                        int64_t vocab_size, const std::string& where);

// `ids` on one line: "1 2 3", or with `json` the JSON array "[1, 2, 3]".
std::string FormatTokenIds(const std::vector<train::TokenId>& ids, bool json);

// The positional section.key=value overrides of a config; a word without
// '=' is refused.
CLI::Option* AddOverrides(CLI::App& command,
                          std::vector<std::string>& overrides,
                          const std::string& help);

// `edit` (e.g. --rope-from's RoPE settings), then the command line's
// model.key=value `overrides` of checkpoint `checkpoint`'s model, read by
// the model table (train::OverrideModelConfig), as the one edit
// train::LoadCheckpointModel takes.
train::ModelEdit WithOverrides(const std::string& checkpoint,
                               train::ModelEdit edit,
                               const std::vector<std::string>& overrides);

// The pre-training length of the model `checkpoint` names (a run, a
// checkpoint or a Hugging Face folder), as its config file declares it.
train::PretrainingLength CheckpointPretrainingLength(
    const std::string& checkpoint);

// The lengths the context-extension lint checks a training config against:
// train.seq_len, and the pre-training length of train.init_from's model (a
// Hugging Face folder or a rotor checkpoint) when it exists.
train::ExtensionLengths TrainingLengths(const train::TrainConfig& config);

// The model `path` names, resolved as train and eval resolve it: a folder
// (a run's output_dir, a checkpoint, a Hugging Face model) as eval's
// --checkpoint, a .json file as a Hugging Face config.json, a YAML file as
// train's config (only a model: section is enough); `overrides` as either
// applies them. `lengths`, when given, gets what the context-extension lint
// checks it against: a training config's train.seq_len and base. What
// `rotor rope --config` takes.
train::ModelConfig LoadRopeModel(const std::string& path,
                                 const std::vector<std::string>& overrides,
                                 train::ExtensionLengths* lengths = nullptr);

// What `rotor eval --rope-from PATH` changes: a YAML file's model: keys
// that it gives (train::RopeEditFromConfig); a folder or a config.json,
// resolved as LoadRopeModel does, gives its model's whole RoPE
// (max_position_embeddings, rope_theta, rope_scaling).
train::RopeEdit RopeEditFromPath(const std::string& path);

// The RoPE settings a command runs a checkpoint's model with instead of its
// own: --rope-from PATH (RopeEditFromPath) and the positional
// model.key=value overrides, as `rotor eval` takes them (eval, which
// compares several --rope-from files, adds its own list flag).
struct RopeOverrides {
  std::string rope_from;  // "": none
  std::vector<std::string> overrides;
  bool empty() const { return rope_from.empty() && overrides.empty(); }
};

// Adds --rope-from PATH and the overrides (AddRopeOverrideArguments).
void AddRopeOverrideOptions(CLI::App& command, RopeOverrides& rope);

// The positional model.key=value overrides of the checkpoint's RoPE
// settings (eval, score, generate).
CLI::Option* AddRopeOverrideArguments(CLI::App& command,
                                      std::vector<std::string>& overrides);

// How `checkpoint`'s model is changed: `rope_from`'s RoPE settings (none
// for ""), then the command line's key=value `overrides`, read by the model
// table (WithOverrides).
train::ModelEdit RopeOverrideEdit(const std::string& checkpoint,
                                  const std::string& rope_from,
                                  const std::vector<std::string>& overrides);

// The context-extension lint of `model` (`checkpoint`'s model as `rope_from`
// and `overrides` change it) against `lengths`, and when changed also
// against the checkpoint's pre-training length: warnings go to std::cerr
// ("rotor COMMAND: warning: ..."), errors are thrown, naming the checkpoint
// and the change.
void EnforceRopeLint(const std::string& checkpoint,
                     const std::string& rope_from,
                     const std::vector<std::string>& overrides,
                     const train::ModelConfig& model,
                     train::ExtensionLengths lengths,
                     const std::string& command);

// `checkpoint`'s model with `rope`'s settings, after their lint
// (EnforceRopeLint, without lengths) passed; `config` gets the config in
// force. What score and generate run.
std::unique_ptr<nn::Transformer> LoadModelWithRopeOverrides(
    const std::string& checkpoint, const RopeOverrides& rope,
    const std::string& command, train::TrainConfig* config);

// Refuses (a usage error naming `flag`) an empty value of a list flag and
// one given twice.
void CheckDistinctValues(const std::string& flag,
                         const std::vector<std::string>& values);

// Prints the lint's warnings about `source` to `warnings` ("rotor COMMAND:
// warning: SOURCE: ..."), then throws its errors, one line each, naming
// `source`.
void EnforceLintFindings(const std::vector<train::LintFinding>& findings,
                         const std::string& source, const std::string& command,
                         std::ostream& warnings);

// The positional CONFIG.yaml (required), then its overrides.
void AddConfigWithOverrides(CLI::App& command, std::string& config_path,
                            const std::string& config_help,
                            std::vector<std::string>& overrides,
                            const std::string& overrides_help);

}  // namespace tools
}  // namespace rotor

#endif  // ROTOR_TOOLS_CLI_H_
