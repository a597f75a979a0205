// rotor's mark on its plots (train/io/plot_mark.h): a PNG gnuplot drew
// carries it, byte for byte a valid tEXt chunk; a file without it (a
// user's PNG, text, a folder) is not taken for rotor's, and only rotor's
// plots are replaced without --force.
#include "train/io/plot_mark.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

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
  EXPECT_EQ(MarkRotorPlot(png), "");
  EXPECT_EQ(ReadFile(png), kPngHeader + kMark + kPngEnd);
  EXPECT_TRUE(IsRotorPlot(png));
  // Not a PNG: left as it is, and said so.
  const std::string text = dir.Write("notes.png", "my notes");
  EXPECT_CONTAINS(MarkRotorPlot(text), text + " is not a PNG file");
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
