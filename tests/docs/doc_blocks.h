// The command blocks of a Markdown page (README.md, docs/*.md), as the
// run-the-docs tests (tests/docs/docs_test.cc) read them.
//
// A page says what to do with each block in an HTML comment right above it,
// which renders as nothing:
//
//   <!-- doc-test: run -->                   run every command, in order
//   <!-- doc-test: run with train.max_steps=4 -->
//                                            ... adding the words to each
//                                            `build/rotor train` and
//                                            `build/rotor extend-report`
//                                            (the small step counts of CI;
//                                            `with train: W1; eval: W2`
//                                            gives words per subcommand)
//   <!-- doc-test: run warns -->             ... where a command may warn (the
//                                            page shows what the warning
//                                            says; other commands may not)
//   <!-- doc-test: output -->                what the last command of the
//                                            run block above printed
//   <!-- doc-test: skip REASON -->           not run, and why (a download,
//                                            a placeholder, minutes of CPU)
//
// A command block is a fenced block marked sh, bash or shell (indented up to
// 3 spaces, as in a list item), or an
// indented block whose first line starts like a command (build/, bash, ctest,
// cmake, mpirun, ...). Every command block needs a marker, so a command added
// to a page is run, or its reason for not being run is written beside it.
#ifndef ROTOR_TESTS_DOCS_DOC_BLOCKS_H_
#define ROTOR_TESTS_DOCS_DOC_BLOCKS_H_

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace rotor::test {

struct DocBlock {
  enum class Kind { kRun, kOutput, kSkip, kUnmarked };
  Kind kind = Kind::kUnmarked;
  std::string argument;  // run: the words after "with"; skip: the reason
  bool warns = false;    // run: its commands may print warnings
  int first_line = 0;    // 1-based line of the block's first content line
  std::vector<std::string> lines;  // the content, indentation removed
  bool is_command = false;         // a command block (needs a marker)
  bool fenced = false;             // between ``` lines (else indented)
};

// What went wrong in reading a page, "FILE:LINE: problem" each.
struct DocParse {
  std::vector<DocBlock> blocks;
  std::vector<std::string> problems;
};

inline bool StartsLikeACommand(const std::string& line) {
  static const std::regex kCommand(
      R"(^(build/|\./build/|bash |ctest |cmake |mpirun |srun |scripts/|python3 |node |printf |ollama |llama-cli ))");
  return std::regex_search(line, kCommand);
}

// The blocks of `text` (the page `name`), with their markers.
inline DocParse ReadDocBlocks(const std::string& name,
                              const std::string& text) {
  static const std::regex kMarker(
      R"(^<!-- doc-test: (run|output|skip)( warns)?( with (.*?)| (.*?))? -->\s*$)");
  // A fence may be indented by up to 3 spaces (a list item's block).
  static const std::regex kFence(R"(^( {0,3})(```+|~~~+)\s*([A-Za-z]*).*$)");
  DocParse parse;
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  DocBlock pending;  // the marker waiting for its block
  bool has_pending = false;
  int pending_line = 0;
  auto take_block = [&](DocBlock block) {
    if (has_pending) {
      block.kind = pending.kind;
      block.argument = pending.argument;
      block.warns = pending.warns;
      has_pending = false;
    }
    if (block.kind == DocBlock::Kind::kOutput &&
        (!block.fenced || parse.blocks.empty() ||
         parse.blocks.back().kind != DocBlock::Kind::kRun)) {
      parse.problems.push_back(
          name + ":" + std::to_string(block.first_line) +
          ": an output block is a fenced block right after a run block");
    }
    if (block.is_command && block.kind == DocBlock::Kind::kUnmarked) {
      parse.problems.push_back(
          name + ":" + std::to_string(block.first_line) +
          ": a command block without a doc-test marker above it (<!-- "
          "doc-test: run -->, or <!-- doc-test: skip REASON -->)");
    }
    parse.blocks.push_back(std::move(block));
  };
  bool previous_blank = true;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::smatch match;
    if (std::regex_match(line, match, kMarker)) {
      if (has_pending) {
        parse.problems.push_back(name + ":" + std::to_string(pending_line) +
                                 ": a doc-test marker with no block after it");
      }
      pending = DocBlock();
      const std::string kind = match[1];
      pending.kind = kind == "run"      ? DocBlock::Kind::kRun
                     : kind == "output" ? DocBlock::Kind::kOutput
                                        : DocBlock::Kind::kSkip;
      pending.warns = match[2].matched;
      pending.argument = match[4].matched ? match[4].str() : match[5].str();
      if (pending.warns && pending.kind != DocBlock::Kind::kRun) {
        parse.problems.push_back(name + ":" + std::to_string(i + 1) +
                                 ": only a run block warns");
      }
      if (pending.kind != DocBlock::Kind::kSkip && match[5].matched) {
        parse.problems.push_back(
            name + ":" + std::to_string(i + 1) + ": doc-test: " + kind +
            " takes no words but `with ...` (got `" + match[5].str() + "`)");
      }
      if (pending.kind == DocBlock::Kind::kSkip && pending.argument.empty()) {
        parse.problems.push_back(name + ":" + std::to_string(i + 1) +
                                 ": doc-test: skip needs its reason");
      }
      has_pending = true;
      pending_line = static_cast<int>(i + 1);
      previous_blank = false;
      continue;
    }
    if (std::regex_match(line, match, kFence)) {
      const size_t indent = match[1].length();
      const std::string fence = match[2];
      const std::string info = match[3];
      DocBlock block;
      block.first_line = static_cast<int>(i + 2);
      block.fenced = true;
      size_t j = i + 1;
      for (; j < lines.size(); ++j) {
        const size_t start = std::min(lines[j].find_first_not_of(' '), indent);
        if (lines[j].compare(start, fence.size(), fence) == 0) break;
        block.lines.push_back(
            lines[j].substr(std::min(start, lines[j].size())));
      }
      block.is_command = info == "sh" || info == "bash" || info == "shell";
      take_block(std::move(block));
      i = j;
      previous_blank = false;
      continue;
    }
    const bool indented = line.compare(0, 4, "    ") == 0;
    if (indented && previous_blank) {
      // An indented block: these lines and the indented (or blank) ones
      // after them.
      DocBlock block;
      block.first_line = static_cast<int>(i + 1);
      size_t j = i;
      for (; j < lines.size(); ++j) {
        if (lines[j].empty()) {
          if (j + 1 < lines.size() && lines[j + 1].compare(0, 4, "    ") == 0) {
            block.lines.push_back("");
            continue;
          }
          break;
        }
        if (lines[j].compare(0, 4, "    ") != 0) break;
        block.lines.push_back(lines[j].substr(4));
      }
      block.is_command = StartsLikeACommand(block.lines.front());
      // Indented text that is not a command (a list's paragraph, a table)
      // takes no marker.
      if (block.is_command || has_pending) take_block(std::move(block));
      i = j - 1;
      previous_blank = false;
      continue;
    }
    if (!line.empty() && has_pending) {
      parse.problems.push_back(name + ":" + std::to_string(pending_line) +
                               ": a doc-test marker with no block after it");
      has_pending = false;
    }
    previous_blank = line.find_first_not_of(" \t") == std::string::npos;
  }
  if (has_pending) {
    parse.problems.push_back(name + ":" + std::to_string(pending_line) +
                             ": a doc-test marker with no block after it");
  }
  return parse;
}

// The commands of a run block: continued lines (ending in \) joined, comment
// lines and a command's trailing "# ..." dropped (outside quotes).
inline std::vector<std::string> BlockCommands(const DocBlock& block) {
  std::vector<std::string> commands;
  std::string current;
  for (const std::string& raw : block.lines) {
    std::string line = raw;
    const size_t start = line.find_first_not_of(" \t");
    if (current.empty() && (start == std::string::npos || line[start] == '#')) {
      continue;
    }
    // Cut a trailing comment: '#' after whitespace, outside quotes.
    char quote = 0;
    for (size_t k = 0; k < line.size(); ++k) {
      const char c = line[k];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '#' && k > 0 &&
                 (line[k - 1] == ' ' || line[k - 1] == '\t')) {
        line.resize(k);
        break;
      }
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) {
      line.pop_back();
      while (!line.empty() && line.back() == ' ') line.pop_back();
    }
    current += (current.empty() ? "" : " ") +
               line.substr(std::min(line.size(), line.find_first_not_of(' ')));
    if (!continued) {
      commands.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) commands.push_back(current);
  return commands;
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_DOCS_DOC_BLOCKS_H_
