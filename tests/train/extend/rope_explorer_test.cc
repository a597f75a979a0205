// The RoPE explorer's data and page (train/extend/rope_explorer.h) without a
// browser: the embedded numbers are rotor's, the page is one file with no
// network reference, and `rotor rope --html` writes it like every output.
// In a real browser: rope_explorer_browser_test.cc.
#include "train/extend/rope_explorer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/limits.h"
#include "nn/rope_scaling.h"
#include "tests/temp_dir.h"
#include "tests/tools/run_rotor.h"
#include "train/config/model_config.h"
#include "train/extend/recipe.h"
#include "train/extend/results.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/markdown_html.h"

namespace rotor::train {
namespace {

std::string RopeConfig(const std::string& name) {
  return std::string(ROTOR_SOURCE_DIR) + "/configs/rope/" + name + ".yaml";
}

// The settings of `method` at factor `s` as the explorer shows them: the
// config's own method as configured with its factor moved (longrope without
// a factor: its max_position_embeddings, s * L0), the others as
// extend-report builds them.
RopeScalingConfig SettingsAt(const ExplorerModel& explorer, RopeType method,
                             double s) {
  const RopeScalingConfig& own = explorer.model.rope;
  if (method != own.rope_type || method == RopeType::kDefault) {
    return ExtendModelConfig(explorer.model, method, s,
                             explorer.original_length)
        .rope;
  }
  RopeScalingConfig rope = own;
  if (rope.factor) {
    rope.factor = s;
  } else {
    rope.max_position_embeddings =
        std::llround(s * static_cast<double>(explorer.original_length));
  }
  return rope;
}

// The curve the page draws for `method` at factor stop `f` and length stop
// `l`.
const Json& CurveAt(const Json& method, size_t f, size_t l) {
  const Json& at = method["at"][f];
  return method["curves"]
               [at.is_array() ? at[l].get<size_t>() : at.get<size_t>()];
}

// Every curve of every method at every factor and length stop is rotor's:
// ComputeRopeFrequencies of the method's settings at that factor, for that
// length, with the wavelengths and slow-downs to the page's digits and the
// attention factor and base exact; for configs of configs/rope/ without
// scaling, with a factor, with one that depends on the length and without a
// factor (longrope's own is moved through max_position_embeddings).
TEST(RopeExplorer, EmbedsRotorsCurvesAtEveryStop) {
  for (const char* name : {"default", "yarn", "dynamic", "longrope"}) {
    SCOPED_TRACE(name);
    const ModelConfig model = LoadModelConfig(RopeConfig(name));
    const ExplorerModel explorer = ExplorerModelFromConfig(name, model);
    const Json json = ParseJson(RopeExplorerJson({explorer}), "explorer");
    const Json& section = json["models"][0];
    const std::vector<double> factors = section["factors"];
    const std::vector<int64_t> lengths = section["lengths"];
    const std::vector<double> unscaled = UnscaledInvFreq(model.rope);
    const Json& methods = section["methods"];
    ASSERT_EQ(methods.size(), 7u);
    for (const Json& m : methods) {
      const RopeType type = *RopeTypeFromName(m["method"].get<std::string>());
      EXPECT_EQ(m["own"].get<bool>(),
                type == model.rope.rope_type && type != RopeType::kDefault);
      ASSERT_EQ(m["at"].size(), factors.size());
      for (size_t f = 0; f < factors.size(); ++f) {
        const RopeScalingConfig rope = SettingsAt(explorer, type, factors[f]);
        for (size_t l = 0; l < lengths.size(); ++l) {
          const RopeFrequencies want = ComputeRopeFrequencies(rope, lengths[l]);
          const Json& curve = CurveAt(m, f, l);
          const std::vector<double> wavelength = curve["wavelength"];
          const std::vector<double> scale = curve["scale"];
          ASSERT_EQ(wavelength.size(), want.inv_freq.size());
          ASSERT_EQ(scale.size(), want.inv_freq.size());
          for (size_t i = 0; i < want.inv_freq.size(); ++i) {
            ASSERT_EQ(wavelength[i],
                      ExplorerDigits(2.0 * M_PI / want.inv_freq[i]))
                << m["method"] << " s " << factors[f] << " length "
                << lengths[l] << " pair " << i;
            ASSERT_EQ(scale[i], ExplorerDigits(unscaled[i] / want.inv_freq[i]))
                << m["method"] << " s " << factors[f] << " length "
                << lengths[l] << " pair " << i;
          }
          ASSERT_EQ(curve["attention_factor"].get<double>(),
                    want.attention_factor)
              << m["method"] << " s " << factors[f];
          ASSERT_EQ(curve["base"].get<double>(), want.base)
              << m["method"] << " s " << factors[f] << " length " << lengths[l];
        }
      }
    }
  }
}

// What the temperature table says of a method comes with its curve:
// YaRN's ramp bounds, Llama 3's wavelength bands and which LongRoPE factors
// the length uses.
TEST(RopeExplorer, EmbedsEachMethodsNotesWithItsCurves) {
  const ModelConfig model = LoadModelConfig(RopeConfig("yarn"));
  const ExplorerModel explorer = ExplorerModelFromConfig("yarn", model);
  const Json json = ParseJson(RopeExplorerJson({explorer}), "explorer");
  const Json& section = json["models"][0];
  const std::vector<int64_t> lengths = section["lengths"];
  for (const Json& m : section["methods"]) {
    const std::string method = m["method"];
    for (size_t f = 0; f < m["at"].size(); ++f) {
      for (size_t l = 0; l < lengths.size(); ++l) {
        const Json& curve = CurveAt(m, f, l);
        EXPECT_EQ(curve.contains("yarn_ramp"), method == "yarn");
        EXPECT_EQ(curve.contains("llama3_bands"), method == "llama3");
        EXPECT_EQ(curve.contains("longrope_factors"), method == "longrope");
        if (method == "yarn") {
          const YarnRampBounds want = ComputeYarnRampBounds(model.rope);
          EXPECT_EQ(curve["yarn_ramp"], Json::array({want.low, want.high}));
        } else if (method == "llama3") {
          // Wavelengths below L0 / high_freq_factor kept, above L0 /
          // low_freq_factor divided by s.
          EXPECT_EQ(curve["llama3_bands"], Json::array({2048.0, 8192.0}));
        } else if (method == "longrope") {
          EXPECT_EQ(curve["longrope_factors"],
                    lengths[l] > 8192 ? "long" : "short");
        }
      }
    }
  }
}

// The sliders' stops: four round factors per octave from 1 to 64 (1, 1.25,
// 1.5, 1.75, 2, ..., 56, 64) with the model's own added, and one length per
// octave from L0/4 to 64 L0 with the model's own s * L0 added; the page
// starts at the model's own.
TEST(RopeExplorer, StopsAreRoundAndHoldTheModelsOwn) {
  ExplorerModel explorer =
      ExplorerModelFromConfig("yarn", LoadModelConfig(RopeConfig("yarn")));
  Json section =
      ParseJson(RopeExplorerJson({explorer}), "explorer")["models"][0];
  std::vector<double> factors;
  for (double octave = 1; octave < 64; octave *= 2) {
    for (double m : {1.0, 1.25, 1.5, 1.75}) factors.push_back(m * octave);
  }
  factors.push_back(64);
  EXPECT_EQ(section["factors"].get<std::vector<double>>(), factors);
  std::vector<int64_t> lengths;
  for (int64_t length = 8192 / 4; length <= 8192 * 64; length *= 2) {
    lengths.push_back(length);
  }
  EXPECT_EQ(section["lengths"].get<std::vector<int64_t>>(), lengths);
  EXPECT_EQ(section["factor"].get<double>(), 8.0);
  EXPECT_EQ(section["length"].get<int64_t>(), 65536);

  // A factor between the stops (5 and DeepSeek's 40 are stops; 6.5 is not)
  // is a stop of its own, and so is its extended length.
  explorer.factor = 6.5;
  explorer.model.rope.factor = 6.5;
  section = ParseJson(RopeExplorerJson({explorer}), "explorer")["models"][0];
  factors.insert(std::upper_bound(factors.begin(), factors.end(), 6.5), 6.5);
  EXPECT_EQ(section["factors"].get<std::vector<double>>(), factors);
  const std::vector<int64_t> with_own = section["lengths"];
  EXPECT_NE(std::find(with_own.begin(), with_own.end(), 53248), with_own.end());
  EXPECT_EQ(with_own.size(), lengths.size() + 1);
  EXPECT_EQ(section["length"].get<int64_t>(), 53248);
}

// A Llama 3 model declares more positions than s * L0 (Llama 3.1: 2 s L0;
// here 100000, no power of two times L0): its own max_position_embeddings
// is a length stop, so the page can show the length the model claims.
TEST(RopeExplorer, LengthsHoldTheModelsMaxPositionEmbeddings) {
  ModelConfig model = LoadModelConfig(RopeConfig("llama3"));
  model.rope.max_position_embeddings = 100000;
  const ExplorerModel explorer = ExplorerModelFromConfig("llama3", model);
  const Json section =
      ParseJson(RopeExplorerJson({explorer}), "explorer")["models"][0];
  const std::vector<int64_t> lengths = section["lengths"];
  EXPECT_NE(std::find(lengths.begin(), lengths.end(), 100000), lengths.end());
  EXPECT_EQ(section["length"].get<int64_t>(), 65536);  // s * L0
  // Past rotor's longest sequence it is that sequence's stop.
  model.rope.max_position_embeddings = limits::kMaxPositions + 1;
  const Json capped =
      ParseJson(RopeExplorerJson({ExplorerModelFromConfig("llama3", model)}),
                "explorer")["models"][0];
  const std::vector<int64_t> capped_lengths = capped["lengths"];
  EXPECT_EQ(capped_lengths.back(), limits::kMaxPositions);
}

// A model's own factor equal to a round stop at the page's digits
// (4.0000001 and 4) is one stop, the model's: its curves are not drawn
// twice, and the page still starts at the factor the model has.
TEST(RopeExplorer, AFactorNearARoundStopIsOneStop) {
  ExplorerModel explorer =
      ExplorerModelFromConfig("yarn", LoadModelConfig(RopeConfig("yarn")));
  explorer.factor = 4.0000001;
  explorer.model.rope.factor = 4.0000001;
  const Json section =
      ParseJson(RopeExplorerJson({explorer}), "explorer")["models"][0];
  const std::vector<double> factors = section["factors"];
  EXPECT_EQ(factors.size(), 25u);  // the 25 round stops, 4 replaced
  EXPECT_EQ(std::count(factors.begin(), factors.end(), 4.0), 0);
  EXPECT_EQ(std::count(factors.begin(), factors.end(), 4.0000001), 1);
  EXPECT_EQ(section["factor"].get<double>(), 4.0000001);
  // 4.001 differs from 4 at four digits: a stop of its own.
  explorer.factor = 4.001;
  explorer.model.rope.factor = 4.001;
  const Json apart =
      ParseJson(RopeExplorerJson({explorer}), "explorer")["models"][0];
  EXPECT_EQ(apart["factors"].size(), 26u);
}

// A model whose s * L0 is past rotor's longest sequence starts there: the
// length stops end at limits::kMaxPositions.
TEST(RopeExplorer, LengthsStopAtRotorsLongestSequence) {
  ModelConfig model = LoadModelConfig(RopeConfig("yarn"));
  model.rope.original_max_position_embeddings = int64_t{1} << 20;
  model.rope.factor = 32.0;
  const ExplorerModel explorer = ExplorerModelFromConfig("long", model);
  const Json section =
      ParseJson(RopeExplorerJson({explorer}), "explorer")["models"][0];
  const std::vector<int64_t> lengths = section["lengths"];
  EXPECT_EQ(lengths.back(), limits::kMaxPositions);
  EXPECT_EQ(section["length"].get<int64_t>(), limits::kMaxPositions);
}

// Each method's settings (at the starting factor) are its rope_scaling keys
// as the config table names them, written from the table's rows.
TEST(RopeExplorer, SettingsAreEachMethodsRopeScalingKeys) {
  const ExplorerModel explorer =
      ExplorerModelFromConfig("yarn", LoadModelConfig(RopeConfig("yarn")));
  const Json json = ParseJson(RopeExplorerJson({explorer}), "explorer");
  std::map<std::string, Json> settings;
  for (const Json& m : json["models"][0]["methods"]) {
    settings[m["method"]] = m["settings"];
  }
  EXPECT_EQ(settings["default"], Json({{"rope_type", "default"}}));
  EXPECT_EQ(settings["linear"],
            ParseJson(R"({"rope_type": "linear", "factor": 8.0})", "want"));
  EXPECT_EQ(settings["llama3"],
            ParseJson(R"({"rope_type": "llama3", "factor": 8.0,
                          "original_max_position_embeddings": 8192,
                          "low_freq_factor": 1.0, "high_freq_factor": 4.0})",
                      "want"));
  // The config's own yarn as configured: its betas and truncate too.
  EXPECT_EQ(settings["yarn"], ParseJson(R"({"rope_type": "yarn", "factor": 8.0,
                          "original_max_position_embeddings": 8192,
                          "beta_fast": 32.0, "beta_slow": 1.0,
                          "truncate": true})",
                                        "want"));
  EXPECT_EQ(settings["longrope"]["long_factor"].size(), 64u);
  EXPECT_EQ(settings["longrope"]["short_factor"],
            Json(std::vector<double>(64, 1.0)));
}

// The page's digits: 4 significant ones, enough for a chart 760 units wide.
TEST(RopeExplorer, CurvesKeepFourSignificantDigits) {
  EXPECT_EQ(ExplorerDigits(2.0 * M_PI), 6.283);
  EXPECT_EQ(ExplorerDigits(123456.0), 123500.0);
  EXPECT_EQ(ExplorerDigits(0.000123456), 0.0001235);
  EXPECT_EQ(ExplorerDigits(8.0), 8.0);
}

TEST(RopeExplorer, FindsTheOriginalLengthOfEachKindOfConfig) {
  EXPECT_EQ(ExplorerModelFromConfig("", LoadModelConfig(RopeConfig("linear")))
                .original_length,
            8192);  // 65536 / factor 8
  const ExplorerModel plain =
      ExplorerModelFromConfig("", LoadModelConfig(RopeConfig("default")));
  EXPECT_EQ(plain.original_length, 8192);
  EXPECT_EQ(plain.factor, 4.0);  // no scaling: the usual first extension
  EXPECT_EQ(ExplorerModelFromConfig("", LoadModelConfig(RopeConfig("longrope")))
                .factor,
            8.0);  // 65536 / 8192
  const ExplorerModel yarn =
      ExplorerModelFromConfig("", LoadModelConfig(RopeConfig("yarn")));
  EXPECT_EQ(yarn.original_length, 8192);  // original_max_position_embeddings
  EXPECT_EQ(yarn.factor, 8.0);
}

TEST(RopeExplorer, PageIsOneFileAndKeepsScriptsClosed) {
  // "</script>" would end the data's <script> element early, and "<!--"
  // then "<script" would hide its real end from the HTML parser.
  const std::string name = "a</script>b<!--<script>c";
  ExplorerModel model =
      ExplorerModelFromConfig(name, LoadModelConfig(RopeConfig("ntk")));
  const std::string page = RopeExplorerPage("t", "", {model});
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  const std::string open = "id=\"explorer-data\">";
  const size_t begin = page.find(open) + open.size();
  const size_t end = page.find("</script>", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string data = page.substr(begin, end - begin);
  EXPECT_EQ(data.find('<'), std::string::npos) << data;
  // The escaped JSON still reads back to the name.
  EXPECT_EQ(ParseJson(data, "explorer-data")["models"][0]["name"], name);
}

TEST(RopeExplorer, ReportOnAHuggingFaceBaseReadsItsConfigJson) {
  // rotor rope --report DIR once read BASE/config.yaml, which a Hugging Face
  // folder does not have; the report reads its base as the runner did.
  test::TempDir dir;
  std::filesystem::create_directories(dir.Path("base"));
  dir.Write("base/config.json",
            R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                "hidden_size": 64, "intermediate_size": 128,
                "num_attention_heads": 4, "num_key_value_heads": 4,
                "num_hidden_layers": 2, "vocab_size": 300,
                "max_position_embeddings": 256, "rope_theta": 50000.0})");
  std::filesystem::create_directories(dir.Path("report"));
  SaveAllResults(dir.Path("report"), dir.Path("base"), 256, 4.0, {});
  const ExplorerModel model = ExplorerModelFromReport(dir.Path("report"));
  EXPECT_EQ(model.model.rope.rope_theta, 50000.0);
  EXPECT_EQ(model.original_length, 256);
  EXPECT_EQ(model.factor, 4.0);
}

TEST(MarkdownHtml, ConvertsTheSubsetReportsUse) {
  const std::string html = MarkdownToHtml(
      "# Title\n\nSome **bold** and `code` & <x>.\n\n"
      "| model | 256 |\n|---|---:|\n| yarn | 4.2 |\n\n"
      "![ppl](ppl_zeroshot.png)\n\n- a [link](passkey_yarn.png)\n  - nested\n");
  EXPECT_NE(html.find("<h1>Title</h1>"), std::string::npos);
  EXPECT_NE(html.find("<strong>bold</strong> and <code>code</code> &amp; "
                      "&lt;x&gt;."),
            std::string::npos);
  EXPECT_NE(html.find("<tr><th>model</th><th>256</th></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>yarn</td><td style=\"text-align:right\">4.2</td>"),
            std::string::npos);
  EXPECT_NE(html.find("data-rx-plot=\"ppl_zeroshot\""), std::string::npos);
  EXPECT_NE(html.find("<ul>\n<li>a <a href=\"passkey_yarn.png\">link</a></li>"
                      "\n<ul>\n<li>nested</li>\n</ul>\n</ul>"),
            std::string::npos);
}

// report.md heads each retrieval task with "### task": report.html showed
// the hashes as text.
TEST(MarkdownHtml, ThirdLevelHeadingsAreHeadings) {
  const std::string html =
      MarkdownToHtml("## Retrieval\n\n### niah_single\n\ntext\n");
  EXPECT_NE(html.find("<h2>Retrieval</h2>\n<h3>niah_single</h3>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("###"), std::string::npos) << html;
}

TEST(RopeCommandHtml, WritesThePageAndRefusesToReplaceIt) {
  test::TempDir dir;
  const std::string out = dir.Path("page.html");
  const std::string args = "rope --config '" + RopeConfig("yarn") +
                           "' --compare '" + RopeConfig("llama3") +
                           "' --html '" + out + "'";
  test::RotorResult run = test::RunRotor(dir, args);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string page = ReadFile(out);
  EXPECT_NE(page.find("configs/rope/llama3.yaml"), std::string::npos);
  run = test::RunRotor(dir, args);
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("--html"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--force"), std::string::npos) << run.err;
  EXPECT_EQ(test::RunRotor(dir, args + " --force").status, 0);
}

TEST(RopeCommandHtml, NamesWhatIsMissing) {
  test::TempDir dir;
  test::RotorResult run = test::RunRotor(dir, "rope --html x.html");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--config (or --report with --html)"),
            std::string::npos)
      << run.err;
  run = test::RunRotor(
      dir, "rope --report '" + dir.Path("nowhere") + "' --html x.html");
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find(dir.Path("nowhere") + "/results.json"),
            std::string::npos)
      << run.err;
  run = test::RunRotor(dir,
                       "rope --config '" + RopeConfig("yarn") + "' --report r");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--report requires --html"), std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace rotor::train
