#include "tools/cli.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "core/limits.h"
#include "train/checkpoint.h"
#include "train/config/hf_config.h"
#include "train/config/train_config.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/message.h"

namespace rotor {
namespace tools {

CLI::App* AddCommand(CLI::App& rotor, const std::string& name,
                     const std::string& summary, const std::string& details) {
  CLI::App* command = rotor.add_subcommand(name, summary)->group("Commands");
  command->footer(details);
  command->get_help_ptr()->disable_flag_override();  // --help=yes is a mistake
  return command;
}

CLI::Validator NumberIn(double min, double max, bool open) {
  std::ostringstream range;  // shortest form: 1e-09, not 0.000000
  if (open) {
    range << "greater than " << min << " and less than " << max;
  } else {
    range << "in [" << min << ", " << max << "]";
  }
  return CLI::Validator(
      [min, max, open, range = range.str()](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value)) {
          return "expects a number, got '" + text + "'";
        }
        if (open ? !(value > min && value < max)
                 : !(value >= min && value <= max)) {
          return "must be " + range + ", got " + text;
        }
        // Exactly strtod's double, in a form CLI11's own conversion (through
        // long double) cannot round differently.
        char exact[40];
        std::snprintf(exact, sizeof(exact), "%a", value);
        text = exact;
        return "";
      },
      "");
}

CLI::Validator NotEmpty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "needs a value" : "";
      },
      "");
}

CLI::Option* AddNumberOption(CLI::App& command, const std::string& name,
                             double& value, double min, double max,
                             const std::string& help, bool open) {
  return command.add_option(name, value, help)
      ->type_name("X")
      ->transform(NumberIn(min, max, open));
}

CLI::Option* AddCheckpointOption(CLI::App& command, std::string& checkpoint) {
  return command
      .add_option("--checkpoint", checkpoint,
                  "a checkpoint folder, or a run's output_dir (its\n"
                  "newest checkpoint)")
      ->type_name("DIR")
      ->required();
}

CLI::Option* AddForceOption(CLI::App& command, bool& force) {
  return command.add_flag("--force", force,
                          "replace an output file that exists");
}

CLI::Option* AddThreadsOption(CLI::App& command, int64_t& threads) {
  return AddIntegerOption(command, "--threads", threads, 0, limits::kMaxThreads,
                          "0 = all cores (default)");
}

CLI::Option* AddPrecisionOption(CLI::App& command, std::string& precision) {
  return command
      .add_option("--precision", precision,
                  "the matmuls' precision: fp32, or bf16 (bf16 operands,\n"
                  "float32 sums; default: the run's train.precision)")
      ->type_name("fp32|bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
}

std::unique_ptr<MatmulPrecisionScope> UsePrecision(
    const std::string& flag, const train::TrainConfig& config,
    const std::string& checkpoint) {
  const MatmulPrecision precision =
      flag.empty() ? config.train.precision : train::ParsePrecision(flag);
  if (precision == MatmulPrecision::kBfloat16) {
    const std::string problem = BfloatMatmulProblem();
    ROTOR_CHECK(problem.empty(),
                flag.empty() ? StrCat(checkpoint,
                                      ": its run's train.precision is bf16, "
                                      "but ",
                                      problem, "; give --precision fp32")
                             : StrCat("--precision bf16: ", problem));
  }
  return std::make_unique<MatmulPrecisionScope>(precision);
}

std::vector<train::TokenId> ParseTokenIds(const std::string& text,
                                          const std::string& where) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<std::string> items;
  if (first != std::string::npos && text[first] == '[') {
    const train::Json array = train::ParseJson(text, where);
    ROTOR_CHECK(array.is_array(), where, ": expected a JSON array of ids");
    for (const train::Json& item : array) items.push_back(item.dump());
  } else {
    std::string item;
    for (const char c : text + " ") {
      if (c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '\r') {
        if (!item.empty()) items.push_back(item);
        item.clear();
      } else {
        item += c;
      }
    }
  }
  std::vector<train::TokenId> ids;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    train::TokenId id = 0;
    const auto [end, error] =
        std::from_chars(item.data(), item.data() + item.size(), id);
    ROTOR_CHECK(error == std::errc() && end == item.data() + item.size(), where,
                ": item ", i, " ('", train::Excerpt(item),
                "') is not an integer token id");
    ids.push_back(id);
  }
  return ids;
}

std::vector<train::TokenId> ReadTokenIdsFile(const std::string& path) {
  return ParseTokenIds(
      train::ReadFile(path, static_cast<size_t>(limits::kMaxTokenIdsFileBytes)),
      path);
}

void CheckModelInputIds(const std::vector<train::TokenId>& ids,
                        int64_t vocab_size, const std::string& where) {
  ROTOR_CHECK(!ids.empty(), where, ": no token ids");
  for (size_t i = 0; i < ids.size(); ++i) {
    ROTOR_CHECK(ids[i] >= 0 && ids[i] < vocab_size, where, ": item ", i, " (",
                ids[i], ") is outside the model's vocabulary [0, ", vocab_size,
                ")");
  }
}

std::string FormatTokenIds(const std::vector<train::TokenId>& ids, bool json) {
  std::string line = json ? "[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += json ? ", " : " ";
    line += std::to_string(ids[i]);
  }
  if (json) line += "]";
  return line;
}

train::ModelEdit WithOverrides(const std::string& checkpoint,
                               train::ModelEdit edit,
                               const std::vector<std::string>& overrides) {
  if (overrides.empty()) return edit;
  const std::string dir = train::ResolveCheckpointPath(checkpoint);
  if (train::IsHfModelFolder(dir)) {
    edit.model = train::OverrideModelConfig(
        train::LoadCheckpointModelConfig(checkpoint, edit).model, overrides,
        dir + "/config.json");
  } else {
    train::CheckModelOverrides(overrides, checkpoint);
    // A rotor checkpoint's overrides are read with its config.yaml, as
    // rotor train read it: a run fine-tuned from a Hugging Face folder
    // still takes the folder's pre-training length for a rope_scaling that
    // leaves it out, and train.seq_len is checked against the new positions.
    const std::string text =
        edit.rope.empty()
            ? train::LoadCheckpointConfig(dir)
            : train::TrainConfigToYaml(
                  train::LoadCheckpointModelConfig(checkpoint, edit));
    edit.model =
        train::ParseTrainConfig(text, dir + "/config.yaml", overrides).model;
  }
  edit.rope = {};
  edit.source =
      edit.source.empty() ? "overrides" : edit.source + " and overrides";
  return edit;
}

namespace {

// The file a resolved model folder's config is read from.
std::string ModelConfigFile(const std::string& dir) {
  return dir + (train::IsHfModelFolder(dir) ? "/config.json" : "/config.yaml");
}

}  // namespace

train::PretrainingLength CheckpointPretrainingLength(
    const std::string& checkpoint) {
  return train::PretrainingLengthOf(
      train::LoadCheckpointModelConfig(checkpoint).model,
      ModelConfigFile(train::ResolveCheckpointPath(checkpoint)));
}

train::ExtensionLengths TrainingLengths(const train::TrainConfig& config) {
  train::ExtensionLengths lengths;
  lengths.train_seq_len = config.train.seq_len;
  const std::string& base = config.train.init_from;
  if (base.empty()) return lengths;
  if (!std::filesystem::exists(base)) {
    std::error_code error;
    lengths.base_unread = StrCat(
        "train.init_from ", base, " does not exist",
        std::filesystem::path(base).is_relative()
            ? StrCat(" (a relative path is taken from the working folder, ",
                     std::filesystem::current_path(error).string(), ")")
            : std::string());
    return lengths;
  }
  const std::string dir = train::ResolveCheckpointPath(base);
  const train::ModelConfig model = train::LoadCheckpointModelConfig(base).model;
  lengths.base_source = ModelConfigFile(dir);
  lengths.pretraining = train::PretrainingLengthOf(model, lengths.base_source);
  lengths.base_rope_theta = model.rope.rope_theta;
  return lengths;
}

namespace {

// Whether LoadRopeModel reads `path` as a Hugging Face config.json.
bool IsJsonFile(const std::string& path) {
  const std::string json = ".json";
  return path.size() > json.size() &&
         path.compare(path.size() - json.size(), json.size(), json) == 0;
}

}  // namespace

train::ModelConfig LoadRopeModel(const std::string& path,
                                 const std::vector<std::string>& overrides,
                                 train::ExtensionLengths* lengths) {
  const bool folder = std::filesystem::is_directory(path);
  if (folder || IsJsonFile(path)) {
    const train::ModelConfig model =
        folder ? train::LoadCheckpointModelConfig(path).model
               : train::LoadHfConfig(path);
    // The weights and tokenizer beside a config.json are its model's too
    // (a folder's are noted as it is resolved).
    if (!folder) {
      train::NoteModelFilesAsInputs(
          std::filesystem::path(path).parent_path().string());
    }
    return overrides.empty()
               ? model
               : train::OverrideModelConfig(model, overrides, path);
  }
  std::optional<train::TrainConfig> training;
  const train::ModelConfig model =
      train::LoadConfigFileModel(path, overrides, &training);
  if (lengths != nullptr && training) *lengths = TrainingLengths(*training);
  return model;
}

train::RopeEdit RopeEditFromPath(const std::string& path) {
  if (!std::filesystem::is_directory(path) && !IsJsonFile(path)) {
    return train::RopeEditFromConfig(path);
  }
  const RopeScalingConfig rope = LoadRopeModel(path, {}).rope;
  train::RopeEdit edit;
  edit.max_position_embeddings = rope.max_position_embeddings;
  edit.rope_theta = rope.rope_theta;
  edit.rope_scaling = rope;
  return edit;
}

CLI::Option* AddRopeOverrideArguments(CLI::App& command,
                                      std::vector<std::string>& overrides) {
  return AddOverrides(command, overrides,
                      "overrides of the checkpoint's config (RoPE settings\n"
                      "only), e.g. model.rope_scaling.factor=4");
}

void AddRopeOverrideOptions(CLI::App& command, RopeOverrides& rope) {
  command
      .add_option("--rope-from", rope.rope_from,
                  "use the max_position_embeddings, rope_theta and\n"
                  "rope_scaling of PATH's model: a YAML config's model:\n"
                  "section, a Hugging Face config.json or model folder\n"
                  "(any PATH rope --config takes)")
      ->type_name("PATH")
      ->check(NotEmpty());
  AddRopeOverrideArguments(command, rope.overrides);
}

train::ModelEdit RopeOverrideEdit(const std::string& checkpoint,
                                  const std::string& rope_from,
                                  const std::vector<std::string>& overrides) {
  train::ModelEdit edit;
  if (!rope_from.empty()) {
    edit.rope = RopeEditFromPath(rope_from);
    edit.source = rope_from + "'s RoPE settings";
  }
  return WithOverrides(checkpoint, edit, overrides);
}

void EnforceRopeLint(const std::string& checkpoint,
                     const std::string& rope_from,
                     const std::vector<std::string>& overrides,
                     const train::ModelConfig& model,
                     train::ExtensionLengths lengths,
                     const std::string& command) {
  std::string source = checkpoint;
  if (!rope_from.empty() || !overrides.empty()) {
    // A changed model is checked against the length the checkpoint's
    // model was pre-trained at.
    lengths.pretraining = CheckpointPretrainingLength(checkpoint);
    source += rope_from.empty() ? " with overrides"
                                : " with --rope-from " + rope_from;
  }
  EnforceLintFindings(train::LintContextExtension(model, lengths), source,
                      command, std::cerr);
}

std::unique_ptr<nn::Transformer> LoadModelWithRopeOverrides(
    const std::string& checkpoint, const RopeOverrides& rope,
    const std::string& command, train::TrainConfig* config) {
  const train::ModelEdit edit =
      RopeOverrideEdit(checkpoint, rope.rope_from, rope.overrides);
  if (!rope.empty()) {
    EnforceRopeLint(checkpoint, rope.rope_from, rope.overrides,
                    train::LoadCheckpointModelConfig(checkpoint, edit).model,
                    {}, command);
  }
  return train::LoadCheckpointModel(checkpoint, edit, config);
}

void CheckDistinctValues(const std::string& flag,
                         const std::vector<std::string>& values) {
  std::set<std::string> seen;
  for (const std::string& value : values) {
    if (value.empty()) throw CLI::ValidationError(flag + ": an empty value");
    if (!seen.insert(value).second) {
      throw CLI::ValidationError(flag + ": '" + value + "' is given twice");
    }
  }
}

void EnforceLintFindings(const std::vector<train::LintFinding>& findings,
                         const std::string& source, const std::string& command,
                         std::ostream& warnings) {
  std::string errors;
  for (const train::LintFinding& finding : findings) {
    if (finding.severity == train::LintSeverity::kError) {
      errors +=
          StrCat(errors.empty() ? "" : "\n", source, ": ", finding.message);
    } else {
      warnings << "rotor " << command << ": warning: " << source << ": "
               << finding.message << "\n";
    }
  }
  if (!errors.empty()) throw Error(errors);
}

CLI::Option* AddOverrides(CLI::App& command,
                          std::vector<std::string>& overrides,
                          const std::string& help) {
  return command.add_option("overrides", overrides, help)
      ->type_name("key.path=value")
      ->check(CLI::Validator(
          [](std::string& word) -> std::string {
            if (word.find('=') != std::string::npos) return "";
            return "unexpected argument '" + word +
                   "' is neither a flag nor a key.path=value override";
          },
          ""));
}

void AddConfigWithOverrides(CLI::App& command, std::string& config_path,
                            const std::string& config_help,
                            std::vector<std::string>& overrides,
                            const std::string& overrides_help) {
  command.add_option("config", config_path, config_help)
      ->type_name("CONFIG.yaml")
      ->required();
  AddOverrides(command, overrides, overrides_help);
}

}  // namespace tools
}  // namespace rotor
