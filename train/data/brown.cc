#include "train/data/brown.h"

#include <cctype>
#include <utility>

#include "core/error.h"

namespace rotor::train {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Words written without a space before them.
bool AttachesToPrevious(std::string_view word) {
  static constexpr std::string_view kPunctuation[] = {",", ".", ";", ":", "?",
                                                      "!", ")", "]", "}", "%"};
  for (std::string_view p : kPunctuation) {
    if (word == p) return true;
  }
  static constexpr std::string_view kClitics[] = {"n't", "'s", "'re", "'ve",
                                                  "'ll", "'d", "'m"};
  for (std::string_view clitic : kClitics) {
    if (EqualsIgnoreCase(word, clitic)) return true;
  }
  return false;
}

// Words written without a space after them.
bool AttachesToNext(std::string_view word) {
  return word == "(" || word == "[" || word == "{";
}

// Marks that the corpus sometimes writes twice in a row by mistake.
bool IsRepeatableMark(std::string_view word) {
  return word == ";" || word == "?" || word == "!" || word == "," ||
         word == ":" || word == "(" || word == ")";
}

std::vector<std::string_view> SplitWhitespace(std::string_view line) {
  std::vector<std::string_view> pieces;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() &&
           std::isspace(static_cast<unsigned char>(line[i]))) {
      ++i;
    }
    const size_t start = i;
    while (i < line.size() &&
           !std::isspace(static_cast<unsigned char>(line[i]))) {
      ++i;
    }
    if (i > start) pieces.push_back(line.substr(start, i - start));
  }
  return pieces;
}

// The corpus puts punctuation after a closing double quote (`` Why '' ?).
// As printed in American English, . , ? ! go inside the quote ("Why?"); a
// semicolon stays outside.
void MoveMarksInsideQuotes(std::vector<std::string_view>& paragraph) {
  std::vector<std::string_view> words;
  words.reserve(paragraph.size());
  for (size_t i = 0; i < paragraph.size(); ++i) {
    const std::string_view mark =
        i + 1 < paragraph.size() ? paragraph[i + 1] : std::string_view();
    if (paragraph[i] == "''" &&
        (mark == "," || mark == "." || mark == "?" || mark == "!")) {
      words.push_back(mark);
      words.push_back("''");
      ++i;
    } else {
      words.push_back(paragraph[i]);
    }
  }
  paragraph.swap(words);
}

}  // namespace

std::string JoinWords(const std::vector<std::string_view>& words) {
  std::string text;
  bool double_open = false;
  bool single_open = false;
  bool glue_next = true;  // no space before the first word
  for (std::string_view word : words) {
    std::string_view written = word;
    bool attach_left = AttachesToPrevious(word);
    bool attach_right = AttachesToNext(word);
    // Quotes: decide opening (attach to the next word) or closing (attach to
    // the previous word), then write the straight form.
    bool* open_state = nullptr;
    bool opening = false;
    if (word == "``") {
      open_state = &double_open, opening = true, written = "\"";
    } else if (word == "''") {
      open_state = &double_open, opening = false, written = "\"";
    } else if (word == "\"") {
      open_state = &double_open, opening = !double_open;
    } else if (word == "`") {
      open_state = &single_open, opening = true, written = "'";
    } else if (word == "'") {
      open_state = &single_open, opening = !single_open;
    }
    if (open_state != nullptr) {
      *open_state = opening;
      attach_left = !opening;
      attach_right = opening;
    }
    if (!glue_next && !attach_left) text += ' ';
    text.append(written.data(), written.size());
    glue_next = attach_right;
  }
  return text;
}

std::string BrownToText(std::string_view tagged, std::string_view source) {
  std::string text;
  std::vector<std::string_view> paragraph;
  const auto flush_paragraph = [&]() {
    if (paragraph.empty()) return;
    MoveMarksInsideQuotes(paragraph);
    if (!text.empty()) text += "\n\n";
    text += JoinWords(paragraph);
    paragraph.clear();
  };

  // A headline line waits here until the next line shows whether it is a
  // dateline (the story then starts with "--") or a paragraph of its own.
  std::vector<std::string_view> headline_words;
  const auto flush_headline = [&]() {
    if (headline_words.empty()) return;
    flush_paragraph();
    paragraph.swap(headline_words);
    headline_words.clear();
    flush_paragraph();
  };

  size_t line_start = 0;
  size_t line_number = 0;
  while (line_start < tagged.size()) {
    size_t line_end = tagged.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = tagged.size();
    const std::string_view line =
        tagged.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_number;

    const std::vector<std::string_view> tokens = SplitWhitespace(line);
    if (tokens.empty()) {  // blank line: paragraph break
      flush_paragraph();
      continue;
    }
    std::vector<std::string_view> words;
    bool headline = true;
    for (std::string_view token : tokens) {
      const size_t slash = token.rfind('/');
      ROTOR_CHECK(slash != std::string_view::npos && slash > 0 &&
                      slash + 1 < token.size(),
                  source, ": line ", line_number, ": token '", token,
                  "' is not word/tag - is this a tagged Brown corpus file? "
                  "(use --format text for plain text)");
      const std::string_view word = token.substr(0, slash);
      const std::string_view tag = token.substr(slash + 1);
      if (tag.find("-hl") == std::string_view::npos) headline = false;
      // "Jr. ." -> "Jr.": the abbreviation's period ends the sentence.
      const std::string_view previous =
          words.empty()
              ? (paragraph.empty() ? std::string_view() : paragraph.back())
              : words.back();
      if (word == "." && previous.size() > 1 && previous.back() == '.') {
        continue;
      }
      // The corpus often doubles a mark (why ? ?, fast ; ;, ( ( Bill ):
      // keep one.
      if (previous == word && IsRepeatableMark(word)) continue;
      words.push_back(word);
    }
    if (words.empty()) continue;
    if (headline) {
      // Held back: a dateline joins the story that follows it.
      flush_paragraph();
      flush_headline();
      headline_words = std::move(words);
      continue;
    }
    if (!headline_words.empty() && paragraph.empty() && words[0] == "--") {
      paragraph.swap(headline_words);  // "Austin, Texas -- After a ..."
    }
    flush_headline();
    paragraph.insert(paragraph.end(), words.begin(), words.end());
  }
  flush_paragraph();
  flush_headline();
  if (!text.empty()) text += '\n';
  return text;
}

bool IsBrownDocumentName(std::string_view file_name) {
  return file_name.size() == 4 && file_name[0] == 'c' && file_name[1] >= 'a' &&
         file_name[1] <= 'r' &&
         std::isdigit(static_cast<unsigned char>(file_name[2])) &&
         std::isdigit(static_cast<unsigned char>(file_name[3]));
}

}  // namespace rotor::train
