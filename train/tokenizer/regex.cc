#include "train/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// A thread's PCRE2 scratch space, shared by every pattern: the match data
// (only the whole match is read, so one pair of offsets suffices) and a JIT
// stack large enough for long runs of whitespace or letters.
class MatchScratch {
 public:
  MatchScratch()
      : data_(pcre2_match_data_create(1, nullptr)),
        context_(pcre2_match_context_create(nullptr)),
        stack_(pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, nullptr)) {
    ROTOR_CHECK(data_ != nullptr && context_ != nullptr && stack_ != nullptr,
                "out of memory for the regex match data");
    pcre2_jit_stack_assign(context_, nullptr, stack_);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(stack_);
    pcre2_match_context_free(context_);
    pcre2_match_data_free(data_);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  pcre2_match_data* data() const { return data_; }
  pcre2_match_context* context() const { return context_; }

  // This thread's scratch.
  static MatchScratch& ForThread() {
    thread_local MatchScratch scratch;
    return scratch;
  }

 private:
  pcre2_match_data* data_;
  pcre2_match_context* context_;
  pcre2_jit_stack* stack_;
};

// PCRE2's message for an error code.
std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern, bool literal)
    : pattern_(pattern), compiled_(std::make_unique<Compiled>()) {
  // (PCRE2 refuses PCRE2_UCP with PCRE2_LITERAL, where it means nothing.)
  const uint32_t options =
      PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  ROTOR_CHECK(unicode::IsValidUtf8(pattern), "the pattern is not valid UTF-8");
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                    pattern.size(), options, &error, &offset, nullptr);
  ROTOR_CHECK(compiled_->code != nullptr, "invalid regex at offset ", offset,
              ": ", Pcre2Message(error));
  // Without JIT (e.g. a CPU PCRE2 does not support), the interpreter gives
  // the same matches, only slower.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;

void Regex::FindAll(std::string_view subject, std::vector<Match>& out) const {
  MatchScratch& scratch = MatchScratch::ForThread();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  while (start <= subject.size()) {
    const int rc =
        pcre2_match(compiled_->code, data, subject.size(), start,
                    PCRE2_NO_UTF_CHECK, scratch.data(), scratch.context());
    if (rc == PCRE2_ERROR_NOMATCH) return;
    // rc == 0: more groups than offset pairs; the whole match is still set.
    ROTOR_CHECK(rc >= 0, "regex /", pattern_, "/ failed: ", Pcre2Message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(scratch.data());
    const Match match{ovector[0], ovector[1]};
    out.push_back(match);
    if (match.end > match.start) {
      start = match.end;
    } else if (match.end < subject.size()) {
      start = match.end + unicode::Utf8Length(
                              static_cast<unsigned char>(subject[match.end]));
    } else {
      return;
    }
  }
}

}  // namespace rotor::train
