#pragma once
// libgdrapi, gdrcopy's user-space library, built by p2pnode from the profile's gdrcopy source (the
// same verified release gdrdrv is built from) into a directory of its own, which the self-test
// agent opens (--gdrapi): the library and the module then always come from one release, and a
// gdrcopy package's libgdrapi elsewhere on the node is neither replaced nor shadowed (the
// directory is p2pnode's state, not on the linker's path; purging the package removes it). Pure:
// what is needed; actions/gdrcopy_library.cpp builds it.
#include <optional>
#include <string>

#include "core/profile.hpp"

namespace p2pnode::gdrcopy {

inline constexpr const char* kLibraryRoot = "/var/lib/p2pnode/gdrcopy";

std::string library_dir(const GdrcopySpec& g);            // /var/lib/p2pnode/gdrcopy/2.6
std::string library_path(const GdrcopySpec& g);           // …/libgdrapi.so.2, what the agent opens
std::string library_identity_path(const GdrcopySpec& g);  // …/source.sha256: the source it was built from

// Why libgdrapi must be built ("not built yet", "built from another source (…)"), or nullopt when
// the one there was built from the profile's source.
std::optional<std::string> library_work(const GdrcopySpec& g, bool library_exists,
                                        const std::optional<std::string>& built_from);

}  // namespace p2pnode::gdrcopy
