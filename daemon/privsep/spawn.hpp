#pragma once
// Starting the HTTP process: fork, then exec of this same program (/proc/self/exe, so a package
// upgrade under a running daemon cannot pair it with another version) with the listening socket as
// descriptor 3 and its end of the socketpair as 4, every other descriptor above 2 closed, no signal
// blocked, PR_SET_PDEATHSIG set, and systemd's variables (NOTIFY_SOCKET, WATCHDOG_*, LISTEN_*) out
// of its environment. Between fork and exec only async-signal-safe calls run: the daemon has
// threads, and its copy in the child has one, holding whatever locks the others held.
#include <sys/types.h>

#include <string>
#include <vector>

#include "core/result.hpp"

namespace p2pnode::privsep {

inline constexpr int kChildListenFd = 3;
inline constexpr int kChildChannelFd = 4;

// The child's pid. `args` follow argv[0] (`http-child --parent …`). The descriptors stay open here.
Result<pid_t> spawn_http_child(int listen_fd, int channel_fd, const std::vector<std::string>& args);

}  // namespace p2pnode::privsep
