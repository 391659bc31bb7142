// UTF-8 held to RFC 3629: what the profile reader and every JSON writer rely on.
#include "core/utf8.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace p2pnode;

TEST(Utf8, ValidTextPasses) {
  EXPECT_TRUE(utf8::valid(""));
  EXPECT_TRUE(utf8::valid("plain ascii"));
  EXPECT_TRUE(utf8::valid("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_TRUE(utf8::valid("\xED\x9F\xBF"));                               // U+D7FF, just below the surrogates
  EXPECT_TRUE(utf8::valid("\xF4\x8F\xBF\xBF"));                           // U+10FFFF, the last code point
}

TEST(Utf8, OverlongsSurrogatesAndTooHighAreRefused) {
  EXPECT_EQ(utf8::first_invalid("S\xC0\x80X"), 1u);        // overlong NUL
  EXPECT_EQ(utf8::first_invalid("\xC1\xBF"), 0u);          // overlong DEL
  EXPECT_EQ(utf8::first_invalid("ab\xE0\x80\xAF"), 2u);    // overlong '/'
  EXPECT_EQ(utf8::first_invalid("\xF0\x80\x80\xAF"), 0u);  // overlong '/' in four bytes
  EXPECT_EQ(utf8::first_invalid("\xED\xA0\x80"), 0u);      // U+D800, a surrogate
  EXPECT_EQ(utf8::first_invalid("\xED\xBF\xBF"), 0u);      // U+DFFF
  EXPECT_EQ(utf8::first_invalid("\xF4\x90\x80\x80"), 0u);  // U+110000
  EXPECT_EQ(utf8::first_invalid("\xF5\x80\x80\x80"), 0u);
  EXPECT_EQ(utf8::first_invalid("ok\x80"), 2u);    // a lone continuation byte
  EXPECT_EQ(utf8::first_invalid("\xE2\x82"), 0u);  // cut short
  EXPECT_EQ(utf8::first_invalid("\xFF"), 0u);
}

TEST(Utf8, MakeValidReplacesEachBadByteAndNlohmannAcceptsTheResult) {
  EXPECT_EQ(utf8::make_valid("S\xC0\x80X"), "S\xEF\xBF\xBD\xEF\xBF\xBDX");
  EXPECT_EQ(utf8::make_valid("caf\xC3\xA9"), "caf\xC3\xA9");
  const std::string host = utf8::make_valid("node\xFF\xFE-1");
  EXPECT_TRUE(utf8::valid(host));
  const nlohmann::json fixed{{"hostname", host}}, raw{{"hostname", "node\xFF"}};
  EXPECT_NO_THROW((void)fixed.dump());
  EXPECT_THROW((void)raw.dump(), nlohmann::json::type_error);
}
