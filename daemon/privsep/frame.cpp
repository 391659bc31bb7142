#include "privsep/frame.hpp"

namespace p2pnode::privsep {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) { out.push_back(static_cast<char>((v >> shift) & 0xff)); }
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) { out.push_back(static_cast<char>((v >> shift) & 0xff)); }
}
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

// A count, then each name and value (request headers kept, response headers).
template <typename Pairs>
void put_pairs(std::string& out, const Pairs& pairs) {
  put_u32(out, static_cast<std::uint32_t>(pairs.size()));
  for (const auto& [k, v] : pairs) {
    put_str(out, k);
    put_str(out, v);
  }
}

std::uint64_t get_be(std::string_view s, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) { v = (v << 8) | static_cast<unsigned char>(s[i]); }
  return v;
}

// Reads a payload front to back; the first short read marks it bad and every later read fails.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool u32(std::uint32_t& v) {
    if (!take(4)) { return false; }
    v = static_cast<std::uint32_t>(get_be(s_.substr(pos_ - 4), 4));
    return true;
  }
  bool u64(std::uint64_t& v) {
    if (!take(8)) { return false; }
    v = get_be(s_.substr(pos_ - 8), 8);
    return true;
  }
  bool str(std::string& v) {
    std::uint32_t n = 0;
    if (!u32(n) || !take(n)) { return false; }
    v.assign(s_.substr(pos_ - n, n));
    return true;
  }
  bool count(std::uint32_t& n) { return u32(n) && n <= kMaxFields; }
  bool done() const { return ok_ && pos_ == s_.size(); }

 private:
  bool take(std::size_t n) {
    if (!ok_ || s_.size() - pos_ < n) { return ok_ = false; }
    pos_ += n;
    return true;
  }
  std::string_view s_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

Error malformed_frame(const char* what) { return Error{std::string("malformed ") + what + " frame"}; }
}  // namespace

std::string encode_frame(FrameType type, std::uint64_t id, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeader + 9 + payload.size());
  put_u32(out, static_cast<std::uint32_t>(9 + payload.size()));
  out.push_back(static_cast<char>(type));
  put_u64(out, id);
  out.append(payload);
  return out;
}

std::string encode_request(const http::Request& req) {
  std::string out;
  put_str(out, req.method);
  put_str(out, req.path);
  put_u32(out, static_cast<std::uint32_t>(req.header_count));
  std::vector<std::pair<std::string, std::string>> kept;
  for (const char* name : kForwardedHeaders) {
    if (auto it = req.headers.find(name); it != req.headers.end()) { kept.emplace_back(*it); }
  }
  put_pairs(out, kept);
  put_str(out, req.body);
  return out;
}

Result<http::Request> decode_request(std::string_view payload) {
  Cursor c(payload);
  http::Request r;
  std::uint32_t count = 0, n = 0;
  if (!c.str(r.method) || !c.str(r.path) || !c.u32(count) || !c.count(n)) { return malformed_frame("request"); }
  r.header_count = count;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string k, v;
    if (!c.str(k) || !c.str(v)) { return malformed_frame("request"); }
    r.headers[k] = std::move(v);
  }
  if (!c.str(r.body) || !c.done()) { return malformed_frame("request"); }
  return r;
}

std::string encode_response(const http::Response& resp) {
  std::string out;
  put_u32(out, static_cast<std::uint32_t>(resp.status));
  put_str(out, resp.content_type);
  put_pairs(out, resp.headers);
  put_str(out, resp.body);
  return out;
}

Result<http::Response> decode_response(std::string_view payload) {
  Cursor c(payload);
  http::Response r;
  std::uint32_t status = 0, n = 0;
  if (!c.u32(status) || !c.str(r.content_type) || !c.count(n)) { return malformed_frame("response"); }
  if (status < 100 || status > 599) { return malformed_frame("response"); }
  r.status = static_cast<int>(status);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string k, v;
    if (!c.str(k) || !c.str(v)) { return malformed_frame("response"); }
    r.headers.emplace_back(std::move(k), std::move(v));
  }
  if (!c.str(r.body) || !c.done()) { return malformed_frame("response"); }
  return r;
}

std::string encode_settings(const HttpSettings& s) {
  std::string out;
  put_u32(out, s.threads);
  for (std::uint64_t v : {s.max_body, s.max_connections, s.max_connections_per_client, s.request_timeout_ms,
                          s.idle_timeout_ms, s.max_connection_time_ms}) {
    put_u64(out, v);
  }
  put_str(out, s.tls_chain);
  put_str(out, s.tls_key);
  put_str(out, s.tls_describe);
  return out;
}

Result<HttpSettings> decode_settings(std::string_view payload) {
  Cursor c(payload);
  HttpSettings s;
  if (!c.u32(s.threads) || !c.u64(s.max_body) || !c.u64(s.max_connections) || !c.u64(s.max_connections_per_client) ||
      !c.u64(s.request_timeout_ms) || !c.u64(s.idle_timeout_ms) || !c.u64(s.max_connection_time_ms) ||
      !c.str(s.tls_chain) || !c.str(s.tls_key) || !c.str(s.tls_describe) || !c.done()) {
    return malformed_frame("settings");
  }
  return s;
}

Result<std::optional<Frame>> FrameReader::next() {
  if (buffered() < kFrameHeader) { return std::optional<Frame>(); }
  const std::size_t len = get_be(std::string_view(buf_).substr(pos_), 4);
  if (len < 9 || len > max_frame_) {
    return Error{"frame length " + std::to_string(len) + " is outside 9.." + std::to_string(max_frame_)};
  }
  if (buffered() < kFrameHeader + len) { return std::optional<Frame>(); }
  const std::string_view body = std::string_view(buf_).substr(pos_ + kFrameHeader, len);
  const auto type = static_cast<unsigned char>(body[0]);
  if (type < 1 || type > 3) { return Error{"unknown frame type " + std::to_string(type)}; }
  Frame f{static_cast<FrameType>(type), get_be(body.substr(1), 8), std::string(body.substr(9))};
  pos_ += kFrameHeader + len;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 16) && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

Status FrameReader::finish() const {
  if (buffered() == 0) { return Status::success(); }
  return Error{"the stream ended inside a frame (" + std::to_string(buffered()) + " bytes left)"};
}

}  // namespace p2pnode::privsep
