#pragma once
// The messages between the unprivileged HTTP process and the root daemon, as bytes: pure, no I/O.
// A frame is a 4-byte big-endian length, then that many bytes: a type byte, an 8-byte request id
// and the payload. Strings inside a payload are length-prefixed the same way. Every length is
// checked against what is left and against a bound before anything is allocated, so a frame that
// is truncated, oversized or garbage is an error, never a guess.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "http/router.hpp"

namespace p2pnode::privsep {

enum class FrameType : std::uint8_t {
  request = 1,   // HTTP process -> daemon: one HTTP request
  response = 2,  // daemon -> HTTP process: the answer to the request of the same id
  settings = 3,  // daemon -> HTTP process: new limits and certificate (SIGHUP)
};

struct Frame {
  FrameType type = FrameType::request;
  std::uint64_t id = 0;
  std::string payload;
};

// Bounds: a request carries at most http.max_body (16 MiB at most) and a head libmicrohttpd
// already limited to 32 KiB; a response is the daemon's own, bounded all the same.
inline constexpr std::size_t kFrameHeader = 4;
inline constexpr std::size_t kMaxRequestFrame = (16u << 20) + (64u << 10);
inline constexpr std::size_t kMaxResponseFrame = 64u << 20;
inline constexpr std::size_t kMaxFields = 256;  // header fields in a request or response

// What the HTTP process sends of a request: the fields the routes read, nothing else.
inline constexpr const char* kForwardedHeaders[] = {"host", "authorization", "accept"};

// New settings for the HTTP process: the limits it enforces and, with TLS, the certificate chain
// and key (PEM) with the line that describes them for the log.
struct HttpSettings {
  std::uint32_t threads = 2;
  std::uint64_t max_body = 64 * 1024;
  std::uint64_t max_connections = 256;
  std::uint64_t max_connections_per_client = 32;
  std::uint64_t request_timeout_ms = 5000;
  std::uint64_t idle_timeout_ms = 10000;
  std::uint64_t max_connection_time_ms = 60000;
  std::string tls_chain;  // empty: no new certificate
  std::string tls_key;
  std::string tls_describe;
};

std::string encode_frame(FrameType type, std::uint64_t id, std::string_view payload);
std::string encode_request(const http::Request& req);
std::string encode_response(const http::Response& resp);
std::string encode_settings(const HttpSettings& s);
Result<http::Request> decode_request(std::string_view payload);
Result<http::Response> decode_response(std::string_view payload);
Result<HttpSettings> decode_settings(std::string_view payload);

// Splits a byte stream into frames. feed() what was read, then next() until it yields nothing.
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_frame) : max_frame_(max_frame) {}
  void feed(std::string_view bytes) { buf_.append(bytes); }
  // A complete frame, nothing yet (std::nullopt), or an error (a length over the bound or too
  // short for the type and id, an unknown type): the stream cannot be trusted after an error.
  Result<std::optional<Frame>> next();
  // At end of stream: an error when a frame was cut short.
  Status finish() const;
  std::size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::size_t max_frame_;
  std::string buf_;
  std::size_t pos_ = 0;
};

}  // namespace p2pnode::privsep
