#include "privsep/channel.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace p2pnode::privsep {

Status write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) { continue; }
    if (n <= 0) {
      return Error{std::string("writing to the other process: ") + (n < 0 ? std::strerror(errno) : "no progress"),
                   errno};
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::success();
}

Result<std::optional<Frame>> read_frame(int fd, FrameReader& reader) {
  char buf[64 * 1024];
  for (;;) {
    auto f = reader.next();
    if (!f) { return f.error(); }
    if (*f) { return std::move(f).value(); }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) { continue; }
    if (n < 0) { return Error{std::string("reading from the other process: ") + std::strerror(errno), errno}; }
    if (n == 0) {
      if (auto st = reader.finish(); !st) { return st.error(); }
      return std::optional<Frame>();
    }
    reader.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

void set_socket_timeouts(int fd, int send_ms, int receive_ms) {
  const timeval snd{send_ms / 1000, (send_ms % 1000) * 1000};
  const timeval rcv{receive_ms / 1000, (receive_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv);
}

}  // namespace p2pnode::privsep
