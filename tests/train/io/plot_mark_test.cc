// rotor's mark on its plots (train/io/plot_mark.h): a PNG gnuplot drew
// carries it, byte for byte a valid tEXt chunk; a file without it (a
// user's PNG, text, a folder) is not taken for rotor's, and only rotor's
// plots are replaced without --force.
#include "train/io/plot_mark.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/io/atomic_file.h"
#include "train/io/output_file.h"
#include "train/io/plot.h"

namespace rotor::train {
namespace {

namespace fs = std::filesystem;

// The signature and IHDR chunk of a 1x1 grey PNG, then its IEND chunk.
const std::string kPngHeader(
    "\x89PNG\r\n\x1a\n"
    "\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00"
    "\x3a\x7e\x9b\x55",
    33);
const std::string kPngEnd("\x00\x00\x00\x00IEND\xae\x42\x60\x82", 12);
// The mark: length 14, "tEXt", "Software\0rotor", and the CRC-32 of type
// and data (0x4793e98c, as zlib.crc32 computes it).
const std::string kMark("\x00\x00\x00\x0etEXtSoftware\x00rotor\x47\x93\xe9\x8c",
                        26);

TEST(PlotMark, MarksAPngAfterItsHeaderChunk) {
  test::TempDir dir;
  const std::string png = dir.Write("plot.png", kPngHeader + kPngEnd);
  EXPECT_FALSE(IsRotorPlot(png));
  EXPECT_EQ(MarkRotorPlot(png, png), "");
  EXPECT_EQ(ReadFile(png), kPngHeader + kMark + kPngEnd);
  EXPECT_TRUE(IsRotorPlot(png));
  // Not a PNG: left as it is, and said so.
  const std::string text = dir.Write("notes.png", "my notes");
  EXPECT_CONTAINS(MarkRotorPlot(text, text), text + " is not a PNG file");
  EXPECT_EQ(ReadFile(text), "my notes");
  EXPECT_FALSE(IsRotorPlot(text));
  EXPECT_FALSE(IsRotorPlot(dir.Path("missing.png")));
  EXPECT_FALSE(IsRotorPlot(dir.path()));
  // Only the mark right after the header counts: the same text elsewhere
  // (another program's chunk order) is not rotor's mark.
  EXPECT_FALSE(
      IsRotorPlot(dir.Write("late.png", kPngHeader + kPngEnd + kMark)));
}

TEST(PlotMark, GnuplotsPlotsAreMarked) {
  if (!GnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  test::TempDir dir;
  LineChart chart;
  chart.series.push_back({"a", {1, 2}, {3, 4}});
  const std::string png = dir.Path("chart.png");
  ASSERT_EQ(DrawLineChart(chart, png), "");
  EXPECT_TRUE(IsRotorPlot(png));
  EXPECT_EQ(ReadFile(png).substr(33, kMark.size()), kMark);
}

// A link at a plot's path is no plot rotor drew: replacing what it names
// would overwrite a file rotor never wrote (a symbolic link's target, a
// hard link's other name), so it needs --force, and a plot drawn there
// replaces the link itself.
TEST(PlotMark, ALinkToRotorsPlotIsNotReplacedWithoutForce) {
  test::TempDir dir;
  const std::string kept = dir.Write("kept.png", kPngHeader + kMark + kPngEnd);
  ASSERT_TRUE(IsRotorPlot(kept));
  fs::create_symlink(kept, dir.Path("soft.png"));
  EXPECT_FALSE(IsRotorPlot(dir.Path("soft.png")));
  ROTOR_EXPECT_ERROR(CheckPlotOutputFile(dir.Path("soft.png"), false, "--plot"),
                     "already exists; pass --force");
  fs::create_hard_link(kept, dir.Path("hard.png"));
  EXPECT_FALSE(IsRotorPlot(dir.Path("hard.png")));
  EXPECT_FALSE(IsRotorPlot(kept));
  if (!GnuplotAvailable()) return;
  fs::remove(dir.Path("hard.png"));
  LineChart chart;
  chart.series.push_back({"a", {1, 2}, {3, 4}});
  ASSERT_EQ(DrawLineChart(chart, dir.Path("soft.png")), "");
  EXPECT_FALSE(fs::is_symlink(dir.Path("soft.png")));
  EXPECT_TRUE(IsRotorPlot(dir.Path("soft.png")));
  EXPECT_EQ(ReadFile(kept), kPngHeader + kMark + kPngEnd);
}

// A gnuplot that fails half-way (here one that truncates its output and
// exits 1, as a killed or failing one leaves it) leaves the plot that was
// there, and no temporary file.
TEST(PlotMark, AFailedDrawingLeavesThePlotThatWasThere) {
  if (!GnuplotAvailable()) GTEST_SKIP() << "gnuplot is not installed";
  test::TempDir dir;
  dir.Write("bin/gnuplot",
            "#!/bin/sh\n"
            "out=$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\" | head -n 1)\n"
            ": > \"$out\"\nexit 1\n");
  fs::permissions(dir.Path("bin/gnuplot"), fs::perms::owner_all);
  const std::string png = dir.Write("plot.png", kPngHeader + kMark + kPngEnd);
  const std::string path = std::getenv("PATH");
  setenv("PATH", (dir.Path("bin") + ":" + path).c_str(), 1);
  LineChart chart;
  chart.series.push_back({"a", {1, 2}, {3, 4}});
  const std::string problem = DrawLineChart(chart, png);
  setenv("PATH", path.c_str(), 1);
  EXPECT_CONTAINS(problem, "gnuplot failed to write " + png);
  EXPECT_EQ(ReadFile(png), kPngHeader + kMark + kPngEnd);
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"bin", "plot.png"}));
}

TEST(PlotMark, OnlyRotorsPlotsAreReplacedWithoutForce) {
  test::TempDir dir;
  CheckPlotOutputFile(dir.Path("new.png"), false, "--plot");
  const std::string ours = dir.Write("ours.png", kPngHeader + kMark + kPngEnd);
  CheckPlotOutputFile(ours, false, "--plot");
  const std::string theirs = dir.Write("theirs.png", kPngHeader + kPngEnd);
  ROTOR_EXPECT_ERROR(CheckPlotOutputFile(theirs, false, "--plot"),
                     "--plot " + theirs +
                         " already exists; pass --force to replace it, or "
                         "name another file (without --force rotor replaces "
                         "only a plot it drew itself, and this file is none)");
  CheckPlotOutputFile(theirs, true, "--plot");
  // A folder or an input is never replaced, rotor's mark or not.
  ROTOR_EXPECT_ERROR(CheckPlotOutputFile(dir.path(), true, "--plot"),
                     "is a folder");
  ReadFile(ours);  // now an input of this process
  ROTOR_EXPECT_ERROR(CheckPlotOutputFile(ours, false, "--plot"),
                     "is an input of this command");
}

}  // namespace
}  // namespace rotor::train
