// Where libmicrohttpd 0.9 leaves the pieces of a head it parsed in place (head_layout.hpp), written
// out by hand for each case: the offsets are those of the bytes shown in each comment.
#include "http/head_layout.hpp"

#include <gtest/gtest.h>

namespace p2pnode::http {
namespace {

// "GET /livez HTTP/1.1\r\n" then "Host: 127.0.0.1\r\n" then "\r\n": 0 GET, 4 /livez, 11 HTTP/1.1,
// 21 Host, 27 127.0.0.1, 38 the empty line, 40 the end.
HeadLayout clean_layout() {
  HeadLayout l;
  l.size = 40;
  l.method_size = 3;
  l.target_at = 4;
  l.target_size = 6;
  l.version_at = 11;
  l.version_size = 8;
  l.fields = {{21, 4, 27, 9}};
  return l;
}

TEST(HeadLayout, ACleanHeadTilesExactly) {
  EXPECT_FALSE(refuse_hidden_bytes(clean_layout()));
  HeadLayout bare_lf = clean_layout();  // "...HTTP/1.1\nHost: 127.0.0.1\n\n"
  bare_lf.fields = {{20, 4, 26, 9}};
  bare_lf.size = 37;
  EXPECT_FALSE(refuse_hidden_bytes(bare_lf));
  HeadLayout no_fields = clean_layout();  // "GET /livez HTTP/1.0\r\n\r\n"
  no_fields.fields.clear();
  no_fields.size = 23;
  EXPECT_FALSE(refuse_hidden_bytes(no_fields));
  HeadLayout wide = clean_layout();  // "Host:  \t127.0.0.1\r\n": the OWS lies between name and value
  wide.fields = {{21, 4, 29, 9}};
  wide.size = 42;
  EXPECT_FALSE(refuse_hidden_bytes(wide));
}

TEST(HeadLayout, ANulInsideAValueLeavesAGap) {
  HeadLayout l = clean_layout();  // "Host: 127.0.0.1\0junk\r\n": the value's C string stops at the NUL
  l.size = 45;
  EXPECT_TRUE(refuse_hidden_bytes(l));
  l.fields.push_back({43, 1, 46, 1});  // the same, with "X: y\r\n" after it
  l.size = 51;
  const auto r = refuse_hidden_bytes(l);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->detail.find("NUL"), std::string::npos);
}

TEST(HeadLayout, ANulRightAfterTheColonLeavesAGap) {
  HeadLayout l = clean_layout();  // "Host:\0junk\r\n": an empty value at 26
  l.fields = {{21, 4, 26, 0}};
  l.size = 35;
  EXPECT_TRUE(refuse_hidden_bytes(l));
}

TEST(HeadLayout, ANulInTheRequestLineMovesItsPieces) {
  HeadLayout method = clean_layout();  // "GE\0T /livez ...": the method's C string is "GE"
  method.method_size = 2;
  method.target_at = 5;
  EXPECT_TRUE(refuse_hidden_bytes(method));
  HeadLayout target = clean_layout();  // "GET /li\0vez HTTP/1.1": the target's C string is "/li"
  target.target_size = 3;
  EXPECT_TRUE(refuse_hidden_bytes(target));
  HeadLayout spaces = clean_layout();  // "GET  /livez": two spaces after the method
  spaces.target_at = 5;
  EXPECT_TRUE(refuse_hidden_bytes(spaces));
}

TEST(HeadLayout, AFoldedFieldsNameLiesOutsideTheHead) {
  HeadLayout l = clean_layout();  // "Host: local\r\n host\r\n": the name "Hosthost" was copied elsewhere
  l.fields = {{4096, 8, 27, 5}};
  l.size = 42;
  const auto r = refuse_hidden_bytes(l);
  ASSERT_TRUE(r);
  EXPECT_NE(r->detail.find("obs-fold"), std::string::npos);
  l.fields = {{static_cast<std::size_t>(-64), 8, 27, 5}};  // or before it
  EXPECT_TRUE(refuse_hidden_bytes(l));
}

}  // namespace
}  // namespace p2pnode::http
