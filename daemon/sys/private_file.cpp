#include "sys/private_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace p2pnode::sys {

Status check_owner_only(const std::filesystem::path& path, std::string_view what) {
  const std::string name = std::string(what) + " " + path.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error{name + ": " + std::strerror(errno), errno};
  if (!S_ISREG(st.st_mode)) return Error{name + " is not a regular file"};
  if (st.st_mode & 077) {
    std::ostringstream mode;
    mode << std::oct << (st.st_mode & 0777);
    return Error{name + " is readable by group or others (mode " + mode.str() + "); make it 0600 or 0400"};
  }
  return Status::success();
}

}  // namespace p2pnode::sys
