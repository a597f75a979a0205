#include "train/io/markdown_html.h"

#include <sstream>
#include <vector>

namespace rotor::train {

namespace {

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// The text of [text](link) or ![alt](src) starting at `at` (the "[" or
// "!"): fills label and target and returns the index after ")", or npos.
size_t ParseBracket(const std::string& text, size_t at, std::string& label,
                    std::string& target) {
  const size_t open = text.find('[', at);
  const size_t close = text.find("](", open);
  const size_t end = close == std::string::npos ? close : text.find(')', close);
  if (open != at + (text[at] == '!' ? 1 : 0) || end == std::string::npos) {
    return std::string::npos;
  }
  label = text.substr(open + 1, close - open - 1);
  target = text.substr(close + 2, end - close - 2);
  return end + 1;
}

// Inline markup of one line or table cell.
std::string Inline(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    std::string label, target;
    if (StartsWith(text.substr(i), "**")) {
      const size_t end = text.find("**", i + 2);
      if (end != std::string::npos) {
        out +=
            "<strong>" + Inline(text.substr(i + 2, end - i - 2)) + "</strong>";
        i = end + 2;
        continue;
      }
    } else if (text[i] == '`') {
      const size_t end = text.find('`', i + 1);
      if (end != std::string::npos) {
        out +=
            "<code>" + EscapeHtml(text.substr(i + 1, end - i - 1)) + "</code>";
        i = end + 1;
        continue;
      }
    } else if (text[i] == '[' ||
               (text[i] == '!' && i + 1 < text.size() && text[i + 1] == '[')) {
      const size_t next = ParseBracket(text, i, label, target);
      if (next != std::string::npos) {
        if (text[i] == '!') {
          const std::string stem = target.substr(0, target.rfind('.'));
          out += "<div class=\"md-figure\" data-rx-plot=\"" + EscapeHtml(stem) +
                 "\" title=\"" + EscapeHtml(label) + "\"></div>";
        } else {
          out += "<a href=\"" + EscapeHtml(target) + "\">" + Inline(label) +
                 "</a>";
        }
        i = next;
        continue;
      }
    }
    out += EscapeHtml(std::string(1, text[i]));
    ++i;
  }
  return out;
}

// The cells of "| a | b |".
std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string trimmed = row.substr(1);
  if (!trimmed.empty() && trimmed.back() == '|') trimmed.pop_back();
  std::istringstream in(trimmed);
  for (std::string cell; std::getline(in, cell, '|');) {
    const size_t first = cell.find_first_not_of(' ');
    const size_t last = cell.find_last_not_of(' ');
    cells.push_back(
        first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  return cells;
}

}  // namespace

std::string EscapeHtml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string MarkdownToHtml(const std::string& markdown) {
  std::vector<std::string> lines;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::ostringstream html;
  int list_depth = 0;  // open <ul> elements
  auto close_lists = [&](int depth) {
    for (; list_depth > depth; --list_depth) html << "</ul>\n";
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const bool item = StartsWith(line, "- ") || StartsWith(line, "  - ");
    if (!item) close_lists(0);
    if (line.empty()) continue;
    if (StartsWith(line, "### ")) {
      html << "<h3>" << Inline(line.substr(4)) << "</h3>\n";
    } else if (StartsWith(line, "## ")) {
      html << "<h2>" << Inline(line.substr(3)) << "</h2>\n";
    } else if (StartsWith(line, "# ")) {
      html << "<h1>" << Inline(line.substr(2)) << "</h1>\n";
    } else if (item) {
      const int depth = StartsWith(line, "- ") ? 1 : 2;
      close_lists(depth);
      for (; list_depth < depth; ++list_depth) html << "<ul>\n";
      html << "<li>" << Inline(line.substr(line.find("- ") + 2)) << "</li>\n";
    } else if (line[0] == '|' && i + 1 < lines.size() &&
               StartsWith(lines[i + 1], "|-")) {
      const std::vector<std::string> align = Cells(lines[i + 1]);
      html << "<table>\n<tr>";
      for (const std::string& cell : Cells(line)) {
        html << "<th>" << Inline(cell) << "</th>";
      }
      html << "</tr>\n";
      for (i += 2; i < lines.size() && !lines[i].empty() && lines[i][0] == '|';
           ++i) {
        html << "<tr>";
        const std::vector<std::string> cells = Cells(lines[i]);
        for (size_t c = 0; c < cells.size(); ++c) {
          const bool right = c < align.size() && !align[c].empty() &&
                             align[c].back() == ':' && align[c][0] != ':';
          html << (right ? "<td style=\"text-align:right\">" : "<td>")
               << Inline(cells[c]) << "</td>";
        }
        html << "</tr>\n";
      }
      --i;
      html << "</table>\n";
    } else {
      html << "<p>" << Inline(line) << "</p>\n";
    }
  }
  close_lists(0);
  return html.str();
}

}  // namespace rotor::train
