#include <iostream>

#include "cli/commands.hpp"

namespace p2pnode::cli {

int run_app(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own exit status
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  } catch (const std::exception& e) {
    std::cerr << "p2pnode: " << e.what() << "\n";
    return kUsage;
  }
  return 0;
}

}  // namespace p2pnode::cli
