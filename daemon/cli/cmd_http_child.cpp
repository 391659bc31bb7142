// `p2pnode-serve http-child`: the HTTP process, as `serve` executes it (privsep/spawn.hpp), with
// the listening socket as descriptor 3 and its end of the socketpair as 4. Hidden from --help:
// started by hand it finds neither and exits.
#include <sys/stat.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "privsep/http_child.hpp"
#include "privsep/spawn.hpp"

namespace p2pnode::cli {
namespace {

struct HttpChildOptions {
  pid_t parent = 0;
  std::string account;
  uid_t uid = 0;
  gid_t gid = 0;
  bool verbose = false;
};

bool is_socket(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

int serve_as_http_child(const HttpChildOptions& o) {
  if (!is_socket(privsep::kChildListenFd) || !is_socket(privsep::kChildChannelFd)) {
    std::cerr << "p2pnode-serve http-child: descriptors 3 and 4 are not sockets: this is the HTTP process "
                 "`p2pnode serve` starts, not a command to run by hand\n";
    return kUsage;
  }
  privsep::ChildStart start{o.parent, std::nullopt, o.verbose};
  if (!o.account.empty()) { start.account = privsep::Account{o.account, o.uid, o.gid, ""}; }
  privsep::run_http_child(start);
}

}  // namespace

void register_http_child(CLI::App& app) {
  auto o = std::make_shared<HttpChildOptions>();
  auto* cmd = app.add_subcommand("http-child", "The daemon's HTTP process (started by serve)");
  cmd->group("");  // hidden
  cmd->add_option("--parent", o->parent, "The daemon's pid")->required();
  auto* account = cmd->add_option("--account", o->account, "The account to become (started as root)");
  cmd->add_option("--uid", o->uid)->needs(account);
  cmd->add_option("--gid", o->gid)->needs(account);
  account->needs(cmd->get_option("--uid"))->needs(cmd->get_option("--gid"));
  cmd->add_flag("--verbose", o->verbose);
  cmd->callback([o] { throw CLI::RuntimeError(serve_as_http_child(*o)); });
}

}  // namespace p2pnode::cli
