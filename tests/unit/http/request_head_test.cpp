// The RFC 9110/9112 rules a request head is held to before it goes on to the daemon.
#include "http/request_head.hpp"

#include <gtest/gtest.h>

namespace p2pnode::http {
namespace {
using namespace std::string_view_literals;

RequestHead head_with(std::vector<HeadField> fields, std::string_view method = "GET",
                      std::string_view version = "HTTP/1.1") {
  return RequestHead{method, "/livez", version, std::move(fields)};
}
const HeadField kHost{"Host", "127.0.0.1:9470"};

// The status of the refusal, or 0 when the head may be routed.
int refused_with(const RequestHead& h) {
  const auto r = refuse_head(h);
  return r ? r->status : 0;
}

TEST(RequestHead, AWellFormedHeadPasses) {
  EXPECT_EQ(refused_with(head_with({kHost, {"Accept", "*/*"}, {"X-Empty", ""}})), 0);
  EXPECT_EQ(refused_with(head_with({kHost, {"User-Agent", "caf\xc3\xa9 \t(obs-text and HTAB are allowed)"}})), 0);
  EXPECT_EQ(refused_with(head_with({kHost}, "M-SEARCH")), 0);
}

TEST(RequestHead, AMethodIsAToken) {
  for (std::string_view m : {"G\xffT", "\xff", "GET\x01", "GE T", "", "GET(", "G\"T"}) {
    EXPECT_EQ(refused_with(head_with({kHost}, m)), 400) << m;
  }
  const auto r = refuse_head(head_with({kHost}, "G\xffT"));
  ASSERT_TRUE(r);
  EXPECT_NE(r->detail.find("not a token"), std::string::npos);
}

TEST(RequestHead, ATargetHasNoSpaceOrControl) {
  RequestHead h = head_with({kHost});
  for (std::string_view t : {"/a b"sv, "/a\tb"sv, "/a\0b"sv, "/a\x7f"sv, ""sv}) {
    h.target = t;
    EXPECT_EQ(refused_with(h), 400) << t;
  }
}

TEST(RequestHead, FieldNamesAreTokensAndValuesHoldNoControl) {
  EXPECT_EQ(refused_with(head_with({kHost, {"X A", "1"}})), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"", "1"}})), 400);
  for (std::string_view v : {"Bearer t\0junk"sv, "a\rb"sv, "a\nb"sv, "\x01"sv, "a\x7f"sv, "\x1b[31m"sv}) {
    EXPECT_EQ(refused_with(head_with({kHost, {"Authorization", v}})), 400) << v;
  }
  EXPECT_TRUE(has_control_character("\0"sv));
  EXPECT_FALSE(has_control_character("a\tb \xff"));
}

TEST(RequestHead, Http11NeedsExactlyOneValidHost) {
  EXPECT_EQ(refused_with(head_with({})), 400);
  EXPECT_EQ(refused_with(head_with({}, "GET", "HTTP/1.0")), 0) << "HTTP/1.0 needs no Host";
  EXPECT_EQ(refused_with(head_with({kHost, {"host", "127.0.0.1"}})), 400) << "two Host fields, even equal";
  EXPECT_EQ(refused_with(head_with({{"Host", "a b"}})), 400);
  EXPECT_EQ(refused_with(head_with({{"Host", "[::1"}})), 400);
  EXPECT_EQ(refused_with(head_with({{"Host", "evil.example"}})), 0) << "well-formed: the daemon answers it 421";
  EXPECT_EQ(refused_with(head_with({{"Host", ""}})), 0) << "empty is well-formed: the daemon answers it 421";
  EXPECT_EQ(refused_with(head_with({{"Host", " \t[::1]:9470\t "}})), 0);
}

TEST(RequestHead, ContentLengthValuesAgree) {
  EXPECT_EQ(refused_with(head_with({kHost, {"Content-Length", "2"}, {"Content-Length", "5"}})), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"Content-Length", "2"}, {"content-length", " 2 "}})), 0);
  for (std::string_view v : {"", "-1", "2, 2", "0x10", "1e3"}) {
    EXPECT_EQ(refused_with(head_with({kHost, {"Content-Length", v}})), 400) << v;
  }
}

TEST(RequestHead, TransferEncodingIsChunkedAloneAndNeverBesideALength) {
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "chunked"}}, "POST")), 0);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "Chunked"}}, "POST")), 0);
  EXPECT_EQ(refused_with(head_with({kHost, {"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}, "POST")), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "chunked"}, {"Content-Length", "5"}}, "POST")), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "gzip"}}, "POST")), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "chunked, gzip"}}, "POST")), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", ""}}, "POST")), 400);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "gzip, chunked"}}, "POST")), 501);
  EXPECT_EQ(refused_with(head_with({kHost, {"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}, "POST")),
            501);
  EXPECT_EQ(refused_with(head_with({{"Transfer-Encoding", "chunked"}}, "POST", "HTTP/1.0")), 400);
}

}  // namespace
}  // namespace p2pnode::http
