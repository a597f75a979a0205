#include "train/io/plot.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "train/io/plot_mark.h"

namespace rotor::train {

namespace {

// A gnuplot single-quoted string: a quote is written twice.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// Text shown in the plot, quoted: the pngcairo terminal reads _ ^ { } @ & ~
// as markup (inv_freq would print "inv" and a subscript f), so they are
// escaped to print as themselves.
std::string Text(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (std::strchr("_^{}@&~", c) != nullptr) escaped += '\\';
    escaped += c;
  }
  return Quoted(escaped);
}

// Runs `script` through gnuplot, then marks the PNG as rotor's
// (train/io/plot_mark.h); "" on success.
std::string RunGnuplot(const std::string& script, const std::string& png) {
  if (!GnuplotAvailable()) return GnuplotMissingMessage(png);
  FILE* pipe = popen("gnuplot 2>/dev/null", "w");
  if (pipe == nullptr) return "cannot start gnuplot for " + png;
  std::fputs(script.c_str(), pipe);
  const int status = pclose(pipe);
  // Marked as rotor's, so that a later run may replace it.
  return status == 0 ? MarkRotorPlot(png)
                     : StrCat("gnuplot failed to write ", png, " (status ",
                              status, ")");
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

bool GnuplotAvailable() {
  static const bool available =
      std::system("gnuplot --version > /dev/null 2>&1") == 0;
  return available;
}

std::string GnuplotMissingMessage(const std::string& png_path) {
  return "no plot " + png_path +
         ": gnuplot is not installed (sudo apt-get install gnuplot-nox), "
         "the tables are complete without it";
}

std::string DrawLineChart(const LineChart& chart, const std::string& png_path) {
  std::ostringstream script;
  script.precision(10);
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const LineSeries& series = chart.series[s];
    ROTOR_CHECK(series.x.size() == series.y.size(), "plot ", png_path,
                ": series '", series.title, "' has ", series.x.size(),
                " x values and ", series.y.size(), " y values");
    script << "$s" << s << " << EOD\n";
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (std::isfinite(series.y[i])) {
        script << series.x[i] << " " << series.y[i] << "\n";
      }
    }
    script << "EOD\n";
  }
  script << "set terminal pngcairo size 900,560 font 'sans,11'\n"
         << "set output " << Quoted(png_path) << "\n"
         << "set title " << Text(chart.title) << "\n"
         << "set xlabel " << Text(chart.x_label) << "\n"
         << "set ylabel " << Text(chart.y_label) << "\n"
         << "set grid\nset key outside right top\n";
  if (chart.log_x) script << "set logscale x 2\n";
  if (chart.log_y) script << "set logscale y\n";
  for (const auto& [x, label] : chart.vertical_lines) {
    script << "set arrow from " << x << ", graph 0 to " << x
           << ", graph 1 nohead dt 3 lc rgb 'gray40'\n"
           // Right-aligned, left of its line: a label right of a line near
           // the plot's right edge would run into the legend.
           << "set label " << Text(label) << " at " << x
           << ", graph 0.97 right offset -0.5,0 font ',9' textcolor rgb "
              "'gray30'\n";
  }
  script << "plot ";
  for (size_t s = 0; s < chart.series.size(); ++s) {
    script << (s ? ", " : "") << "$s" << s << " using 1:2 with "
           << (chart.series[s].points ? "linespoints lw 2 pt 7 ps 0.8"
                                      : "lines lw 2")
           << " lc rgb '" << kColors[s % (sizeof(kColors) / sizeof(kColors[0]))]
           << "'" << (chart.series[s].dashed ? " dt 2" : "") << " title "
           << Text(chart.series[s].title);
  }
  script << "\n";
  return RunGnuplot(script.str(), png_path);
}

std::string DrawHeatMap(const HeatMap& map, const std::string& png_path) {
  ROTOR_CHECK(map.values.size() == map.row_labels.size(), "heat map ", png_path,
              ": ", map.values.size(), " rows of values for ",
              map.row_labels.size(), " row labels");
  std::ostringstream script;
  script.precision(6);
  // One "column row value" line per cell (gnuplot's image plot).
  script << "$cells << EOD\n";
  for (size_t r = 0; r < map.values.size(); ++r) {
    ROTOR_CHECK(map.values[r].size() == map.column_labels.size(), "heat map ",
                png_path, ": row ", r, " has ", map.values[r].size(),
                " values for ", map.column_labels.size(), " columns");
    for (size_t c = 0; c < map.values[r].size(); ++c) {
      script << c << " " << r << " " << map.values[r][c] << "\n";
    }
  }
  script << "EOD\n";
  const size_t columns = map.column_labels.size();
  const size_t rows = map.row_labels.size();
  script << "set terminal pngcairo size " << 160 + 110 * columns << ","
         << 140 + 60 * rows << " font 'sans,11'\n"
         << "set output " << Quoted(png_path) << "\n"
         << "set title " << Text(map.title) << "\n"
         << "set xlabel " << Text(map.x_label) << "\n"
         << "set ylabel " << Text(map.y_label) << "\n"
         << "set cbrange [0:1]\nset cblabel 'accuracy'\n"
         << "set palette defined (0 '#b2182b', 0.5 '#f7f7f7', 1 '#2166ac')\n"
         << "set xrange [-0.5:" << columns - 0.5 << "]\n"
         << "set yrange [-0.5:" << rows - 0.5 << "]\n"
         << "set xtics (";
  for (size_t c = 0; c < columns; ++c) {
    script << (c ? ", " : "") << Text(map.column_labels[c]) << " " << c;
  }
  script << ")\nset ytics (";
  for (size_t r = 0; r < rows; ++r) {
    script << (r ? ", " : "") << Text(map.row_labels[r]) << " " << r;
  }
  script << ")\nplot $cells using 1:2:3 with image notitle, "
            "$cells using 1:2:(sprintf('%.0f%%', 100*$3)) with labels "
            "notitle\n";
  return RunGnuplot(script.str(), png_path);
}

}  // namespace rotor::train
