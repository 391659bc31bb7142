#include "lifecycle/build_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace p2pnode::lifecycle {

std::string build_lock_path(const std::string& package) { return "/var/lib/p2pnode/dkms/locks/" + package + ".lock"; }

Result<BuildLock> BuildLock::acquire(const sys::SysRoot& root, const std::string& path,
                                     const std::function<void(const std::string&)>& waiting) {
  // p2pnode's own bookkeeping, not a change to the machine: not counted as a write.
  const auto host = root.host_path(path);
  std::error_code ec;
  std::filesystem::create_directories(host.parent_path(), ec);
  if (ec) { return Error{"creating " + host.parent_path().string() + ": " + ec.message(), ec.value()}; }
  const int fd = ::open(host.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) { return Error{"opening " + path + ": " + std::strerror(errno), errno}; }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      const int e = errno;
      ::close(fd);
      return Error{"locking " + path + ": " + std::strerror(e), e};
    }
    std::ifstream in(host);
    std::string holder;
    std::getline(in, holder);
    if (waiting) { waiting(holder.empty() ? "another p2pnode" : holder); }
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) { continue; }
      const int e = errno;
      ::close(fd);
      return Error{"locking " + path + ": " + std::strerror(e), e};
    }
  }
  // Who holds it, for the next one to say whom it waits for (the lock itself is the flock).
  std::ostringstream who;
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  who << "pid " << ::getpid() << ": " << (name.empty() ? "p2pnode" : name) << "\n";
  const std::string text = who.str();
  if (::ftruncate(fd, 0) == 0) { (void)!::pwrite(fd, text.data(), text.size(), 0); }
  return BuildLock(fd);
}

BuildLock::~BuildLock() {
  if (fd_ >= 0) {
    ::close(fd_);  // releases the flock
  }
}

}  // namespace p2pnode::lifecycle
