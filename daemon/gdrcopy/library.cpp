#include "gdrcopy/library.hpp"

namespace p2pnode::gdrcopy {

std::string library_dir(const GdrcopySpec& g) { return std::string(kLibraryRoot) + "/" + g.version; }
std::string library_path(const GdrcopySpec& g) { return library_dir(g) + "/libgdrapi.so.2"; }
std::string library_identity_path(const GdrcopySpec& g) { return library_dir(g) + "/source.sha256"; }

std::optional<std::string> library_work(const GdrcopySpec& g, bool library_exists,
                                        const std::optional<std::string>& built_from) {
  if (!library_exists) { return "libgdrapi " + g.version + " is not built yet"; }
  std::string from = built_from.value_or("");
  while (!from.empty() && (from.back() == '\n' || from.back() == ' ')) { from.pop_back(); }
  if (from.empty()) { return library_path(g) + " has no record of its source (" + library_identity_path(g) + ")"; }
  if (from != g.source.sha256) {
    return "built from another source (sha256 " + from + ", the profile's is " + g.source.sha256 + ")";
  }
  return std::nullopt;
}

}  // namespace p2pnode::gdrcopy
