#pragma once
// One build of a module package at a time. The kernel hook's `apply --only driver.module`, an
// operator's apply and the daemon's reconcile can start together; DKMS keeps one build/ directory
// per package (and p2pnode one staging and core scratch directory), so a second build of the same
// package waits for the first and then finds its work done. flock(2) on
// /var/lib/p2pnode/dkms/locks/<name>-<version>.lock (in-root): released when the holder's descriptor
// closes, also when the process dies. Different packages do not wait for each other.
#include <functional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

// /var/lib/p2pnode/dkms/locks/<package>.lock
std::string build_lock_path(const std::string& package);

class BuildLock {
 public:
  // Blocks until this process holds the lock. When another one holds it, `waiting` is called once
  // first with what the holder wrote ("pid 4242: p2pnode apply").
  static Result<BuildLock> acquire(const sys::SysRoot& root, const std::string& path,
                                   const std::function<void(const std::string&)>& waiting);
  BuildLock(BuildLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  BuildLock& operator=(BuildLock&&) = delete;
  BuildLock(const BuildLock&) = delete;
  ~BuildLock();

 private:
  explicit BuildLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace p2pnode::lifecycle
