#include "train/extend/results.h"

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

namespace rotor::train {

std::string VariantName(RopeType method, bool finetuned, bool lora) {
  return std::string(RopeTypeName(method)) +
         (finetuned ? "-finetuned" : "-zeroshot") + (lora ? "-lora" : "");
}

const LengthPerplexity* PerplexityAt(const VariantResult& result,
                                     int64_t length) {
  for (const LengthPerplexity& p : result.perplexity) {
    if (p.length == length) return &p;
  }
  return nullptr;
}

bool HasPasskeyLength(const VariantResult& result, int64_t length) {
  for (const PasskeyCell& c : result.passkey) {
    if (c.length == length) return true;
  }
  return false;
}

const VariantResult* FindVariant(const std::vector<VariantResult>& results,
                                 RopeType method, bool finetuned, bool lora) {
  for (const VariantResult& r : results) {
    if (r.method == method && r.finetuned == finetuned && r.lora == lora) {
      return &r;
    }
  }
  return nullptr;
}

namespace {

Json ToJson(const VariantResult& result) {
  Json json = {
      {"method", RopeTypeName(result.method)},
      {"finetuned", result.finetuned},
      {"perplexity", RecordsJson(result.perplexity, RecordForm::kStored)},
      {"passkey", RecordsJson(result.passkey, RecordForm::kStored)},
      {"retrieval", RecordsJson(result.retrieval, RecordForm::kStored)},
      {"eval_seconds", result.eval_seconds},
      {"finetune_seconds", result.finetune_seconds}};
  if (result.lora) json["lora"] = true;
  if (!result.eval_part_seconds.empty()) {
    Json& parts = json["eval_part_seconds"] = Json::object();
    for (const auto& [part, seconds] : result.eval_part_seconds) {
      parts[EvalPartName(part)] = seconds;
    }
  }
  json["inputs"] = result.inputs;
  return json;
}

std::map<std::string, std::string> InputsFromJson(const Json& json,
                                                  const std::string& source) {
  ROTOR_CHECK(json.is_object(), source, ": inputs must be an object");
  std::map<std::string, std::string> inputs;
  for (const auto& [part, fingerprint] : json.items()) {
    inputs[part] = JsonAs<std::string>(fingerprint, source + ": inputs");
  }
  return inputs;
}

// The records of the array `key`, each named in errors by the file and its
// JSON path: "f.json: /perplexity/0: \"length\": must be >= 1, got 0".
template <typename Record>
void RecordsFromJson(const Json& json, const char* key,
                     const std::string& source, std::vector<Record>& out) {
  ROTOR_CHECK(json.contains(key), source, ": missing key \"", key, "\"");
  const Json& items = json.at(key);
  ROTOR_CHECK(items.is_array(), source, ": \"", key,
              "\": expected an array, got ", items.type_name());
  for (size_t i = 0; i < items.size(); ++i) {
    out.push_back(
        RecordFromJson<Record>(items[i], StrCat(source, ": /", key, "/", i)));
  }
}

// {"perplexity": 4.5, "passkey": 12.0, ...}: seconds by EvalPartName.
std::map<EvalPart, double> EvalPartSecondsFromJson(const Json& json,
                                                   const std::string& source) {
  const std::string where = source + ": eval_part_seconds";
  ROTOR_CHECK(json.is_object(), where, " must be an object");
  std::map<EvalPart, double> seconds;
  for (const auto& item : json.items()) {
    // A named variable, not a structured binding: C++17 lambdas (clang's)
    // cannot capture those.
    const std::string& name = item.key();
    const EvalPart* part =
        std::find_if(std::begin(kEvalParts), std::end(kEvalParts),
                     [&](EvalPart p) { return name == EvalPartName(p); });
    ROTOR_CHECK(part != std::end(kEvalParts), where, ": unknown part \"", name,
                "\" (the parts: perplexity, passkey, retrieval)");
    seconds[*part] = JsonAs<double>(item.value(), where + "." + name);
  }
  return seconds;
}

VariantResult VariantResultFromJson(const Json& json,
                                    const std::string& source) {
  VariantResult r;
  const std::string method = JsonMember<std::string>(json, "method", source);
  const std::optional<RopeType> type = RopeTypeFromName(method);
  ROTOR_CHECK(type.has_value(), source, ": unknown method \"", method, "\"");
  r.method = *type;
  r.finetuned = JsonMember<bool>(json, "finetuned", source);
  r.lora = json.contains("lora") && JsonMember<bool>(json, "lora", source);
  RecordsFromJson(json, "perplexity", source, r.perplexity);
  RecordsFromJson(json, "passkey", source, r.passkey);
  if (json.contains("retrieval")) {
    RecordsFromJson(json, "retrieval", source, r.retrieval);
  }
  r.eval_seconds = JsonMember<double>(json, "eval_seconds", source);
  r.finetune_seconds = JsonMember<double>(json, "finetune_seconds", source);
  if (json.contains("eval_part_seconds")) {
    r.eval_part_seconds =
        EvalPartSecondsFromJson(json["eval_part_seconds"], source);
  }
  if (json.contains("inputs"))
    r.inputs = InputsFromJson(json["inputs"], source);
  return r;
}

}  // namespace

std::map<std::string, std::string> LoadInputsRecord(const std::string& folder) {
  const std::string path = folder + "/report_inputs.json";
  if (!std::filesystem::exists(path)) return {};
  return InputsFromJson(ParseJson(ReadFile(path), path), path);
}

void SaveInputsRecord(const std::string& folder,
                      const std::map<std::string, std::string>& inputs) {
  std::filesystem::create_directories(folder);
  WriteFileAtomically(folder + "/report_inputs.json",
                      Json(inputs).dump(2) + "\n");
}

std::string InputsDifferences(
    const std::map<std::string, std::string>& stored,
    const std::map<std::string, std::string>& wanted) {
  std::string differences;
  for (const auto& [part, fingerprint] : wanted) {
    const auto found = stored.find(part);
    if (found != stored.end() && found->second == fingerprint) continue;
    differences += (differences.empty() ? "" : ", ") + part;
  }
  return differences;
}

std::string VariantResultPath(const std::string& output_dir, RopeType method,
                              bool finetuned, bool lora) {
  return output_dir + "/results/" + VariantName(method, finetuned, lora) +
         ".json";
}

std::string ReportExportDir(const std::string& output_dir, RopeType method,
                            bool lora) {
  return StrCat(output_dir, "/export/", RopeTypeName(method),
                lora ? "-lora" : "");
}

std::optional<VariantResult> LoadVariantResult(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  return VariantResultFromJson(ParseJson(ReadFile(path), path), path);
}

void SaveVariantResult(const std::string& path, const VariantResult& result) {
  WriteFileAtomically(path, ToJson(result).dump(2) + "\n");
}

void SaveAllResults(const std::string& output_dir,
                    const std::string& base_checkpoint, int64_t base_length,
                    double factor, const std::vector<VariantResult>& results) {
  Json variants = Json::array();
  for (const VariantResult& r : results) variants.push_back(ToJson(r));
  const Json all = {{"base_checkpoint", base_checkpoint},
                    {"base_length", base_length},
                    {"factor", factor},
                    {"variants", std::move(variants)}};
  WriteFileAtomically(output_dir + "/results.json", all.dump(2) + "\n");
}

AllResults LoadAllResults(const std::string& output_dir) {
  const std::string path = output_dir + "/results.json";
  ROTOR_CHECK(std::filesystem::exists(path), path,
              ": no such file (rotor extend-report writes it into its "
              "output_dir)");
  const Json json = ParseJson(ReadFile(path), path);
  AllResults all;
  all.base_checkpoint = JsonMember<std::string>(json, "base_checkpoint", path);
  all.base_length = JsonMember<int64_t>(json, "base_length", path);
  all.factor = JsonMember<double>(json, "factor", path);
  ROTOR_CHECK(json.contains("variants") && json.at("variants").is_array(), path,
              ": \"variants\" must be an array of results");
  for (const Json& variant : json.at("variants")) {
    all.variants.push_back(VariantResultFromJson(variant, path));
  }
  return all;
}

}  // namespace rotor::train
