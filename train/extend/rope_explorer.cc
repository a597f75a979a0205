#include "train/extend/rope_explorer.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "train/checkpoint.h"
#include "train/extend/recipe.h"
#include "train/extend/rope_explorer_page.h"
#include "train/io/json.h"
#include "train/io/markdown_html.h"

namespace rotor::train {

namespace {

constexpr RopeType kMethods[] = {RopeType::kDefault, RopeType::kLinear,
                                 RopeType::kNtk,     RopeType::kDynamic,
                                 RopeType::kYarn,    RopeType::kLlama3,
                                 RopeType::kLongRope};

Json OptionalNumber(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// Every field of RopeScalingConfig, in nn/rope_scaling.h's names, for the
// page's mirror of ComputeRopeFrequencies.
Json RopeSettingsJson(const RopeScalingConfig& rope) {
  Json json = {
      {"rope_type", RopeTypeName(rope.rope_type)},
      {"rope_theta", rope.rope_theta},
      {"head_dim", rope.head_dim},
      {"partial_rotary_factor", rope.partial_rotary_factor},
      {"max_position_embeddings", rope.max_position_embeddings},
      {"factor", OptionalNumber(rope.factor)},
      {"original_max_position_embeddings",
       rope.original_max_position_embeddings
           ? Json(*rope.original_max_position_embeddings)
           : Json(nullptr)},
      {"attention_factor", OptionalNumber(rope.attention_factor)},
      {"beta_fast", rope.beta_fast},
      {"beta_slow", rope.beta_slow},
      {"mscale", OptionalNumber(rope.mscale)},
      {"mscale_all_dim", OptionalNumber(rope.mscale_all_dim)},
      {"truncate", rope.truncate},
      {"low_freq_factor", OptionalNumber(rope.low_freq_factor)},
      {"high_freq_factor", OptionalNumber(rope.high_freq_factor)},
      {"short_factor", rope.short_factor ? Json(*rope.short_factor) : Json()},
      {"long_factor", rope.long_factor ? Json(*rope.long_factor) : Json()}};
  return json;
}

// The measurements of one variant: [length, perplexity], [length, mean
// passkey accuracy] and [length, retrieval accuracy over tasks and depths]
// pairs.
Json MeasuredJson(const VariantResult& result) {
  Json perplexity = Json::array();
  for (const LengthPerplexity& p : result.perplexity) {
    perplexity.push_back({p.length, p.perplexity});
  }
  Json passkey = Json::array();
  int64_t last = -1;
  for (const PasskeyCell& cell : result.passkey) {
    if (cell.length == last) continue;
    last = cell.length;
    passkey.push_back({cell.length, PasskeyAccuracyAt(result.passkey, last)});
  }
  std::set<int64_t> retrieval_lengths;
  for (const RetrievalCell& cell : result.retrieval) {
    retrieval_lengths.insert(cell.length);
  }
  Json retrieval = Json::array();
  for (int64_t length : retrieval_lengths) {
    retrieval.push_back(
        {length, *RetrievalMeanAccuracyAt(result.retrieval, length)});
  }
  return {{"perplexity", perplexity},
          {"passkey", passkey},
          {"retrieval", retrieval}};
}

// One method of `model`: the settings at the default slider position, what
// rotor computes from them there and the method's measurements.
Json MethodJson(const ExplorerModel& model, RopeType method) {
  const bool own =
      model.model.rope.rope_type == method && method != RopeType::kDefault;
  // The config's own method as configured; the others as extend-report
  // builds them (recipe.h) for the same base, L0 and s.
  const ModelConfig settings =
      own ? model.model
          : ExtendModelConfig(model.model, method, model.factor,
                              model.original_length);
  const RopeScalingConfig& rope = settings.rope;
  const int64_t length =
      std::llround(model.factor * static_cast<double>(model.original_length));
  const RopeFrequencies f = ComputeRopeFrequencies(rope, length);
  Json json = {
      {"method", RopeTypeName(method)},         {"own", own},
      {"settings", RopeSettingsJson(rope)},     {"inv_freq", f.inv_freq},
      {"attention_factor", f.attention_factor}, {"base", f.base}};
  if (method == RopeType::kYarn) {
    const YarnRampBounds bounds = ComputeYarnRampBounds(rope);
    json["yarn_ramp"] = {bounds.low, bounds.high};
  }
  Json measured = Json::object();
  for (const VariantResult& r : model.measured) {
    if (r.method != method) continue;
    measured[!r.finetuned ? "zeroshot"
             : r.lora     ? "lora"
                          : "finetuned"] = MeasuredJson(r);
  }
  if (!measured.empty()) json["measured"] = measured;
  return json;
}

// JSON text made safe inside a <script> element: "</" would end it early, and
// "<!--" followed by "<script" would keep the HTML parser from ever seeing
// its "</script>" (the "script data double escaped" state), leaving the page
// empty. Every "<" becomes the JSON escape \u003c, which JSON.parse reads
// back as "<" (in JSON a "<" can only stand inside a string).
std::string ForScript(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

ExplorerModel ExplorerModelFromConfig(const std::string& name,
                                      const ModelConfig& model) {
  const RopeScalingConfig& rope = model.rope;
  ExplorerModel out;
  out.name = name;
  out.model = model;
  out.factor = rope.factor.value_or(4.0);
  switch (rope.rope_type) {
    case RopeType::kLinear:
    case RopeType::kNtk:
      out.original_length = std::llround(
          static_cast<double>(rope.max_position_embeddings) / out.factor);
      break;
    case RopeType::kYarn:
    case RopeType::kLlama3:
    case RopeType::kLongRope:
      out.original_length = rope.original_max_position_embeddings.value_or(
          rope.max_position_embeddings);
      if (!rope.factor && rope.rope_type == RopeType::kLongRope) {
        out.factor = static_cast<double>(rope.max_position_embeddings) /
                     static_cast<double>(out.original_length);
      }
      break;
    default:
      out.original_length = rope.max_position_embeddings;
  }
  ROTOR_CHECK(out.factor >= 1.0, name,
              ": the explorer needs a factor >= 1, got ", out.factor);
  return out;
}

ExplorerModel ExplorerModelFromReport(const std::string& report_dir) {
  const AllResults all = LoadAllResults(report_dir);
  ROTOR_CHECK(std::filesystem::exists(all.base_checkpoint), report_dir,
              "/results.json: base_checkpoint \"", all.base_checkpoint,
              "\" does not exist (the explorer reads the base model's "
              "config from it; run from the folder the report ran in)");
  ExplorerModel out;
  out.name = "report " + report_dir;
  // As the report's runner read it: a rotor checkpoint's config.yaml or a
  // Hugging Face folder's config.json.
  out.model = LoadCheckpointModelConfig(all.base_checkpoint).model;
  out.original_length = all.base_length;
  out.factor = all.factor;
  out.measured = all.variants;
  return out;
}

std::string RopeExplorerJson(const std::vector<ExplorerModel>& models) {
  Json sections = Json::array();
  for (const ExplorerModel& model : models) {
    Json methods = Json::array();
    for (RopeType method : kMethods)
      methods.push_back(MethodJson(model, method));
    const RopeScalingConfig& rope = model.model.rope;
    sections.push_back(
        {{"name", model.name},
         {"head_dim", rope.head_dim},
         {"rotary_dim", RotaryDim(rope)},
         {"rope_theta", rope.rope_theta},
         {"original_length", model.original_length},
         {"factor", model.factor},
         {"length", std::llround(model.factor *
                                 static_cast<double>(model.original_length))},
         {"unscaled_inv_freq", UnscaledInvFreq(rope)},
         {"methods", methods}});
  }
  return Json{{"models", sections}}.dump();
}

std::string RopeExplorerFragment(const std::vector<ExplorerModel>& models) {
  return StrCat("<style>", kRopeExplorerStyle, "</style>\n",
                "<section id=\"rope-explorer\"></section>\n",
                "<pre id=\"explorer-state\" hidden></pre>\n",
                "<script type=\"application/json\" id=\"explorer-data\">",
                ForScript(RopeExplorerJson(models)), "</script>\n<script>",
                kRopeExplorerScript, "</script>\n");
}

std::string RopeExplorerPage(const std::string& title,
                             const std::string& body_html,
                             const std::vector<ExplorerModel>& models) {
  return StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n",
      "<meta charset=\"utf-8\">\n<title>", EscapeHtml(title),
      "</title>\n</head>\n<body>\n",
      body_html.empty() ? "<h1>" + EscapeHtml(title) + "</h1>\n" : body_html,
      RopeExplorerFragment(models), "</body>\n</html>\n");
}

}  // namespace rotor::train
