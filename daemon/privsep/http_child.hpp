#pragma once
// The HTTP process: what `p2pnode-serve http-child` runs, executed by the daemon (spawn.hpp) with
// the listening socket as descriptor 3 and its end of the socketpair as 4. It gives up root, waits
// for its settings (the daemon's first frame: limits and, with TLS, the certificate and key), and
// serves libmicrohttpd; each request goes to the daemon as a frame and its answer comes back the
// same way. It never returns: it exits when the daemon goes (end of stream, or PR_SET_PDEATHSIG).
#include <sys/types.h>

#include <optional>

#include "privsep/drop.hpp"

namespace p2pnode::privsep {

struct ChildStart {
  pid_t parent = 0;                // the daemon: checked again once root is given up
  std::optional<Account> account;  // set (started as root): become it; unset: stay who we are
  bool verbose = false;
};

[[noreturn]] void run_http_child(const ChildStart& start);

}  // namespace p2pnode::privsep
