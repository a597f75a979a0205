// Line charts and heat maps as PNG files, drawn by gnuplot (Debian package
// gnuplot-nox) through a pipe: the data travels inline as gnuplot data
// blocks, so no temporary files are left behind. Without gnuplot nothing is
// drawn and the functions say how to install it; tables and reports never
// depend on the plots.
#ifndef ROTOR_TRAIN_IO_PLOT_H_
#define ROTOR_TRAIN_IO_PLOT_H_

#include <string>
#include <vector>

namespace rotor::train {

// True when `gnuplot` runs (checked once per process).
bool GnuplotAvailable();

// The message printed instead of a plot when gnuplot is missing.
std::string GnuplotMissingMessage(const std::string& png_path);

struct LineSeries {
  std::string title;
  std::vector<double> x;
  std::vector<double> y;  // same length as x; NaN or Inf points are skipped
  bool dashed = false;
  bool points = true;  // a marker at each point (else a plain line)
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  std::vector<LineSeries> series;
  // Vertical reference lines (e.g. the training length), with a label each.
  std::vector<std::pair<double, std::string>> vertical_lines;
};

// A grid of values in [0, 1] (e.g. accuracies), one row per row label and
// one column per column label, each cell printed with its value.
struct HeatMap {
  std::string title;
  std::string x_label;  // columns
  std::string y_label;  // rows
  std::vector<std::string> column_labels;
  std::vector<std::string> row_labels;
  std::vector<std::vector<double>> values;  // [rows][columns]
};

// Write `png_path`, marked as a plot rotor drew (train/io/plot_mark.h).
// Return "" on success, else a one-line reason (gnuplot
// missing or failing); they throw only for malformed input (sizes that do
// not match).
std::string DrawLineChart(const LineChart& chart, const std::string& png_path);
// The gnuplot script DrawLineChart runs: where its title, ticks and labels
// go is decided here, so a test can check the layout without a picture.
std::string LineChartScript(const LineChart& chart,
                            const std::string& png_path);
std::string DrawHeatMap(const HeatMap& map, const std::string& png_path);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_PLOT_H_
