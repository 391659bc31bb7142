// p2pnode: makes a multi-GPU box ready for GPU peer-to-peer and keeps it so.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/delegate.hpp"

int main(int argc, char** argv) {
  // The daemon and its client are p2pnode-serve; hand those over before parsing anything.
  if (argc > 1 && (std::string_view(argv[1]) == "serve" || std::string_view(argv[1]) == "status" ||
                   std::string_view(argv[1]) == "selftest")) {
    return p2pnode::cli::exec_serve_binary(argv);
  }

  CLI::App app{"p2pnode: GPU peer-to-peer readiness for multi-GPU Linux boxes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(P2PNODE_VERSION));
  p2pnode::cli::register_check(app);
  p2pnode::cli::register_profiles(app);
  p2pnode::cli::register_plan_apply(app);
  p2pnode::cli::register_judge_kernel(app);
  // Listed in --help; run by p2pnode-serve (see above).
  app.add_subcommand("serve",
                     "Run the daemon: reconcile, self-tests, REST API and /metrics (see `p2pnode serve --help`)");
  app.add_subcommand("status", "Ask the running daemon and print its report (see `p2pnode status --help`)");
  app.add_subcommand("selftest",
                     "Judge recorded self-test results as the daemon would, or ask the daemon for one (see `p2pnode "
                     "selftest judge|run --help`)");
  return p2pnode::cli::run_app(app, argc, argv);
}
