// The Markdown that rotor writes (report.md), as HTML, for pages that must
// be one self-contained file (report.html of rotor extend-report). Handles
// exactly the subset rotor's writers use:
//   #, ## and ### headings; paragraphs; pipe tables whose second row is the
//   |---|---:| separator (":" on the right aligns the column right);
//   "- " list items and "  - " items nested one level;
//   inline **bold**, `code`, [text](link) and ![alt](file.png).
// An image becomes an empty <div data-rx-plot="file"> (its name without
// the extension), a slot the page's script draws that plot into, since a
// single file cannot refer to the PNGs beside report.md. Text is escaped.
#ifndef ROTOR_TRAIN_IO_MARKDOWN_HTML_H_
#define ROTOR_TRAIN_IO_MARKDOWN_HTML_H_

#include <string>

namespace rotor::train {

// "&", "<", ">" and '"' as entities.
std::string EscapeHtml(const std::string& text);

std::string MarkdownToHtml(const std::string& markdown);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_MARKDOWN_HTML_H_
