// Brown corpus cleanup on small snippets with exact expected text.
#include "train/data/brown.h"

#include <gtest/gtest.h>

#include "tests/temp_dir.h"
#include "tests/test_util.h"

namespace rotor::train {
namespace {

TEST(JoinWords, EnglishSpacingAroundPunctuation) {
  EXPECT_EQ(JoinWords({"Hello", ",", "world", "!", "Why", "?", "Yes", ";", "no",
                       ":", "maybe", "."}),
            "Hello, world! Why? Yes; no: maybe.");
  EXPECT_EQ(JoinWords({"a", "(", "b", ")", "c", "[", "d", "]", "50", "%"}),
            "a (b) c [d] 50%");
  EXPECT_EQ(JoinWords({"do", "n't", "it", "'s", "we", "'re", "I", "'M", "you",
                       "'ll", "they", "'ve", "he", "'d"}),
            "don't it's we're I'M you'll they've he'd");
  EXPECT_EQ(JoinWords({"one", "--", "two"}), "one -- two");
  EXPECT_EQ(JoinWords({"'em", "and", "'61"}), "'em and '61");
  EXPECT_EQ(JoinWords({}), "");
}

TEST(JoinWords, QuotesAttachInward) {
  EXPECT_EQ(JoinWords({"He", "said", ",", "``", "Go", "''", "."}),
            "He said, \"Go\".");
  EXPECT_EQ(JoinWords({"``", "X", "''"}), "\"X\"");
  EXPECT_EQ(JoinWords({"(", "``", "a", "''", ")"}), "(\"a\")");
  EXPECT_EQ(JoinWords({"`", "hi", "'", "she", "said"}), "'hi' she said");
  // A lone ' opens when no single quote is open, closes otherwise.
  EXPECT_EQ(JoinWords({"as", "'", "father", "of", "'", "all"}),
            "as 'father of' all");
  EXPECT_EQ(JoinWords({"``", "He", "said", "'", "no", "'", "''"}),
            "\"He said 'no'\"");
  EXPECT_EQ(JoinWords({"\"", "a", "\"", "b"}), "\"a\" b");
}

TEST(BrownToText, StripsTagsJoinsSentencesAndKeepsParagraphs) {
  const std::string tagged =
      "\n\n\tThe/at jury/nn said/vbd ,/, ``/`` it/pps 's/bez done/vbn ''/'' "
      "./.\n"
      "It/pps ended/vbd ./.\n"
      "\n\n"
      "\tNew/jj paragraph/nn 1/2/cd in/in Atlanta's/np$ city/nn ./.\n";
  EXPECT_EQ(BrownToText(tagged, "ca01"),
            "The jury said, \"it's done.\" It ended.\n\n"
            "New paragraph 1/2 in Atlanta's city.\n");
}

TEST(BrownToText, HeadlinesAreParagraphsAndAbbreviationPeriodsMerge) {
  const std::string tagged =
      "\tHe/pps met/vbd Ivan/np Allen/np Jr./np ./.\n"
      "Merger/nn-hl proposed/vbn-hl \n"
      "However/wrb ,/, it/pps failed/vbd ./.\n";
  EXPECT_EQ(BrownToText(tagged, "ca01"),
            "He met Ivan Allen Jr.\n\nMerger proposed\n\n"
            "However, it failed.\n");
  EXPECT_EQ(BrownToText("Austin/np-hl ,/,-hl Texas/np-hl \n\n"
                        "--/-- A/at bill/nn passed/vbd ./.\n"
                        "Title/nn-hl \nEnd/nn-hl \n",
                        "ca02"),
            "Austin, Texas -- A bill passed.\n\nTitle\n\nEnd\n");
}

TEST(BrownToText, PunctuationAfterAClosingQuoteMovesInsideOnce) {
  EXPECT_EQ(BrownToText("\t``/`` Why/wrb ''/'' ?/. ?/. ``/`` No/rb ''/'' !/. "
                        "!/.\n",
                        "x"),
            "\"Why?\" \"No!\"\n");
  EXPECT_EQ(BrownToText("\tHe/pps said/vbd ``/`` no/rb ''/'' ;/. ``/`` Yes/rb "
                        "''/'' ?/.\n",
                        "x"),
            "He said \"no\"; \"Yes?\"\n");
  EXPECT_EQ(BrownToText("\tWhy/wrb ?/. ?/.\nStop/vb !/. !/.\nSo/rb ;/. ;/.\n"
                        "Ann/np (/( (/( Bo/np )/) ,/, ,/, me/ppo ./.\n",
                        "x"),
            "Why? Stop! So; Ann (Bo), me.\n");
}

TEST(BrownToText, EmptyFileGivesEmptyText) {
  EXPECT_EQ(BrownToText("", "x"), "");
  EXPECT_EQ(BrownToText("\n\n  \t\n", "x"), "");
}

TEST(BrownToText, RejectsTextThatIsNotTagged) {
  ROTOR_EXPECT_ERROR(BrownToText("\tThe/at\nBROWN CORPUS\n", "data/README"),
                     "data/README", "line 2", "'BROWN'", "--format text");
  ROTOR_EXPECT_ERROR(BrownToText("word/\n", "f"), "'word/'");
  ROTOR_EXPECT_ERROR(BrownToText("/tag\n", "f"), "'/tag'");
}

TEST(IsBrownDocumentName, OnlyCorpusFiles) {
  EXPECT_TRUE(IsBrownDocumentName("ca01"));
  EXPECT_TRUE(IsBrownDocumentName("cr09"));
  EXPECT_FALSE(IsBrownDocumentName("cs01"));
  EXPECT_FALSE(IsBrownDocumentName("CONTENTS"));
  EXPECT_FALSE(IsBrownDocumentName("cats.txt"));
  EXPECT_FALSE(IsBrownDocumentName("ca1"));
  EXPECT_FALSE(IsBrownDocumentName("ca01.txt"));
}

}  // namespace
}  // namespace rotor::train
