// Run the docs: every command block of README.md and the guides that the
// page marks `<!-- doc-test: run -->` runs here as a new user would type it,
// in order, in a fresh folder that holds links to build/, configs/,
// scripts/ and examples/ (tests/docs/doc_blocks.h says how a page marks its
// blocks). A command must exit 0 and print no warning (unless its block is
// marked `run warns`). A block marked `output`
// must be what the command above it printed, up to timings (tok/s, ETA,
// seconds), when this machine runs the kernels the page's outputs name (their
// `kernels:` line, printed by examples/06_tiny_lm); on other kernels the
// figures round differently and only the commands are checked.
//
// Blocks marked `run with WORDS` get WORDS after each `build/rotor train`
// and `build/rotor extend-report` (or `with train: W1; eval: W2`, words per
// subcommand): the small step counts that keep this in the default suite.
// `skip REASON` blocks are listed in the test's output.
//
// The output blocks are written by the same run:
//
//   bash scripts/update_doc_outputs.sh        # runs this with
//                                             # ROTOR_UPDATE_DOC_OUTPUTS=1
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/docs/doc_blocks.h"
#include "tests/temp_dir.h"
#include "train/io/atomic_file.h"

namespace rotor::test {
namespace {

// The end of the shell word of `text` that goes on at `start`: the next
// space outside quotes, or the end.
size_t WordEnd(const std::string& text, size_t start) {
  char quote = 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ' ') {
      return i;
    }
  }
  return text.size();
}

// The parts of a `run with` argument: "SUBCOMMAND: words" separated by
// ";", or plain words, which go to train and extend-report.
struct WithSegment {
  std::vector<std::string> subcommands;
  std::string words;
};
std::vector<WithSegment> WithSegments(const std::string& with) {
  static const std::regex kSegment(R"(^\s*(([a-z-]+):\s+)?(.*?)\s*$)");
  std::vector<WithSegment> parts;
  std::istringstream segments(with);
  for (std::string segment; std::getline(segments, segment, ';');) {
    std::smatch match;
    if (!std::regex_match(segment, match, kSegment) || match[3].length() == 0) {
      continue;
    }
    parts.push_back({match[2].matched
                         ? std::vector<std::string>{match[2].str()}
                         : std::vector<std::string>{"train", "extend-report"},
                     match[3].str()});
  }
  return parts;
}

// Whether `command` is `build/rotor SUBCOMMAND ...`.
bool RunsSubcommand(const std::string& command, const std::string& subcommand) {
  return command.rfind("build/rotor " + subcommand + " ", 0) == 0;
}

// `command` with the words of a `run with` block added. `with` is a list
// of "SUBCOMMAND: words" separated by ";" (words for each `build/rotor
// SUBCOMMAND ...`), or plain words for `build/rotor train` and `build/rotor
// extend-report`. A key=value word, or a --flag with its value, replaces
// the command's own value of that key or flag.
std::string WithWords(const std::string& command, const std::string& with) {
  std::string result = command;
  for (const WithSegment& segment : WithSegments(with)) {
    for (const std::string& subcommand : segment.subcommands) {
      if (!RunsSubcommand(command, subcommand)) continue;
      // A key=value or a --flag value the command already gives is
      // replaced (rotor refuses a key given twice); other words are added
      // at the end.
      std::vector<std::string> words;
      std::istringstream in(segment.words);
      for (std::string word; in >> word;) words.push_back(word);
      for (size_t w = 0; w < words.size(); ++w) {
        const std::string& word = words[w];
        const bool flag = word.rfind("--", 0) == 0 && w + 1 < words.size() &&
                          words[w + 1].rfind("--", 0) != 0;
        const size_t equals = word.find('=');
        const std::string key = flag ? word + " "
                                : equals == std::string::npos
                                    ? ""
                                    : word.substr(0, equals + 1);
        const std::string item = flag ? word + " " + words[++w] : word;
        size_t at = key.empty() ? std::string::npos : result.find(" " + key);
        // A flag followed by another flag takes no value here: add it.
        if (flag && at != std::string::npos &&
            result.compare(at + 1 + key.size(), 2, "--") == 0) {
          at = std::string::npos;
        }
        if (at == std::string::npos) {
          result += " " + item;
          continue;
        }
        // The old value is the rest of that shell word, quotes included.
        const size_t end = WordEnd(result, at + 1 + key.size());
        result.replace(at + 1, end - at - 1, item);
      }
    }
  }
  return result;
}

// The text with what changes from run to run (speeds, times) replaced, and
// trailing spaces removed from each line.
std::string Masked(const std::string& text) {
  static const std::regex kSpeed(R"(\d+ tok/s)");
  static const std::regex kEta(R"(ETA \d+m\d+s)");
  static const std::regex kSeconds(R"(in \d+(\.\d+)? s\b)");
  // A loss plot is drawn where gnuplot is installed, and said so otherwise.
  static const std::regex kPlot(
      R"((^|\n)(loss curve: |no plot )([^ :\n]+)[^\n]*)");
  std::string out = std::regex_replace(text, kSpeed, "N tok/s");
  out = std::regex_replace(out, kPlot, "$1plot $3");
  out = std::regex_replace(out, kEta, "ETA N");
  out = std::regex_replace(out, kSeconds, "in N s");
  std::istringstream in(out);
  std::string result;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) {
      line.pop_back();
    }
    result += line + "\n";
  }
  while (result.size() > 1 && result.substr(result.size() - 2) == "\n\n") {
    result.pop_back();
  }
  return result;
}

// The line of `text` that starts with "kernels: ", or "".
std::string KernelsLine(const std::string& text) {
  const size_t at =
      text.rfind("kernels: ", 0) == 0 ? 0 : text.find("\nkernels: ");
  if (at == std::string::npos) return "";
  const size_t start = at == 0 ? 0 : at + 1;
  return text.substr(start, text.find('\n', start) - start);
}

struct CommandRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

CommandRun RunInFolder(const TempDir& dir, const std::string& command,
                       int index) {
  const std::string script =
      dir.Write(".doc-test/command-" + std::to_string(index) + ".sh",
                "set -o pipefail\ncd '" + dir.path() + "'\n" + command + "\n");
  const std::string log = script + ".log";
  const std::string line =
      "timeout 900 bash '" + script + "' >'" + log + "' 2>&1 </dev/null";
  CommandRun run;
  const int raw = std::system(line.c_str());
  if (raw != -1 && WIFEXITED(raw)) run.status = WEXITSTATUS(raw);
  run.out = train::ReadFile(log);
  return run;
}

// The last `lines` lines of `text`.
std::string Tail(const std::string& text, int lines) {
  size_t at = text.size();
  for (int i = 0; i <= lines && at != std::string::npos && at > 0; ++i) {
    at = text.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? text : text.substr(at + 1);
}

// Runs `page` (relative to the source tree) as the header says.
void RunPage(const std::string& page) {
  // Under the sanitizers the training commands take many times as long,
  // and what they run is what the unit tests run there already.
  if (ROTOR_SANITIZED) GTEST_SKIP() << "not under the sanitizers";
  const std::string path = std::string(ROTOR_SOURCE_DIR) + "/" + page;
  const std::string text = train::ReadFile(path);
  const DocParse parse = ReadDocBlocks(page, text);
  for (const std::string& problem : parse.problems) ADD_FAILURE() << problem;
  if (!parse.problems.empty()) return;

  TempDir dir;
  for (const char* link : {"configs", "scripts", "examples"}) {
    std::filesystem::create_directory_symlink(
        std::string(ROTOR_SOURCE_DIR) + "/" + link, dir.Path(link));
  }
  std::filesystem::create_directory_symlink(ROTOR_BINARY_DIR,
                                            dir.Path("build"));

  struct Output {
    const DocBlock* block;
    std::string printed;
  };
  std::vector<Output> outputs;
  std::string last_printed;
  int index = 0;
  for (const DocBlock& block : parse.blocks) {
    if (block.kind == DocBlock::Kind::kSkip) {
      std::cout << page << ":" << block.first_line
                << ": not run: " << block.argument << "\n";
    } else if (block.kind == DocBlock::Kind::kOutput) {
      outputs.push_back({&block, last_printed});
    } else if (block.kind == DocBlock::Kind::kRun) {
      // Every word of `with` must reach a command, and a command that gets
      // words is one program (words after a pipe would go to its last).
      const std::vector<std::string> commands = BlockCommands(block);
      for (const WithSegment& segment : WithSegments(block.argument)) {
        bool used = false;
        for (const std::string& c : commands) {
          for (const std::string& subcommand : segment.subcommands) {
            used |= RunsSubcommand(c, subcommand);
          }
        }
        EXPECT_TRUE(used) << page << ":" << block.first_line
                          << ": `with` gives `" << segment.words
                          << "` to a command the block does "
                          << "not run";
      }
      for (const std::string& written : commands) {
        const std::string command = WithWords(written, block.argument);
        if (command != written) {
          EXPECT_EQ(written.find_first_of("|;&"), std::string::npos)
              << page << ":" << block.first_line << ": `" << written
              << "` gets `with` words, so it must be one command";
        }
        const auto start = std::chrono::steady_clock::now();
        const CommandRun run = RunInFolder(dir, command, index++);
        const std::chrono::duration<double> took =
            std::chrono::steady_clock::now() - start;
        std::cout << page << ":" << block.first_line << ": " << command << "  ("
                  << std::fixed << std::setprecision(1) << took.count() << " s)"
                  << std::endl;
        ASSERT_EQ(run.status, 0)
            << page << ":" << block.first_line << ": `" << command
            << "` failed; the end of what it printed:\n"
            << Tail(run.out, 30);
        // A command a page shows works as shown: no warning either (the
        // README's `rope` example once warned of a missing key).
        if (!block.warns) {
          EXPECT_EQ(run.out.find("warning:"), std::string::npos)
              << page << ":" << block.first_line << ": `" << command
              << "` warns:\n"
              << Tail(run.out, 30);
        }
        last_printed = run.out;
      }
    }
  }

  if (const char* update = std::getenv("ROTOR_UPDATE_DOC_OUTPUTS");
      update != nullptr && std::string(update) == "1") {
    // Write each output block's lines with what its command printed.
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) {
      const auto first = lines.begin() + (it->block->first_line - 1);
      lines.erase(first, first + it->block->lines.size());
      std::istringstream printed(it->printed);
      std::vector<std::string> replacement;
      for (std::string line; std::getline(printed, line);) {
        ASSERT_NE(line.rfind("```", 0), 0u)
            << page << ": a command printed a fence line, which would end "
            << "the output block at " << it->block->first_line;
        while (!line.empty() && line.back() == ' ') line.pop_back();
        replacement.push_back(line);
      }
      while (!replacement.empty() && replacement.back().empty()) {
        replacement.pop_back();
      }
      lines.insert(lines.begin() + (it->block->first_line - 1),
                   replacement.begin(), replacement.end());
    }
    std::string updated;
    for (const std::string& line : lines) updated += line + "\n";
    train::WriteFileAtomically(path, updated);
    std::cout << "wrote " << outputs.size() << " output blocks of " << page
              << "\n";
    return;
  }

  // The figures are compared on the kernels the page measured them on.
  std::string page_kernels, these_kernels;
  for (const Output& output : outputs) {
    std::string expected;
    for (const std::string& line : output.block->lines) expected += line + "\n";
    if (page_kernels.empty()) page_kernels = KernelsLine(expected);
    if (these_kernels.empty()) these_kernels = KernelsLine(output.printed);
  }
  if (page_kernels != these_kernels) {
    std::cout << page << ": its outputs were measured on \"" << page_kernels
              << "\"; this machine runs \"" << these_kernels
              << "\", which rounds differently: only the commands were "
                 "checked\n";
    return;
  }
  for (const Output& output : outputs) {
    std::string expected;
    for (const std::string& line : output.block->lines) expected += line + "\n";
    EXPECT_EQ(Masked(output.printed), Masked(expected))
        << page << ":" << output.block->first_line
        << ": the output differs from what the page shows (bash "
           "scripts/update_doc_outputs.sh writes it again)";
  }
}

TEST(DocBlocks, ReadsMarkersFencesAndIndentedCommands) {
  const DocParse parse =
      ReadDocBlocks("page.md",
                    "intro\n"
                    "\n"
                    "<!-- doc-test: run with a=1 -->\n"
                    "```sh\n"
                    "build/rotor train c.yaml \\\n"
                    "    x=2   # a comment\n"
                    "# only a comment\n"
                    "build/rotor eval --text 'a # b'\n"
                    "```\n"
                    "<!-- doc-test: output -->\n"
                    "```\n"
                    "printed\n"
                    "```\n"
                    "\n"
                    "<!-- doc-test: run warns with b=2 -->\n"
                    "```bash\n"
                    "build/rotor eval\n"
                    "```\n"
                    "<!-- doc-test: skip needs a model -->\n"
                    "\n"
                    "    build/rotor generate --checkpoint M\n"
                    "\n"
                    "A paragraph.\n"
                    "\n"
                    "    cmake -S . -B build\n"
                    "\n"
                    "text\n"
                    "\n"
                    "    not a command\n");
  ASSERT_EQ(parse.blocks.size(), 5u);
  EXPECT_EQ(parse.blocks[0].kind, DocBlock::Kind::kRun);
  EXPECT_EQ(parse.blocks[0].argument, "a=1");
  EXPECT_FALSE(parse.blocks[0].warns);
  EXPECT_EQ(parse.blocks[0].first_line, 5);
  EXPECT_EQ(BlockCommands(parse.blocks[0]),
            (std::vector<std::string>{"build/rotor train c.yaml x=2",
                                      "build/rotor eval --text 'a # b'"}));
  EXPECT_EQ(WithWords(BlockCommands(parse.blocks[0])[0], "a=1"),
            "build/rotor train c.yaml x=2 a=1");
  EXPECT_EQ(WithWords(BlockCommands(parse.blocks[0])[1], "a=1"),
            "build/rotor eval --text 'a # b'");
  EXPECT_EQ(WithWords("build/rotor eval x", "train: a=1; eval: --b 2 ;"),
            "build/rotor eval x --b 2");
  EXPECT_EQ(WithWords("build/rotor extend-report r.yaml", "a=1"),
            "build/rotor extend-report r.yaml a=1");
  EXPECT_EQ(WithWords("build/rotor train c.yaml a=200 b=1", "a=4 c=2"),
            "build/rotor train c.yaml a=4 b=1 c=2");
  EXPECT_EQ(WithWords("build/rotor train c.yaml b=1 a=200", "a=4"),
            "build/rotor train c.yaml b=1 a=4");
  EXPECT_EQ(WithWords("build/rotor eval --trials 10 --passkey",
                      "eval: --trials 1 --documents 2 --json"),
            "build/rotor eval --trials 1 --passkey --documents 2 --json");
  // A flag without a value keeps the next flag; a quoted value is one word.
  EXPECT_EQ(WithWords("build/rotor eval --passkey --trials 10",
                      "eval: --passkey 512"),
            "build/rotor eval --passkey --trials 10 --passkey 512");
  EXPECT_EQ(WithWords("build/rotor train c.yaml output_dir='my runs/x' b=1",
                      "output_dir=y"),
            "build/rotor train c.yaml output_dir=y b=1");
  ASSERT_EQ(WithSegments("a=1; eval: --b 2").size(), 2u);
  EXPECT_EQ(WithSegments("a=1; eval: --b 2")[1].subcommands,
            std::vector<std::string>{"eval"});
  EXPECT_EQ(parse.blocks[1].kind, DocBlock::Kind::kOutput);
  EXPECT_EQ(parse.blocks[1].lines, std::vector<std::string>{"printed"});
  EXPECT_EQ(parse.blocks[2].kind, DocBlock::Kind::kRun);
  EXPECT_TRUE(parse.blocks[2].warns);
  EXPECT_EQ(parse.blocks[2].argument, "b=2");
  EXPECT_EQ(parse.blocks[3].kind, DocBlock::Kind::kSkip);
  EXPECT_EQ(parse.blocks[3].argument, "needs a model");
  // The unmarked command block is a problem, named by its line.
  EXPECT_EQ(parse.blocks[4].kind, DocBlock::Kind::kUnmarked);
  ASSERT_EQ(parse.problems.size(), 1u);
  EXPECT_EQ(parse.problems[0],
            "page.md:25: a command block without a doc-test marker above it "
            "(<!-- doc-test: run -->, or <!-- doc-test: skip REASON -->)");
}

TEST(DocBlocks, RefusesWhatWouldSkipOrMisreadABlock) {
  const DocParse parse = ReadDocBlocks("page.md",
                                       "- a list item:\n"
                                       "\n"
                                       "  ```sh\n"
                                       "  build/rotor train c.yaml\n"
                                       "  ```\n"
                                       "<!-- doc-test: run wth a=1 -->\n"
                                       "```sh\n"
                                       "build/rotor eval\n"
                                       "```\n"
                                       "<!-- doc-test: skip later -->\n"
                                       "```sh\n"
                                       "build/rotor eval\n"
                                       "```\n"
                                       "<!-- doc-test: output -->\n"
                                       "```\n"
                                       "printed\n"
                                       "```\n");
  ASSERT_EQ(parse.blocks.size(), 4u);
  EXPECT_EQ(parse.blocks[0].lines,
            std::vector<std::string>{"build/rotor train c.yaml"});
  EXPECT_EQ(parse.problems,
            (std::vector<std::string>{
                "page.md:4: a command block without a doc-test marker above "
                "it (<!-- doc-test: run -->, or <!-- doc-test: skip REASON "
                "-->)",
                "page.md:6: doc-test: run takes no words but `with ...` (got "
                "`wth a=1`)",
                "page.md:16: an output block is a fenced block right after a "
                "run block"}));
}

TEST(DocBlocks, MasksOnlyTimings) {
  EXPECT_EQ(Masked("step 25/150  loss 0.3217  30271 tok/s  ETA 0m08s  \n"
                   "fine-tuned 150 steps in 17.8 s\n\n"),
            "step 25/150  loss 0.3217  N tok/s  ETA N\n"
            "fine-tuned 150 steps in N s\n");
  EXPECT_NE(Masked("loss 0.3217\n"), Masked("loss 0.3218\n"));
  EXPECT_EQ(Masked("loss curve: runs/a/loss.png\n"),
            Masked("no plot runs/a/loss.png: gnuplot is not installed\n"));
  EXPECT_EQ(KernelsLine("model: x\nkernels: a b\nrest\n"), "kernels: a b");
  EXPECT_EQ(KernelsLine("kernels: c\n"), "kernels: c");
  EXPECT_EQ(KernelsLine("none\n"), "");
}

TEST(Docs, ReadmeCommandsRun) { RunPage("README.md"); }
TEST(Docs, LearnCommandsRunAndPrintWhatThePageShows) {
  RunPage("docs/learn.md");
}
TEST(Docs, GgufCommandsRun) { RunPage("docs/gguf.md"); }
TEST(Docs, LoraCommandsRun) { RunPage("docs/lora.md"); }
TEST(Docs, ContextExtensionCommandsRun) {
  RunPage("docs/context-extension.md");
}

}  // namespace
}  // namespace rotor::test
