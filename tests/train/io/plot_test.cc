// The layout of a line chart, read from the gnuplot script that draws it
// (LineChartScript): a long title is wrapped so no line is wider than the
// picture, a run of a few steps gets whole-number step ticks, and a
// reference line's label lies on the side of its line that has room. With
// gnuplot installed, the charts are drawn too.
#include "train/io/plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "train/io/atomic_file.h"

namespace rotor::train {
namespace {

// The script's lines that start with `prefix`.
std::vector<std::string> LinesStartingWith(const std::string& script,
                                           const std::string& prefix) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin < script.size()) {
    size_t end = script.find('\n', begin);
    if (end == std::string::npos) end = script.size();
    const std::string line = script.substr(begin, end - begin);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    begin = end + 1;
  }
  return out;
}

// The quoted pieces of a gnuplot string expression ('a'."\n".'b').
std::vector<std::string> QuotedPieces(const std::string& line) {
  std::vector<std::string> pieces;
  for (size_t at = line.find('\''); at != std::string::npos;) {
    std::string piece;
    size_t i = at + 1;
    for (; i < line.size(); ++i) {
      if (line[i] == '\'') {
        if (i + 1 < line.size() && line[i + 1] == '\'') {
          piece += '\'';
          ++i;
          continue;
        }
        break;
      }
      piece += line[i];
    }
    pieces.push_back(piece);
    at = line.find('\'', i + 1);
  }
  return pieces;
}

LineChart Steps(std::vector<double> steps) {
  LineChart chart;
  chart.title = "loss";
  chart.x_label = "step";
  chart.y_label = "loss";
  LineSeries series;
  series.title = "train";
  series.x = steps;
  series.y.assign(steps.size(), 1.0);
  chart.series = {series};
  return chart;
}

// The title of a run in a deep folder (trainer.cc: output_dir, config,
// parameters, batch, lr) is longer than the 900-pixel picture is wide:
// centred, it lost both ends. Wrapped at spaces, every line fits and no
// character is lost.
TEST(LineChartScript, LongTitleIsWrappedIntoLinesThatFit) {
  LineChart chart = Steps({1, 2, 3, 4});
  chart.title =
      "/tmp/w41b/runs/learn/08_yarn_finetuned_at_1024_tokens_with_passkey_"
      "practice: /work/wt-b/configs/tiny.yaml, 26.8 k parameters, 4 x 32 "
      "tokens per batch, lr 0.01";
  const std::vector<std::string> title =
      LinesStartingWith(LineChartScript(chart, "loss.png"), "set title ");
  ASSERT_EQ(title.size(), 1u);
  const std::vector<std::string> pieces = QuotedPieces(title[0]);
  ASSERT_GE(pieces.size(), 2u) << title[0];
  std::string joined;
  for (const std::string& piece : pieces) {
    // What is shown: the script escapes _ for the pngcairo terminal.
    std::string shown;
    for (char c : piece) {
      if (c != '\\') shown += c;
    }
    // ~7.4 pixels a character at 11 points: 80 fit in the plot's width.
    EXPECT_LE(shown.size(), 80u) << shown;
    joined += (joined.empty() ? "" : " ") + shown;
  }
  EXPECT_EQ(joined, chart.title);
}

TEST(LineChartScript, ShortTitleStaysOneLine) {
  const std::vector<std::string> title =
      LinesStartingWith(LineChartScript(Steps({1, 2}), "x.png"), "set title ");
  ASSERT_EQ(title.size(), 1u);
  EXPECT_EQ(title[0], "set title 'loss'");
}

// gnuplot's own ticks for steps 1 to 4 were 1, 1.5, 2, ...: a run of a few
// steps gets a tick at every step, a long run keeps gnuplot's (whole
// numbers once the range is wider than 8), and x values that are not all
// whole numbers keep gnuplot's ticks.
TEST(LineChartScript, FewStepsGetWholeNumberTicks) {
  EXPECT_EQ(LinesStartingWith(LineChartScript(Steps({1, 2, 3, 4}), "a.png"),
                              "set xtics "),
            std::vector<std::string>{"set xtics 1"});
  EXPECT_EQ(
      LinesStartingWith(LineChartScript(Steps({5}), "a.png"), "set xtics "),
      std::vector<std::string>{"set xtics 1"});
  EXPECT_TRUE(LinesStartingWith(LineChartScript(Steps({0, 500, 1000}), "a.png"),
                                "set xtics ")
                  .empty());
  EXPECT_TRUE(LinesStartingWith(LineChartScript(Steps({0.5, 1, 1.5}), "a.png"),
                                "set xtics ")
                  .empty());
}

// rotor eval's "trained at 256" line at the first length of a log-x chart:
// right-aligned left of its line, it ran off the plot into the y tick
// labels and was clipped. A line in the left half of the x range has its
// label on its right; one in the right half on its left (a label right of
// a line near the right edge would run into the legend).
TEST(LineChartScript, ReferenceLineLabelLiesOnTheSideWithRoom) {
  LineChart chart = Steps({256, 512, 1024, 2048});
  chart.log_x = true;
  chart.vertical_lines = {{256, "trained at 256"}, {2048, "4L"}};
  const std::vector<std::string> labels =
      LinesStartingWith(LineChartScript(chart, "ppl.png"), "set label ");
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_NE(labels[0].find("'trained at 256' at 256, graph 0.97 left"),
            std::string::npos)
      << labels[0];
  EXPECT_NE(labels[1].find("'4L' at 2048, graph 0.97 right"), std::string::npos)
      << labels[1];
}

TEST(LineChartScript, DrawsThePictureWhenGnuplotIsInstalled) {
  if (!GnuplotAvailable()) GTEST_SKIP() << GnuplotMissingMessage("loss.png");
  test::TempDir dir;
  LineChart chart = Steps({1, 2, 3});
  chart.title = std::string(200, 'x') + " y";
  chart.vertical_lines = {{1, "start"}};
  ASSERT_EQ(DrawLineChart(chart, dir.Path("loss.png")), "");
  EXPECT_EQ(ReadFile(dir.Path("loss.png")).substr(1, 3), "PNG");
}

}  // namespace
}  // namespace rotor::train
