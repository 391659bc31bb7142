#include "http/connection_reaper.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

namespace p2pnode::http {
namespace {

// The local port of a connected TCP socket, or 0 (not a socket, not TCP/IP, not connected).
int connected_local_port(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof local, pl = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) return 0;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) return 0;  // a listener
  if (local.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  if (local.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
  return 0;
}

std::uint64_t socket_inode(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return static_cast<std::uint64_t>(st.st_ino);
}

}  // namespace

ConnectionReaper::ConnectionReaper(int port, std::chrono::milliseconds max_age) : port_(port), max_age_(max_age) {}

ConnectionReaper::~ConnectionReaper() { stop(); }

void ConnectionReaper::start() {
  thread_ = std::thread([this] {
    std::unique_lock lk(mu_);
    while (!stopping_) {
      cv_.wait(lk, [this] { return stopping_ || active_ > 0; });  // idle: no wake-ups at all
      if (stopping_) break;
      lk.unlock();
      sweep();
      lk.lock();
      cv_.wait_for(lk, std::chrono::seconds(1), [this] { return stopping_; });
    }
  });
}

void ConnectionReaper::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ConnectionReaper::connection_started() {
  {
    std::lock_guard lk(mu_);
    ++active_;
  }
  cv_.notify_all();
}

void ConnectionReaper::connection_finished() {
  std::lock_guard lk(mu_);
  --active_;
}

int ConnectionReaper::sweep() {
  const auto now = std::chrono::steady_clock::now();
  std::set<std::uint64_t> alive;
  int shut = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return 0;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    const std::uint64_t ino = socket_inode(static_cast<int>(fd));
    if (ino == 0 || connected_local_port(static_cast<int>(fd)) != port_) continue;
    alive.insert(ino);
    auto [it, fresh] = seen_.try_emplace(ino, Seen{now});
    // The inode is read again just before: a descriptor closed and reused meanwhile is another socket.
    if (!fresh && !it->second.shut && now - it->second.first > max_age_ && socket_inode(static_cast<int>(fd)) == ino) {
      ::shutdown(static_cast<int>(fd), SHUT_RDWR);
      it->second.shut = true;
      ++shut;
    }
  }
  ::closedir(dir);
  std::erase_if(seen_, [&](const auto& kv) { return !alive.count(kv.first); });
  reaped_ += static_cast<std::uint64_t>(shut);
  return shut;
}

}  // namespace p2pnode::http
