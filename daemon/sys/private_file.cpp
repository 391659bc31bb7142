#include "sys/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace p2pnode::sys {
namespace {

struct SecretFd {
  int fd = -1;
  ~SecretFd() {
    if (fd >= 0) { ::close(fd); }
  }
};

// Opens without following a link and checks what was opened; the descriptor in *out.
Status open_owner_only(const std::filesystem::path& path, std::string_view what, SecretFd& out) {
  const std::string name = std::string(what) + " " + path.string();
  out.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (out.fd < 0) {
    if (errno == ELOOP) {
      return Error{name + " is a symbolic link; expected the file itself (a link could be re-pointed)", errno};
    }
    return Error{name + ": " + std::strerror(errno), errno};
  }
  struct stat st {};
  if (::fstat(out.fd, &st) != 0) { return Error{name + ": " + std::strerror(errno), errno}; }
  if (!S_ISREG(st.st_mode)) { return Error{name + " is not a regular file"}; }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return Error{name + " is owned by uid " + std::to_string(st.st_uid) +
                 "; expected root (chown root: " + path.string() + ")"};
  }
  if (st.st_mode & 077) {
    std::ostringstream mode;
    mode << std::oct << (st.st_mode & 0777);
    return Error{name + " is readable by group or others (mode " + mode.str() + "); make it 0600 or 0400"};
  }
  return Status::success();
}

}  // namespace

Status check_owner_only(const std::filesystem::path& path, std::string_view what) {
  SecretFd fd;
  return open_owner_only(path, what, fd);
}

Result<std::string> read_private_file(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes) {
  SecretFd fd;
  if (auto st = open_owner_only(path, what, fd); !st) { return st.error(); }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) { continue; }
    if (n < 0) { return Error{std::string(what) + " " + path.string() + ": " + std::strerror(errno), errno}; }
    if (n == 0) { break; }
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      return Error{std::string(what) + " " + path.string() + " is larger than " + std::to_string(max_bytes) + " bytes"};
    }
  }
  return out;
}

}  // namespace p2pnode::sys
