#pragma once
// A lifetime limit for API connections. httplib 0.11 gives a connection's worker no deadline: a
// client that sends a byte every few seconds (each read inside the read timeout) holds one of the
// fixed workers for as long as it likes. Once a second the reaper lists this process's TCP sockets
// whose local port is the API's (/proc/self/fd, getsockname) and shuts down those accepted more
// than max_age ago; the worker's next read fails and httplib closes the socket as usual.
// Legitimate clients are unaffected: keep-alive connections close after 2 s idle or 100 requests.
// It sleeps while no worker holds a connection (the pool calls connection_started/finished), so an
// idle daemon wakes for nothing.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace p2pnode::http {

class ConnectionReaper {
 public:
  ConnectionReaper(int port, std::chrono::milliseconds max_age);
  ~ConnectionReaper();
  void start();
  void stop();
  // One pass (the thread calls it every second; tests call it directly). Returns how many
  // connections it shut down.
  int sweep();
  std::uint64_t reaped() const { return reaped_; }
  void connection_started();   // a worker took a connection
  void connection_finished();  // and closed it

 private:
  int port_;
  std::chrono::milliseconds max_age_;
  struct Seen {
    std::chrono::steady_clock::time_point first;
    bool shut = false;
  };
  std::map<std::uint64_t, Seen> seen_;  // by socket inode
  std::atomic<std::uint64_t> reaped_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int active_ = 0;  // connections held by workers
  std::thread thread_;
};

}  // namespace p2pnode::http
