// The RoPE explorer in a real browser: Debian's chromium, headless
// (scripts/setup.sh --with-browser installs it; without it the tests skip,
// saying so). Each page is loaded with --dump-dom; the page's script writes
// its state and any error into #explorer-state, which is read back here:
// no errors, one curve per method with one point per rotary pair, each
// drawn curve the one the page embeds for the stop its sliders are at
// (ExpectDrawsItsStop; rope_explorer_test.cc checks those are rotor's),
// the sliders moved through the URL hash (#factor=2, snapped to the nearest
// stop) or by setting a slider's value as a hand does (snapped by the
// slider's own step) change the curves to what rotor computes there; every
// chart is legible (no text cut or drawn over another, enough y ticks:
// ExpectChartsLegible) and no heading is left empty. A screenshot of each page
// is written too (kept in $ROTOR_EXPLORER_SCREENSHOTS when set, for a human to
// look at).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "core/error.h"
#include "nn/rope_scaling.h"
#include "tests/temp_dir.h"
#include "tests/tools/run_rotor.h"
#include "tests/train/train_test_util.h"
#include "train/config/model_config.h"
#include "train/extend/recipe.h"
#include "train/extend/rope_explorer.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/markdown_html.h"

namespace rotor::train {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The chromium binary, or empty.
std::string Chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    const std::string probe =
        std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

std::string RopeConfig(const std::string& name) {
  return std::string(ROTOR_SOURCE_DIR) + "/configs/rope/" + name + ".yaml";
}

struct Loaded {
  std::string dom;
  std::string log;  // chromium's stderr, console messages included
  Json state;
};

// Runs chromium headless on file://`page``hash` with a fresh profile.
Loaded Load(const test::TempDir& dir, const std::string& page,
            const std::string& hash, const std::string& screenshot) {
  static int run = 0;
  const std::string profile = dir.Path("profile-" + std::to_string(++run));
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-background-networking"
      " --disable-component-update --disable-sync --no-first-run"
      " --enable-logging=stderr --v=0 --user-data-dir='" +
      profile + "' ";
  const std::string url = "'file://" + page + hash + "'";
  const std::string dom = dir.Path("dom-" + std::to_string(run) + ".html");
  const std::string log = dir.Path("log-" + std::to_string(run) + ".txt");
  std::system((Chromium() + flags + "--dump-dom " + url + " >'" + dom +
               "' 2>'" + log + "'")
                  .c_str());
  std::system((Chromium() + flags + "--window-size=1100,2600 --screenshot='" +
               screenshot + "' " + url + " >/dev/null 2>&1")
                  .c_str());
  Loaded out{ReadFile(dom), ReadFile(log), Json()};
  // Found with find, not std::regex: libstdc++'s matcher recurses once per
  // character matched, and the state is long enough to overflow the stack
  // under ASan.
  const std::string open = "<pre id=\"explorer-state\" hidden=\"\">";
  const size_t begin = out.dom.find(open);
  const size_t end = begin == std::string::npos
                         ? std::string::npos
                         : out.dom.find("</pre>", begin + open.size());
  if (end == std::string::npos) {
    ADD_FAILURE() << "no #explorer-state in the DOM:\n" << out.log;
    return out;
  }
  std::string text =
      out.dom.substr(begin + open.size(), end - begin - open.size());
  for (const auto& [entity, c] :
       {std::pair<std::string, std::string>{"&lt;", "<"},
        {"&gt;", ">"},
        {"&quot;", "\""},
        {"&amp;", "&"}}) {
    for (size_t at; (at = text.find(entity)) != std::string::npos;) {
      text.replace(at, entity.size(), c);
    }
  }
  out.state = ParseJson(text, "#explorer-state");
  return out;
}

// The data the page embeds (#explorer-data) in the page file `page`.
Json PageData(const std::string& page) {
  const std::string html = ReadFile(page);
  const std::string open = "id=\"explorer-data\">";
  const size_t begin = html.find(open);
  const size_t end = html.find("</script>", begin);
  if (begin == std::string::npos || end == std::string::npos) {
    ADD_FAILURE() << page << " embeds no #explorer-data";
    return Json();
  }
  return ParseJson(html.substr(begin + open.size(), end - begin - open.size()),
                   page);
}

// `page` with `script` run after the explorer's own, as a hand on a slider.
std::string WithScript(const test::TempDir& dir, const std::string& page,
                       const std::string& script) {
  std::string html = ReadFile(page);
  html.insert(html.rfind("</body>"), "<script>" + script + "</script>\n");
  const std::string out =
      dir.Path("scripted-" + std::to_string(html.size()) + ".html");
  WriteFileAtomically(out, html);
  return out;
}

// A model's state (#explorer-state) draws the stop its sliders are at:
// each slider runs over the stops' indices in steps of one, the factor and
// length are that stop's, and every curve and attention factor drawn is the
// one `data` (the model's #explorer-data) holds for it.
void ExpectDrawsItsStop(const Json& state, const Json& data) {
  const size_t f = state["stop"]["factor"].get<size_t>();
  const size_t l = state["stop"]["length"].get<size_t>();
  ASSERT_LT(f, data["factors"].size());
  ASSERT_LT(l, data["lengths"].size());
  EXPECT_EQ(state["factor"], data["factors"][f]);
  EXPECT_EQ(state["length"], data["lengths"][l]);
  EXPECT_EQ(state["sliders"]["factor"],
            Json({{"min", 0},
                  {"max", data["factors"].size() - 1},
                  {"step", 1},
                  {"value", f}}));
  EXPECT_EQ(state["sliders"]["length"],
            Json({{"min", 0},
                  {"max", data["lengths"].size() - 1},
                  {"step", 1},
                  {"value", l}}));
  for (const Json& method : data["methods"]) {
    const std::string name = method["method"];
    const Json& at = method["at"][f];
    const Json& curve = method["curves"][at.is_array() ? at[l].get<size_t>()
                                                       : at.get<size_t>()];
    EXPECT_EQ(state["curves"]["wavelength"][name], curve["wavelength"]) << name;
    EXPECT_EQ(state["curves"]["scale"][name], curve["scale"]) << name;
    EXPECT_EQ(state["attention_factor"][name], curve["attention_factor"])
        << name;
  }
}

// The polylines of the first chart `chart` after offset `from` of the DOM:
// method -> points.
std::map<std::string, int> Curves(const std::string& dom, size_t from,
                                  const std::string& chart) {
  std::map<std::string, int> curves;
  const size_t start = dom.find("data-chart=\"" + chart + "\"", from);
  if (from == std::string::npos || start == std::string::npos) return curves;
  const std::string svg = dom.substr(start, dom.find("</svg>", start) - start);
  // Each <polyline ...> tag's data-method and data-points attributes.
  auto attribute = [](const std::string& tag, const std::string& name) {
    const std::string key = name + "=\"";
    const size_t at = tag.find(key);
    if (at == std::string::npos) return std::string();
    const size_t value = at + key.size();
    return tag.substr(value, tag.find('"', value) - value);
  };
  for (size_t at = svg.find("<polyline "); at != std::string::npos;
       at = svg.find("<polyline ", at + 1)) {
    const std::string tag = svg.substr(at, svg.find('>', at) - at);
    const std::string method = attribute(tag, "data-method");
    const std::string points = attribute(tag, "data-points");
    if (!method.empty() && !points.empty()) {
      curves[method] = std::stoi(points);
    }
  }
  return curves;
}

// Where model `index`'s section begins.
size_t ModelSection(const std::string& dom, int index) {
  return dom.find("data-model=\"" + std::to_string(index) + "\"");
}

void ExpectHealthy(const Loaded& page) {
  EXPECT_TRUE(page.state.value("ready", false));
  EXPECT_TRUE(page.state["errors"].empty()) << page.state["errors"].dump();
  EXPECT_EQ(page.log.find("Uncaught"), std::string::npos) << page.log;
}

// Every chart the page drew (#explorer-state's "charts" of each model) is
// legible: each text (title, tick, axis label, reference-line label, legend
// entry) lies wholly inside its chart, no two overlap, and a chart with
// curves has at least 4 labelled y ticks. Boxes are in CSS pixels, from
// the browser's layout (getBoundingClientRect).
void ExpectChartsLegible(const Json& state) {
  for (const Json& model : state["models"]) {
    ASSERT_TRUE(model.contains("charts")) << model["name"];
    for (const Json& chart : model["charts"]) {
      const std::string name = chart["chart"].get<std::string>();
      const Json& texts = chart["texts"];
      if (texts.size() > 1) {  // not a "nothing measured" title alone
        EXPECT_GE(chart["y_ticks"].get<int>(), 4) << name;
      }
      const double width = chart["width"].get<double>();
      const double height = chart["height"].get<double>();
      ASSERT_GT(width, 0.0) << name << " was not laid out";
      auto where = [&](const Json& t) {
        return StrCat(name, " ", t["role"].get<std::string>(), " '",
                      t["text"].get<std::string>(), "' at ",
                      t["x"].get<double>(), ",", t["y"].get<double>(), " (",
                      t["w"].get<double>(), " x ", t["h"].get<double>(), ")");
      };
      for (size_t i = 0; i < texts.size(); ++i) {
        const Json& a = texts[i];
        const double ax = a["x"], ay = a["y"], aw = a["w"], ah = a["h"];
        EXPECT_TRUE(ax >= -0.5 && ay >= -0.5 && ax + aw <= width + 0.5 &&
                    ay + ah <= height + 0.5)
            << where(a) << " is cut by the chart's edge (" << width << " x "
            << height << ")";
        for (size_t j = i + 1; j < texts.size(); ++j) {
          const Json& b = texts[j];
          const double bx = b["x"], by = b["y"], bw = b["w"], bh = b["h"];
          // Rows of 12-pixel text 15 units apart may touch; more than a
          // pixel both ways is one drawn over the other.
          const double overlap_x =
              std::min(ax + aw, bx + bw) - std::max(ax, bx);
          const double overlap_y =
              std::min(ay + ah, by + bh) - std::max(ay, by);
          EXPECT_FALSE(overlap_x > 1 && overlap_y > 1)
              << where(a) << " overlaps " << where(b);
        }
      }
    }
  }
}

// A heading the page wrote has something under it: the measured charts'
// heading is followed by a chart, not by the end of its section.
void ExpectNoEmptyHeading(const std::string& dom) {
  const std::string heading = "Measured (rotor extend-report)</h3>";
  const size_t at = dom.find(heading);
  if (at == std::string::npos) return;
  EXPECT_EQ(dom.substr(at + heading.size(), 4), "<svg")
      << "an empty heading: "
      << dom.substr(at, std::min<size_t>(200, dom.size() - at));
}

// Every slot report.md made for a plot (an image: MarkdownToHtml's
// data-rx-plot) holds the chart drawn for it, not nothing.
void ExpectNoEmptySlot(const std::string& dom) {
  const std::string key = "<div class=\"md-figure\" data-rx-plot=\"";
  for (size_t at = dom.find(key); at != std::string::npos;
       at = dom.find(key, at + 1)) {
    const size_t open_end = dom.find('>', at);
    ASSERT_NE(open_end, std::string::npos);
    EXPECT_EQ(dom.substr(open_end + 1, 4), "<svg")
        << "an empty slot: " << dom.substr(at, open_end - at);
  }
}

std::string Screenshot(const test::TempDir& dir, const std::string& name) {
  const char* keep = std::getenv("ROTOR_EXPLORER_SCREENSHOTS");
  return keep ? std::string(keep) + "/" + name : dir.Path(name);
}

TEST(RopeExplorerBrowser, PairOfConfigsRendersAndFollowsTheSlider) {
  if (Chromium().empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh "
                    "--with-browser installs Debian's chromium)";
  }
  test::TempDir dir;
  const std::string page = dir.Path("explorer.html");
  const test::RotorResult made = test::RunRotor(
      dir, "rope --config '" + RopeConfig("yarn") + "' --compare '" +
               RopeConfig("llama3") + "' --html '" + page + "'");
  ASSERT_EQ(made.status, 0) << made.err;

  const std::string shot = Screenshot(dir, "explorer.png");
  const Loaded start = Load(dir, page, "", shot);
  ExpectHealthy(start);
  EXPECT_GT(ReadFile(shot).size(), 10000u) << "no screenshot";
  const Json data = PageData(page);
  ASSERT_EQ(start.state["models"].size(), 2u);
  for (int m = 0; m < 2; ++m) {
    // 7 methods, 64 pairs each, in both frequency charts.
    for (const char* chart : {"wavelength", "scale"}) {
      const std::map<std::string, int> curves =
          Curves(start.dom, ModelSection(start.dom, m), chart);
      EXPECT_EQ(curves.size(), 7u) << chart;
      for (const auto& [method, points] : curves) {
        EXPECT_EQ(points, 64) << chart << " " << method;
      }
    }
    // At the config's own factor 8 and length 8 L0.
    EXPECT_EQ(start.state["models"][m]["factor"].get<double>(), 8.0);
    EXPECT_EQ(start.state["models"][m]["length"].get<int64_t>(), 65536);
    ExpectDrawsItsStop(start.state["models"][m], data["models"][m]);
  }
  ExpectChartsLegible(start.state);
  // At s = 16 the s·L0 line's label once ran into the legend.
  const Loaded far = Load(dir, page, "#factor=16&length=65536",
                          Screenshot(dir, "explorer-factor16.png"));
  ExpectHealthy(far);
  EXPECT_EQ(far.state["models"][0]["factor"].get<double>(), 16.0);
  ExpectChartsLegible(far.state);

  // #factor=2: the curves of the yarn config follow rotor at s = 2.
  const Loaded moved = Load(dir, page, "#factor=2&length=16384",
                            Screenshot(dir, "explorer-factor2.png"));
  ExpectHealthy(moved);
  const Json& yarn = moved.state["models"][0];
  EXPECT_EQ(yarn["factor"].get<double>(), 2.0);
  EXPECT_EQ(yarn["length"].get<int64_t>(), 16384);
  ExpectDrawsItsStop(yarn, data["models"][0]);
  const ModelConfig model = LoadModelConfig(RopeConfig("yarn"));
  for (RopeType method : {RopeType::kLinear, RopeType::kDynamic,
                          RopeType::kLongRope, RopeType::kYarn}) {
    RopeScalingConfig rope =
        method == RopeType::kYarn
            ? model.rope
            : ExtendModelConfig(model, method, 2.0, 8192).rope;
    if (method == RopeType::kYarn) rope.factor = 2.0;
    const RopeFrequencies want = ComputeRopeFrequencies(rope, 16384);
    const std::vector<double> got =
        yarn["curves"]["wavelength"][RopeTypeName(method)];
    ASSERT_EQ(got.size(), want.inv_freq.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], ExplorerDigits(2 * kPi / want.inv_freq[i]))
          << RopeTypeName(method) << " pair " << i;
    }
    const std::vector<double> before =
        start.state["models"][0]["curves"]["wavelength"][RopeTypeName(method)];
    EXPECT_NE(got, before) << RopeTypeName(method) << " did not move";
  }

  // One load for both ways of moving between the stops. The hash snaps
  // every model to the nearest stop: 2.3 to 2.5 (the ratios 1.09 against
  // 1.15 to 2), 20000 tokens to 16384. Then a hand on the first model's
  // sliders: a value between two steps snaps to one (2.6 -> stop 3, s =
  // 1.75; 4.4 -> stop 4, 32768 tokens); the first model draws that stop,
  // the second stays at the hash's.
  const Loaded moved_twice =
      Load(dir,
           WithScript(dir, page,
                      "function slide(name, value) {"
                      "  var input = document.querySelector('.rx-' + name);"
                      "  input.value = value;"
                      "  input.dispatchEvent(new Event('input'));"
                      "  input.dispatchEvent(new Event('change'));"
                      "}"
                      "slide('factor', '2.6'); slide('length', '4.4');"),
           "#factor=2.3&length=20000", Screenshot(dir, "explorer-slid.png"));
  ExpectHealthy(moved_twice);
  const Json& slid = moved_twice.state["models"][0];
  EXPECT_EQ(slid["stop"], Json({{"factor", 3}, {"length", 4}}));
  EXPECT_EQ(slid["factor"].get<double>(), 1.75);
  EXPECT_EQ(slid["length"].get<int64_t>(), 32768);
  ExpectDrawsItsStop(slid, data["models"][0]);
  EXPECT_NE(slid["curves"], start.state["models"][0]["curves"]);
  const Json& snapped = moved_twice.state["models"][1];
  EXPECT_EQ(snapped["factor"].get<double>(), 2.5);
  EXPECT_EQ(snapped["length"].get<int64_t>(), 16384);
  ExpectDrawsItsStop(snapped, data["models"][1]);
}

TEST(RopeExplorerBrowser, ReportPageDrawsTheMeasuredCurves) {
  if (Chromium().empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh "
                    "--with-browser installs Debian's chromium)";
  }
  // A report page as rotor extend-report writes it (WriteReport:
  // MarkdownToHtml of report.md and the explorer), on made-up measurements.
  // The name holds what once hid the data's </script> from the HTML parser
  // and left the page empty.
  ExplorerModel model = ExplorerModelFromConfig(
      "report <!--<script>", LoadModelConfig(RopeConfig("default")));
  for (RopeType method : {RopeType::kDefault, RopeType::kYarn}) {
    for (bool finetuned : {false, true}) {
      VariantResult r;
      r.method = method;
      r.finetuned = finetuned;
      for (int64_t length : {8192, 16384, 32768}) {
        r.perplexity.push_back({length, 1.0, 3.0 + length / 8192.0, 100});
        r.passkey.push_back({length, 0.5, 7, 40, 10, 5});
        r.retrieval.push_back(
            {RetrievalTask::kNiahSingle, length, 0.5, 10, 4, 5.0});
      }
      model.measured.push_back(r);
    }
  }
  test::TempDir dir;
  const std::string page = dir.Path("report.html");
  WriteFileAtomically(
      page,
      RopeExplorerPage("Context extension report",
                       MarkdownToHtml("# Report\n\n| a | b |\n|---|---:|\n"
                                      "| x | 1 |\n\n![p](ppl_zeroshot.png)\n\n"
                                      "![r](retrieval.png)\n"),
                       {model}));
  const Loaded loaded = Load(dir, page, "", Screenshot(dir, "report.png"));
  ExpectHealthy(loaded);
  // Drawn into the report's own slot, one curve per measured method.
  const size_t slot = loaded.dom.find("data-rx-plot=\"ppl_zeroshot\"");
  const size_t chart = loaded.dom.find("data-chart=\"ppl_zeroshot\"");
  EXPECT_LT(slot, chart);
  const std::map<std::string, int> zero =
      Curves(loaded.dom, slot, "ppl_zeroshot");
  EXPECT_EQ(zero, (std::map<std::string, int>{{"default", 3}, {"yarn", 3}}));
  // The retrieval overview's slot holds its curves (it once stayed empty).
  const size_t retrieval_slot = loaded.dom.find("data-rx-plot=\"retrieval\"");
  ASSERT_NE(retrieval_slot, std::string::npos);
  EXPECT_EQ(Curves(loaded.dom, retrieval_slot, "retrieval"),
            (std::map<std::string, int>{{"default", 3}, {"yarn", 3}}));
  ExpectChartsLegible(loaded.state);
  ExpectNoEmptyHeading(loaded.dom);
  ExpectNoEmptySlot(loaded.dom);
}

// A real report: `rotor extend-report` on the tiny model (the settings of
// ExtendReport.TinyModelEndToEnd: 3 base steps, 2 fine-tuning steps,
// perplexity at 32 and 128, passkey at 128, niah_single at 384), then its
// report.html as the writer left it and `rotor rope --report DIR --html
// FILE` on its folder, both in chromium: no errors, the curves drawn those
// the page embeds for its starting stop, the measured curves drawn with one
// point per measured length for exactly the methods the report ran (dynamic has
// no fine-tuned curve: it is skipped), and no plot's slot left empty.
TEST(RopeExplorerBrowser, RealExtendReportAndItsExplorerRender) {
  if (Chromium().empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh "
                    "--with-browser installs Debian's chromium)";
  }
  test::TempDir dir;
  const std::string data = test::PrepareTextData(dir);
  dir.Write("report.yaml",
            "base:\n  config: " + test::TinyConfigPath() +
                "\n  overrides: [data.path=" + data +
                ", output_dir=" + dir.Path("base") +
                ", eval.every_n_steps=0, checkpoint.every_n_steps=0, "
                "train.max_steps=3]\n"
                "output_dir: " +
                dir.Path("report") +
                "\nthreads: 1\nfactor: 4\n"
                "methods: [default, dynamic, yarn]\n"
                "finetune: {steps: 2, warmup_steps: 1}\n"
                "eval: {lengths: [32, 128], documents: 2, passkey_lengths: "
                "[128],\n       depths: [0, 1], trials: 2, retrieval_tasks: "
                "[niah_single],\n       retrieval_lengths: [384], "
                "retrieval_trials: 1}\n");
  const test::RotorResult report =
      test::RunRotor(dir, "extend-report '" + dir.Path("report.yaml") + "'");
  ASSERT_EQ(report.status, 0) << report.out << report.err;
  const std::string explorer = dir.Path("explorer.html");
  const test::RotorResult made =
      test::RunRotor(dir, "rope --report '" + dir.Path("report") +
                              "' --html '" + explorer + "'");
  ASSERT_EQ(made.status, 0) << made.out << made.err;

  const std::map<std::string, int> zero_shot = {
      {"default", 2}, {"dynamic", 2}, {"yarn", 2}};
  const std::map<std::string, int> finetuned = {{"default", 2}, {"yarn", 2}};
  const std::map<std::string, int> passkey = {
      {"default", 1}, {"dynamic", 1}, {"yarn", 1}};
  for (const std::string& page : {dir.Path("report/report.html"), explorer}) {
    SCOPED_TRACE(page);
    const Loaded loaded =
        Load(dir, page, "",
             Screenshot(dir, page == explorer ? "real-report-explorer.png"
                                              : "real-report.png"));
    ExpectHealthy(loaded);
    // Legend entries such as "default zero-shot" whole, perplexities of
    // 131 to 148 with y ticks, and no heading left without its charts.
    ExpectChartsLegible(loaded.state);
    ExpectNoEmptyHeading(loaded.dom);
    ExpectNoEmptySlot(loaded.dom);
    ASSERT_EQ(loaded.state["models"].size(), 1u);
    ExpectDrawsItsStop(loaded.state["models"][0], PageData(page)["models"][0]);
    // The tiny model: head_dim 8, 4 rotary pairs, 7 methods.
    const std::map<std::string, int> wavelengths =
        Curves(loaded.dom, ModelSection(loaded.dom, 0), "wavelength");
    EXPECT_EQ(wavelengths.size(), 7u);
    for (const auto& [method, points] : wavelengths) {
      EXPECT_EQ(points, 4) << method;
    }
    EXPECT_EQ(Curves(loaded.dom, 0, "ppl_zeroshot"), zero_shot);
    EXPECT_EQ(Curves(loaded.dom, 0, "ppl_finetuned"), finetuned);
    EXPECT_EQ(Curves(loaded.dom, 0, "passkey"), passkey);
    EXPECT_EQ(Curves(loaded.dom, 0, "retrieval"), passkey);  // also one length
  }
  // report.html draws each curve into report.md's own slot for its plot.
  const std::string html = ReadFile(dir.Path("report/report.html"));
  EXPECT_NE(html.find("data-rx-plot=\"ppl_zeroshot\""), std::string::npos);
  // report.md's tables are HTML tables there, not Markdown text.
  EXPECT_NE(html.find("<table"), std::string::npos);
  EXPECT_NE(html.find("default (zero-shot)"), std::string::npos);
  EXPECT_EQ(html.find("| default (zero-shot) |"), std::string::npos);
}

}  // namespace
}  // namespace rotor::train
