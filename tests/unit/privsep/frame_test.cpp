// The frames between the HTTP process and the daemon: round trips, and every way a stream can be
// wrong (cut short, oversized, garbage) is an error, never a frame.
#include "privsep/frame.hpp"

#include <gtest/gtest.h>

#include <random>

namespace p2pnode::privsep {
namespace {

http::Request sample_request() {
  http::Request r;
  r.method = "POST";
  r.path = "/v1/selftest";
  r.headers = {{"host", "127.0.0.1:9470"},
               {"authorization", "Bearer 0123456789abcdef"},
               {"accept", "*/*"},
               {"cookie", "not forwarded"}};
  r.header_count = 5;
  r.body = std::string("{\"force\": true}\0x", 17);
  return r;
}

// Feeds `bytes` in pieces of `step` and collects the frames.
std::vector<Frame> split(const std::string& bytes, std::size_t step, std::size_t max = kMaxRequestFrame) {
  FrameReader reader(max);
  std::vector<Frame> out;
  for (std::size_t i = 0; i < bytes.size(); i += step) {
    reader.feed(std::string_view(bytes).substr(i, step));
    for (;;) {
      auto f = reader.next();
      EXPECT_TRUE(f.ok()) << f.error().message;
      if (!f || !*f) { break; }
      out.push_back(**f);
    }
  }
  EXPECT_TRUE(reader.finish().ok());
  return out;
}

TEST(PrivsepFrame, RequestRoundTripKeepsOnlyWhatTheRoutesRead) {
  const std::string bytes = encode_frame(FrameType::request, 42, encode_request(sample_request()));
  const auto frames = split(bytes, 3);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].type, FrameType::request);
  EXPECT_EQ(frames[0].id, 42u);
  auto r = decode_request(frames[0].payload);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->method, "POST");
  EXPECT_EQ(r->path, "/v1/selftest");
  EXPECT_EQ(r->header_count, 5u);
  EXPECT_EQ(r->body, sample_request().body);
  EXPECT_EQ(r->headers.size(), 3u);
  EXPECT_EQ(r->headers.at("authorization"), "Bearer 0123456789abcdef");
  EXPECT_EQ(r->headers.count("cookie"), 0u);
}

TEST(PrivsepFrame, ResponseAndSettingsRoundTrip) {
  http::Response resp{401, "application/problem+json", "{}", {{"WWW-Authenticate", "Bearer realm=\"p2pnode\""}}};
  auto r = decode_response(encode_response(resp));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->content_type, resp.content_type);
  EXPECT_EQ(r->headers, resp.headers);
  HttpSettings s;
  s.threads = 4;
  s.max_body = 4096;
  s.request_timeout_ms = 1500;
  s.tls_chain = "-----BEGIN CERTIFICATE-----";
  s.tls_key = "key";
  s.tls_describe = "subject CN=x";
  auto d = decode_settings(encode_settings(s));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->threads, 4u);
  EXPECT_EQ(d->max_body, 4096u);
  EXPECT_EQ(d->request_timeout_ms, 1500u);
  EXPECT_EQ(d->tls_key, "key");
  EXPECT_EQ(d->tls_describe, "subject CN=x");
}

TEST(PrivsepFrame, SeveralFramesInOneRead) {
  std::string bytes;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    bytes += encode_frame(FrameType::response, id, encode_response({200, "text/plain", "x", {}}));
  }
  const auto frames = split(bytes, bytes.size());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[2].id, 3u);
}

TEST(PrivsepFrame, TruncatedStreamIsAnError) {
  const std::string bytes = encode_frame(FrameType::request, 1, encode_request(sample_request()));
  for (std::size_t cut : {std::size_t{1}, std::size_t{4}, std::size_t{12}, bytes.size() - 1}) {
    FrameReader reader(kMaxRequestFrame);
    reader.feed(std::string_view(bytes).substr(0, cut));
    auto f = reader.next();
    ASSERT_TRUE(f.ok());
    EXPECT_FALSE(*f) << "cut at " << cut;
    EXPECT_FALSE(reader.finish().ok()) << "cut at " << cut;
  }
}

TEST(PrivsepFrame, TruncatedPayloadsAreErrors) {
  const std::string req = encode_request(sample_request());
  for (std::size_t cut = 0; cut < req.size(); ++cut) {
    EXPECT_FALSE(decode_request(std::string_view(req).substr(0, cut)).ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(decode_request(req + "x").ok());  // trailing bytes
  const std::string resp = encode_response({200, "text/plain", "body", {{"A", "b"}}});
  for (std::size_t cut = 0; cut < resp.size(); ++cut) {
    EXPECT_FALSE(decode_response(std::string_view(resp).substr(0, cut)).ok()) << "cut at " << cut;
  }
  const std::string set = encode_settings(HttpSettings{});
  for (std::size_t cut = 0; cut < set.size(); ++cut) {
    EXPECT_FALSE(decode_settings(std::string_view(set).substr(0, cut)).ok()) << "cut at " << cut;
  }
}

TEST(PrivsepFrame, OversizedLengthIsRefusedBeforeTheBodyArrives) {
  FrameReader reader(1024);
  reader.feed(std::string("\x00\x00\x04\x01", 4));  // 1025
  EXPECT_FALSE(reader.next().ok());
  FrameReader huge(kMaxRequestFrame);
  huge.feed(std::string("\xff\xff\xff\xff", 4));
  EXPECT_FALSE(huge.next().ok());
  FrameReader small(kMaxRequestFrame);
  small.feed(std::string("\x00\x00\x00\x08", 4));  // shorter than a type and an id
  EXPECT_FALSE(small.next().ok());
}

TEST(PrivsepFrame, GarbageIsAnError) {
  FrameReader reader(kMaxRequestFrame);
  reader.feed(std::string("\x00\x00\x00\x09\x07", 5) + std::string(8, '\0'));  // unknown type 7
  EXPECT_FALSE(reader.next().ok());
  // A field count beyond the bound, a string length beyond the payload, a status out of range.
  std::string many;
  for (char c : std::string("\x00\x00\x00\x03GET\x00\x00\x00\x01/\x00\x00\x00\x00\xff\xff\xff\xff", 20)) {
    many.push_back(c);
  }
  EXPECT_FALSE(decode_request(many).ok());
  EXPECT_FALSE(decode_request(std::string("\x7f\xff\xff\xffGET", 7)).ok());
  EXPECT_FALSE(decode_response(encode_response({9999, "", "", {}})).ok());
  // Random bytes never decode into anything that throws or crashes.
  std::mt19937 rng(44);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) { c = static_cast<char>(rng()); }
    (void)decode_request(junk);
    (void)decode_response(junk);
    (void)decode_settings(junk);
    FrameReader r(4096);
    r.feed(junk);
    for (int n = 0; n < 8; ++n) {
      auto f = r.next();
      if (!f || !*f) { break; }
    }
  }
}

}  // namespace
}  // namespace p2pnode::privsep
