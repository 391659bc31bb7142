#pragma once
// What keeps hostile clients from starving the API. The server asks it at accept
// (admit: shed beyond http.max_connections in all, or http.max_connections_per_client from one
// address) and tells it when a connection opens, finishes a request and closes. A sweeper thread
// shuts down (shutdown(2); the server then closes it as usual) a connection that has not delivered
// a complete request within http.request_timeout of opening or of its previous response (an idle,
// trickling or stalled-handshake client), and any connection older than max_connection_time.
// What it sheds is counted by reason (p2pnode_http_connections_rejected_total{reason}) and logged
// at most once every log_interval, summed. The sweeper sleeps while no connection is open.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace p2pnode::http {

enum class ShedReason { per_client_limit, connection_limit, request_timeout, max_connection_time };
inline constexpr std::size_t kShedReasons = 4;
const char* to_string(ShedReason r);

class ConnectionGuard {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    std::size_t max_connections = 256;
    std::size_t max_per_client = 32;
    std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};
    std::chrono::milliseconds max_connection_time{std::chrono::seconds(60)};
    std::chrono::milliseconds log_interval{std::chrono::seconds(10)};
    std::chrono::milliseconds sweep_interval{std::chrono::milliseconds(250)};
  };
  using LogFn = std::function<void(const std::string&)>;
  // shut(fd): cuts a connection (shutdown(fd, SHUT_RDWR) in the server; tests record it).
  ConnectionGuard(Limits limits, LogFn log, std::function<void(int fd)> shut);
  ~ConnectionGuard();

  // At accept, before the connection exists: false sheds it (counted).
  bool admit(const std::string& client);
  // The connection exists (its socket is fd); returns its id for the calls below.
  std::uint64_t opened(int fd, const std::string& client);
  void request_complete(std::uint64_t id);  // a whole request arrived: no deadline while it is answered
  void response_done(std::uint64_t id);     // answered: the next request's deadline starts now
  void closed(std::uint64_t id);

  // One pass at `now`: cuts what is past its deadline, logs what was shed when due. Returns how
  // many it cut. The thread calls it every sweep_interval while connections are open.
  int sweep(Clock::time_point now);
  // New limits (SIGHUP): admissions and deadlines use them from now on; open connections stay.
  void set_limits(Limits limits);
  void start();
  void stop();

  std::array<std::uint64_t, kShedReasons> shed_counts() const;
  std::size_t open_connections() const;
  // The counter family in the Prometheus text format.
  std::string metrics_text() const;

 private:
  struct Conn {
    int fd;
    std::string client;
    Clock::time_point opened, waiting_since;
    bool in_request = false, cut = false;
  };
  void shed_locked(ShedReason r, const std::string& client);
  void log_due_locked(Clock::time_point now, bool force);
  Limits limits_;
  LogFn log_;
  std::function<void(int)> shut_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Conn> conns_;
  std::map<std::string, std::size_t> per_client_;
  std::uint64_t next_id_ = 1;
  std::array<std::uint64_t, kShedReasons> counts_{};
  // Not yet logged: by reason, and by client address.
  std::array<std::uint64_t, kShedReasons> pending_{};
  std::map<std::string, std::uint64_t> pending_clients_;
  Clock::time_point last_log_{};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace p2pnode::http
