#pragma once
// The HTTP process: what runs in the child that http_process.hpp forks. It keeps the listening
// socket and its end of the socketpair (every other descriptor is closed), gives up root, and
// serves libmicrohttpd; each request goes to the daemon as a frame and its answer comes back the
// same way. It never returns: it exits when the daemon goes (end of stream, or PR_SET_PDEATHSIG).
#include <sys/types.h>

#include <optional>

#include "http/server.hpp"
#include "privsep/drop.hpp"

namespace p2pnode::privsep {

struct ChildStart {
  int listen_fd = -1;
  int channel_fd = -1;
  pid_t parent = 0;
  http::ServerOptions options;     // its `log` is replaced: the child logs to stderr only
  std::optional<Account> account;  // set (started as root): become it; unset: stay who we are
  bool verbose = false;
};

[[noreturn]] void run_http_child(ChildStart start);

}  // namespace p2pnode::privsep
