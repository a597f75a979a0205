// The RoPE explorer: one self-contained HTML page (inline SVG and
// JavaScript, no network) that shows what each RoPE scaling method does to
// each rotary pair of a model: the pair's wavelength against the original
// and extended lengths, the per-pair slow-down each method applies (linear,
// NTK, dynamic NTK at a chosen length, YaRN's ramp, Llama 3's bands,
// LongRoPE's factors) and each method's attention factor, with sliders for
// the factor and the sequence length; beside them, for an extend-report,
// the measured perplexity-against-length, passkey and retrieval curves of
// each method.
//
// Every number the page starts with is computed here by nn/rope_scaling.h
// and embedded as JSON. When a slider moves, the page recomputes with
// JavaScript that mirrors nn/rope_scaling.cc (and the method settings of
// train/extend/recipe.h) line by line; at load it recomputes the embedded
// slider position and writes the largest relative difference to rotor's
// numbers into its state element (#explorer-state), which the browser test
// checks (tests/train/extend/rope_explorer_browser_test.cc).
//
// `rotor rope --html` writes the page for configs and report folders;
// `rotor extend-report` embeds it in report.html.
#ifndef ROTOR_TRAIN_EXTEND_ROPE_EXPLORER_H_
#define ROTOR_TRAIN_EXTEND_ROPE_EXPLORER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "train/config/model_config.h"
#include "train/extend/results.h"

namespace rotor::train {

// One model shown by the explorer: every method applied to its base at
// `factor` from `original_length`, with its own rope_scaling (if any) shown
// as the config gives it.
struct ExplorerModel {
  std::string name;             // a heading: the config path, "report ..."
  ModelConfig model;            // model.rope: the settings as configured
  int64_t original_length = 0;  // L0
  double factor = 0.0;          // s
  // Measurements of an extend-report (empty: frequencies only).
  std::vector<VariantResult> measured;
};

// The explorer's view of a config file's model section: L0 from its
// rope_scaling (original_max_position_embeddings; max_position_embeddings /
// factor for linear and ntk; max_position_embeddings otherwise) and s from
// its factor (4 for a config without scaling, the usual first extension).
ExplorerModel ExplorerModelFromConfig(const std::string& name,
                                      const ModelConfig& model);

// The explorer's view of an extend-report folder: results.json (the base
// checkpoint, L and s) and the base checkpoint's model section. Throws
// rotor::Error naming the file or folder that is missing or malformed.
ExplorerModel ExplorerModelFromReport(const std::string& report_dir);

// The page's data, as JSON text: per model, the unscaled frequencies and,
// per method, its settings, inv_freq, attention factor and base in force at
// the default slider position (the extended length s * L0), plus its
// measurements.
std::string RopeExplorerJson(const std::vector<ExplorerModel>& models);

// The explorer as an HTML fragment (its <style>, a <section> the script
// fills, the state element, the data and the <script>).
std::string RopeExplorerFragment(const std::vector<ExplorerModel>& models);

// A whole page titled `title`: `body_html` (or, when empty, an <h1> of the
// title) followed by the explorer.
std::string RopeExplorerPage(const std::string& title,
                             const std::string& body_html,
                             const std::vector<ExplorerModel>& models);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EXTEND_ROPE_EXPLORER_H_
