#include "train/io/plot.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "train/io/atomic_file.h"
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

// A title as a gnuplot string expression, its words wrapped into lines of
// at most `max_chars` characters ('line 1'."\n".'line 2'): pngcairo centres
// a title over the plot and cuts what does not fit on either side. A word
// longer than a line is cut into pieces.
std::string TitleText(const std::string& title, size_t max_chars) {
  std::vector<std::string> lines(1);
  std::istringstream words(title);
  for (std::string word; words >> word;) {
    if (!lines.back().empty() &&
        lines.back().size() + 1 + word.size() > max_chars) {
      lines.emplace_back();
    }
    lines.back() += (lines.back().empty() ? "" : " ") + word;
    while (lines.back().size() > max_chars) {
      std::string rest = lines.back().substr(max_chars);
      lines.back().resize(max_chars);
      lines.push_back(std::move(rest));
    }
  }
  std::string out;
  for (const std::string& line : lines) {
    out += (out.empty() ? "" : ".\"\\n\".") + Text(line);
  }
  return out;
}

// Runs `script` through gnuplot, drawing into a temporary file beside
// `png` (PNG.tmp-XXXXXX), which is then written to `png` marked as rotor's
// (train/io/plot_mark.h) and removed; "" on success. A gnuplot that fails
// or is killed half-way leaves `png` as it was, and a link at `png` is
// replaced, never written through.
std::string RunGnuplot(const std::string& script, const std::string& png) {
  if (!GnuplotAvailable()) return GnuplotMissingMessage(png);
  std::string drawn = TemporaryTemplate(png);
  const int fd = ::mkstemp(drawn.data());
  if (fd < 0) return StrCat("cannot create a temporary file beside ", png);
  ::close(fd);
  std::string problem;
  if (FILE* pipe = popen("gnuplot 2>/dev/null", "w"); pipe == nullptr) {
    problem = "cannot start gnuplot for " + png;
  } else {
    // `set output` right after `set terminal`, which comes first.
    std::string with_output = script;
    const size_t terminal = with_output.find("set terminal ");
    const size_t line_end = terminal == std::string::npos
                                ? 0
                                : with_output.find('\n', terminal) + 1;
    with_output.insert(line_end, "set output " + Quoted(drawn) + "\n");
    std::fputs(with_output.c_str(), pipe);
    const int status = pclose(pipe);
    problem = status == 0 ? MarkRotorPlot(drawn, png)
                          : StrCat("gnuplot failed to write ", png, " (status ",
                                   status, ")");
  }
  std::remove(drawn.c_str());
  return problem;
}

// Characters of an 11-point title line that fit over the plot of a
// 900-pixel line chart (about 7.4 pixels each, and the legend's column
// taken off), and per pixel of a heat map's width.
constexpr size_t kLineChartTitleChars = 80;
constexpr double kTitleCharsPerPixel = 1.0 / 8.0;

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

std::string LineChartScript(const LineChart& chart,
                            const std::string& png_path) {
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
         << "set title " << TitleText(chart.title, kLineChartTitleChars) << "\n"
         << "set xlabel " << Text(chart.x_label) << "\n"
         << "set ylabel " << Text(chart.y_label) << "\n"
         << "set grid\nset key outside right top\n";
  if (chart.log_x) script << "set logscale x 2\n";
  if (chart.log_y) script << "set logscale y\n";
  // The x range of the data, in the axis' own scale.
  double x_min = INFINITY, x_max = -INFINITY;
  bool whole_numbers = true;
  for (const LineSeries& series : chart.series) {
    for (size_t i = 0; i < series.x.size(); ++i) {
      if (!std::isfinite(series.y[i])) continue;
      const double x = chart.log_x ? std::log2(series.x[i]) : series.x[i];
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      whole_numbers &= series.x[i] == std::floor(series.x[i]);
    }
  }
  // Counts such as steps over a range of a few: gnuplot's own ticks would
  // fall between them (1, 1.5, 2, ...). Over a wider range its ticks are
  // whole numbers anyway.
  if (!chart.log_x && x_min <= x_max && whole_numbers && x_max - x_min <= 8) {
    script << "set xtics 1\n";
  }
  for (const auto& [x, label] : chart.vertical_lines) {
    // The label on the side of its line with more room: right of a line in
    // the left half of the range (left of the first length it would run off
    // the plot), else left of it (right of a line near the right edge it
    // would run into the legend).
    const double at = chart.log_x ? std::log2(x) : x;
    const bool on_the_right = x_min < x_max && at < (x_min + x_max) / 2;
    script << "set arrow from " << x << ", graph 0 to " << x
           << ", graph 1 nohead dt 3 lc rgb 'gray40'\n"
           << "set label " << Text(label) << " at " << x << ", graph 0.97 "
           << (on_the_right ? "left offset 0.5,0" : "right offset -0.5,0")
           << " font ',9' textcolor rgb 'gray30'\n";
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
  return script.str();
}

std::string DrawLineChart(const LineChart& chart, const std::string& png_path) {
  return RunGnuplot(LineChartScript(chart, png_path), png_path);
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
  // Row labels longer than a length's few digits ("niah_single 4096") widen
  // the picture by what they take, so the cells keep their width.
  size_t label_chars = 0;
  for (const std::string& label : map.row_labels) {
    label_chars = std::max(label_chars, label.size());
  }
  const size_t width =
      160 + 110 * columns + 7 * (std::max<size_t>(label_chars, 8) - 8);
  script << "set terminal pngcairo size " << width << "," << 140 + 60 * rows
         << " font 'sans,11'\n"
         << "set title "
         << TitleText(map.title,
                      static_cast<size_t>(width * kTitleCharsPerPixel))
         << "\n"
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
