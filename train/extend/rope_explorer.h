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
// Every number the page draws is rotor's: for each model, the explorer
// computes every method's frequencies (nn/rope_scaling.h, with each
// method's settings from train/extend/recipe.h) at each stop of the factor
// slider and, as dynamic and longrope depend on it, of the length slider,
// and embeds the wavelengths, per-pair slow-downs, attention factors and
// bases as JSON. The sliders snap to those stops; the page's script only
// looks the curves up and draws them (it has no frequency math). Its state
// element (#explorer-state) says which stop it drew and what, for the
// browser test (tests/train/extend/rope_explorer_browser_test.cc); the C++
// test checks the embedded numbers (rope_explorer_test.cc).
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

// The page's data, as JSON text: per model, the slider stops ("factors":
// four round factors per octave from 1 to 64 and the model's own, in place
// of a round one equal to it at ExplorerDigits; "lengths": L0 times each
// power of two from 1/4 to 64, the model's own s * L0 and its
// max_position_embeddings, up to rotor's longest sequence) and, per
// method, its settings
// at the model's own factor (its rope_scaling keys, written from the
// config table's rows), its distinct curves ("curves": wavelength and
// slow-down per pair to ExplorerDigits, attention factor, base in force,
// and the method's note: YaRN's ramp bounds, Llama 3's wavelength bands,
// LongRoPE's factor list in use), which curve each stop draws ("at": per
// factor stop a curve index, or one per length stop for a method whose
// curve there depends on the length) and its measurements.
std::string RopeExplorerJson(const std::vector<ExplorerModel>& models);

// A curve's number as the page embeds it: `value` to 4 significant digits,
// a small fraction of a pixel in charts 760 units wide; at full precision
// the page would be 2.4 times as large (configs/rope/yarn.yaml: 290 KB,
// against about 700 KB).
double ExplorerDigits(double value);

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
