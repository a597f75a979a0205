#include "train/extend/rope_explorer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/limits.h"
#include "nn/rope_methods.h"
#include "nn/rope_scaling.h"
#include "train/checkpoint.h"
#include "train/extend/recipe.h"
#include "train/extend/rope_explorer_page.h"
#include "train/io/json.h"
#include "train/io/markdown_html.h"

namespace rotor::train {

namespace {

// Writes the rows of a config table (VisitFields) that are set and named
// in `only` as the members of a JSON object: numbers, flags, lists of
// numbers, and a Choice's name. Extra row arguments (which methods or
// architectures a row is for) are for the readers.
class FieldsJson {
 public:
  explicit FieldsJson(std::vector<std::string> only) : only_(std::move(only)) {}

  template <typename T, typename Check, typename... Extra>
  void operator()(const Key& key, const T& member, const Check& check,
                  const Extra&...) {
    if (std::find(only_.begin(), only_.end(), key.name) != only_.end()) {
      Set(key, member, check);
    }
  }
  const Json& json() const { return json_; }

 private:
  template <typename T, typename Check>
  void Set(const Key& key, const std::optional<T>& member, const Check& check) {
    if (member) Set(key, *member, check);
  }
  template <typename T, typename Check>
  void Set(const Key& key, const T& member, const Check& check) {
    if constexpr (std::is_enum_v<T>) {
      json_[key.name] = check.name(member);
    } else {
      json_[key.name] = member;
    }
  }

  std::vector<std::string> only_;
  Json json_ = Json::object();
};

// A method's settings as its rope_scaling keys: rope_type and the keys of
// the method that are set, from the config table's rows.
Json RopeSettingsJson(RopeScalingConfig rope) {
  std::vector<std::string> keys = RopeScalingKeys(rope.rope_type);
  keys.push_back("rope_type");
  FieldsJson writer(keys);
  VisitFields(writer, rope);
  return writer.json();
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

// s * L0: the length a model extended by `factor` reaches, within [1,
// rotor's longest sequence].
int64_t ExtendedLength(const ExplorerModel& model, double factor) {
  return std::clamp<int64_t>(
      std::llround(factor * static_cast<double>(model.original_length)), 1,
      limits::kMaxPositions);
}

// The factor slider's stops: 1, 1.25, 1.5 and 1.75 times each power of two
// up to 64, as a log slider with round labels (2, 4, 8, 16 and 32, the
// factors models ship, among them), and the model's own factor, which
// replaces a round stop equal to it at the page's digits (a config's
// 4.0000001 and the stop 4 would draw the same curves twice).
std::vector<double> FactorStops(const ExplorerModel& model) {
  std::set<double> stops = {model.factor};
  for (double octave = 1.0; octave <= 64.0; octave *= 2.0) {
    for (double step : {1.0, 1.25, 1.5, 1.75}) {
      const double stop = step * octave;
      if (stop > 64.0) break;
      if (ExplorerDigits(stop) != ExplorerDigits(model.factor)) {
        stops.insert(stop);
      }
    }
  }
  return {stops.begin(), stops.end()};
}

// The length slider's stops: L0 times each power of two from 1/4 to 64 (up
// to L0 dynamic and longrope change nothing), the model's own s * L0 and
// its max_position_embeddings M (Llama 3.1: M 131072 = 2 s L0), each within
// rotor's longest sequence. One per octave, where the factors have four:
// dynamic has a curve per factor and length, most of the page.
std::vector<int64_t> LengthStops(const ExplorerModel& model) {
  std::set<int64_t> stops = {ExtendedLength(model, model.factor),
                             std::min(model.model.rope.max_position_embeddings,
                                      limits::kMaxPositions)};
  for (double octave = 0.25; octave <= 64.0; octave *= 2.0) {
    stops.insert(ExtendedLength(model, octave));
  }
  return {stops.begin(), stops.end()};
}

// Whether `method` is the config's own (its settings as configured).
bool Own(const ExplorerModel& model, RopeType method) {
  return model.model.rope.rope_type == method && RopeMethodOf(method).scales();
}

// The settings of `method` at factor `s`: the config's own method as
// configured with its factor moved (longrope without a factor: its
// max_position_embeddings, s * L0, from which it derives the factor); the
// others as extend-report builds them (recipe.h) for the same base and L0.
RopeScalingConfig SettingsAt(const ExplorerModel& model, RopeType method,
                             double s) {
  if (!Own(model, method)) {
    return ExtendModelConfig(model.model, method, s, model.original_length)
        .rope;
  }
  RopeScalingConfig rope = model.model.rope;
  if (rope.factor) {
    rope.factor = s;
  } else {
    rope.max_position_embeddings = ExtendedLength(model, s);
  }
  return rope;
}

// What rotor computes from `rope` for a sequence of `length` tokens, as the
// page draws it: each pair's wavelength 2 pi / inv_freq and slow-down
// unscaled / scaled inv_freq, the attention factor and the base in force,
// and the method's notes that the page draws (RopeNote::curve_key).
Json CurveJson(const RopeScalingConfig& rope, int64_t length,
               const std::vector<double>& unscaled) {
  const RopeFrequencies f = ComputeRopeFrequencies(rope, length);
  Json wavelength = Json::array();
  Json scale = Json::array();
  for (size_t i = 0; i < f.inv_freq.size(); ++i) {
    wavelength.push_back(ExplorerDigits(2.0 * M_PI / f.inv_freq[i]));
    scale.push_back(ExplorerDigits(unscaled[i] / f.inv_freq[i]));
  }
  Json json = {{"wavelength", wavelength},
               {"scale", scale},
               {"attention_factor", f.attention_factor},
               {"base", f.base}};
  for (const RopeNote& note : RopeNotes(rope, length)) {
    if (note.curve_key.empty()) continue;
    if (note.curve_numbers.empty()) {
      json[note.curve_key] = note.curve_word;
    } else {
      json[note.curve_key] = note.curve_numbers;
    }
  }
  return json;
}

// One method of `model`: its settings at the model's own factor, its
// distinct curves over the stops, which one each stop draws, and its
// measurements.
Json MethodJson(const ExplorerModel& model, RopeType method,
                const std::vector<double>& factors,
                const std::vector<int64_t>& lengths) {
  const std::vector<double> unscaled = UnscaledInvFreq(model.model.rope);
  Json curves = Json::array();
  std::map<std::string, size_t> index;  // a curve's JSON -> its index
  Json at = Json::array();
  for (const double s : factors) {
    const RopeScalingConfig rope = SettingsAt(model, method, s);
    Json row = Json::array();
    for (const int64_t length : lengths) {
      Json curve = CurveJson(rope, length, unscaled);
      const auto [it, added] = index.emplace(curve.dump(), curves.size());
      if (added) curves.push_back(std::move(curve));
      row.push_back(it->second);
    }
    // One index where the curve does not depend on the length.
    const bool same = std::all_of(row.begin(), row.end(),
                                  [&](const Json& i) { return i == row[0]; });
    at.push_back(same ? row[0] : row);
  }
  Json json = {
      {"method", RopeTypeName(method)},
      {"own", Own(model, method)},
      {"settings", RopeSettingsJson(SettingsAt(model, method, model.factor))},
      {"curves", curves},
      {"at", at}};
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
  const RopeMethod& method = RopeMethodOf(rope.rope_type);
  switch (method.original_length_from) {
    case OriginalLengthFrom::kMaxPositionsOverFactor:
      out.original_length = std::llround(
          static_cast<double>(rope.max_position_embeddings) / out.factor);
      break;
    case OriginalLengthFrom::kOriginalKey:
      out.original_length = OriginalLength(rope);
      // Without a factor (optional for longrope): M / L0.
      if (!rope.factor && method.factor_use == FactorUse::kOptional) {
        out.factor = static_cast<double>(rope.max_position_embeddings) /
                     static_cast<double>(out.original_length);
      }
      break;
    case OriginalLengthFrom::kMaxPositions:
    case OriginalLengthFrom::kNone:
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
    const std::vector<double> factors = FactorStops(model);
    const std::vector<int64_t> lengths = LengthStops(model);
    Json methods = Json::array();
    for (RopeType method : RopeTypes()) {
      methods.push_back(MethodJson(model, method, factors, lengths));
    }
    const RopeScalingConfig& rope = model.model.rope;
    sections.push_back({{"name", model.name},
                        {"head_dim", rope.head_dim},
                        {"rotary_dim", RotaryDim(rope)},
                        {"rope_theta", rope.rope_theta},
                        {"original_length", model.original_length},
                        {"factor", model.factor},
                        {"length", ExtendedLength(model, model.factor)},
                        {"factors", factors},
                        {"lengths", lengths},
                        {"methods", methods}});
  }
  return Json{{"models", sections}}.dump();
}

double ExplorerDigits(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", value);
  return std::strtod(text, nullptr);
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
