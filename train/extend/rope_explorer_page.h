// The RoPE explorer's CSS and JavaScript (rope_explorer_page.cc), which
// rope_explorer.cc wraps around the data it embeds.
#ifndef ROTOR_TRAIN_EXTEND_ROPE_EXPLORER_PAGE_H_
#define ROTOR_TRAIN_EXTEND_ROPE_EXPLORER_PAGE_H_

namespace rotor::train {

extern const char kRopeExplorerStyle[];
extern const char kRopeExplorerScript[];

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EXTEND_ROPE_EXPLORER_PAGE_H_
