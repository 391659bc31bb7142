// p2pnode: makes a multi-GPU box ready for GPU peer-to-peer and keeps it so.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"p2pnode: GPU peer-to-peer readiness for multi-GPU Linux boxes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(P2PNODE_VERSION));
  p2pnode::cli::register_check(app);
  p2pnode::cli::register_profiles(app);
  p2pnode::cli::register_plan_apply(app);
  p2pnode::cli::register_serve(app);
  p2pnode::cli::register_status(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own exit status
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : p2pnode::cli::kUsage;
  } catch (const std::exception& e) {
    std::cerr << "p2pnode: " << e.what() << "\n";
    return p2pnode::cli::kUsage;
  }
  return 0;
}
