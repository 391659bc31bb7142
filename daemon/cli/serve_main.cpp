// p2pnode-serve: `p2pnode serve` (the daemon), `p2pnode status` (its client) and `p2pnode selftest`. p2pnode execs
// this program for those two commands; it takes the same arguments.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"p2pnode: GPU peer-to-peer readiness for multi-GPU Linux boxes (daemon and client)", "p2pnode"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(P2PNODE_VERSION));
  p2pnode::cli::register_serve(app);
  p2pnode::cli::register_http_child(app);
  p2pnode::cli::register_status(app);
  p2pnode::cli::register_selftest(app);
  return p2pnode::cli::run_app(app, argc, argv);
}
