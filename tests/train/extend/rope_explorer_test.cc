// The RoPE explorer's data and page (train/extend/rope_explorer.h) without a
// browser: the embedded numbers are rotor's, the page is one file with no
// network reference, and `rotor rope --html` writes it like every output.
// In a real browser: rope_explorer_browser_test.cc.
#include "train/extend/rope_explorer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

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

TEST(RopeExplorer, EmbedsRotorsFrequenciesForEveryMethod) {
  const ModelConfig model = LoadModelConfig(RopeConfig("yarn"));
  const ExplorerModel explorer = ExplorerModelFromConfig("yarn", model);
  EXPECT_EQ(explorer.original_length, 8192);
  EXPECT_EQ(explorer.factor, 8.0);
  const Json json = ParseJson(RopeExplorerJson({explorer}), "explorer");
  const Json& methods = json["models"][0]["methods"];
  ASSERT_EQ(methods.size(), 7u);
  for (const Json& m : methods) {
    const RopeType type = *RopeTypeFromName(m["method"].get<std::string>());
    // The config's own yarn as configured; the others as extend-report
    // builds them; all at the extended length 65536.
    const RopeScalingConfig rope =
        type == RopeType::kYarn
            ? model.rope
            : ExtendModelConfig(model, type, 8.0, 8192).rope;
    const RopeFrequencies want = ComputeRopeFrequencies(rope, 65536);
    EXPECT_EQ(m["own"].get<bool>(), type == RopeType::kYarn);
    EXPECT_EQ(m["inv_freq"].get<std::vector<double>>(), want.inv_freq)
        << m["method"];
    EXPECT_EQ(m["attention_factor"].get<double>(), want.attention_factor);
  }
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
