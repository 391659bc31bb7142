#include "http/connection_guard.hpp"

#include <algorithm>
#include <vector>

namespace p2pnode::http {

const char* to_string(ShedReason r) {
  switch (r) {
    case ShedReason::per_client_limit: return "per_client_limit";
    case ShedReason::connection_limit: return "connection_limit";
    case ShedReason::request_timeout: return "request_timeout";
    case ShedReason::max_connection_time: return "max_connection_time";
  }
  return "unknown";
}

ConnectionGuard::ConnectionGuard(Limits limits, LogFn log, std::function<void(int)> shut)
    : limits_(limits), log_(std::move(log)), shut_(std::move(shut)) {}

ConnectionGuard::~ConnectionGuard() { stop(); }

void ConnectionGuard::shed_locked(ShedReason r, const std::string& client) {
  const auto i = static_cast<std::size_t>(r);
  ++counts_[i];
  ++pending_[i];
  ++pending_clients_[client];
}

bool ConnectionGuard::admit(const std::string& client) {
  std::lock_guard lk(mu_);
  if (conns_.size() >= limits_.max_connections) {
    shed_locked(ShedReason::connection_limit, client);
  } else if (auto it = per_client_.find(client); it != per_client_.end() && it->second >= limits_.max_per_client) {
    shed_locked(ShedReason::per_client_limit, client);
  } else {
    return true;
  }
  // A flood sheds thousands a second: the sweeper logs them, summed; wake it if it sleeps.
  cv_.notify_one();
  return false;
}

std::uint64_t ConnectionGuard::opened(int fd, const std::string& client) {
  const auto now = Clock::now();
  std::lock_guard lk(mu_);
  const std::uint64_t id = next_id_++;
  conns_.emplace(id, Conn{fd, client, now, now});
  ++per_client_[client];
  if (conns_.size() == 1) {
    cv_.notify_one();  // the sweeper wakes from its idle sleep
  }
  return id;
}

void ConnectionGuard::request_complete(std::uint64_t id) {
  std::lock_guard lk(mu_);
  if (auto it = conns_.find(id); it != conns_.end()) { it->second.in_request = true; }
}

void ConnectionGuard::response_done(std::uint64_t id) {
  std::lock_guard lk(mu_);
  if (auto it = conns_.find(id); it != conns_.end()) {
    it->second.in_request = false;
    it->second.waiting_since = Clock::now();
  }
}

void ConnectionGuard::closed(std::uint64_t id) {
  // Under the lock: the server closes the fd only after this returns, so a sweep never shuts
  // down a descriptor number that was already reused.
  std::lock_guard lk(mu_);
  auto it = conns_.find(id);
  if (it == conns_.end()) { return; }
  if (auto c = per_client_.find(it->second.client); c != per_client_.end() && --c->second == 0) {
    per_client_.erase(c);
  }
  conns_.erase(it);
}

void ConnectionGuard::log_due_locked(Clock::time_point now, bool force) {
  std::uint64_t total = 0;
  for (auto n : pending_) { total += n; }
  if (total == 0 || (!force && now - last_log_ < limits_.log_interval && last_log_ != Clock::time_point{})) { return; }
  std::string by_reason;
  for (std::size_t i = 0; i < kShedReasons; ++i) {
    if (pending_[i]) {
      by_reason += (by_reason.empty() ? "" : ", ") + std::string(to_string(static_cast<ShedReason>(i))) + " " +
                   std::to_string(pending_[i]);
    }
  }
  std::vector<std::pair<std::uint64_t, std::string>> clients;
  for (const auto& [c, n] : pending_clients_) { clients.emplace_back(n, c); }
  std::sort(clients.rbegin(), clients.rend());
  std::string top;
  for (std::size_t i = 0; i < clients.size() && i < 3; ++i) {
    top += (i ? ", " : "") + clients[i].second + " " + std::to_string(clients[i].first);
  }
  const std::string msg = "API: shed " + std::to_string(total) + " connection(s) since the last report (" + by_reason +
                          "); most from " + top +
                          (clients.size() > 3 ? " and " + std::to_string(clients.size() - 3) + " more" : "");
  pending_ = {};
  pending_clients_.clear();
  last_log_ = now;
  if (log_) { log_(msg); }
}

void ConnectionGuard::set_limits(Limits limits) {
  std::lock_guard lk(mu_);
  limits_ = limits;
  cv_.notify_one();
}

int ConnectionGuard::sweep(Clock::time_point now) {
  std::lock_guard lk(mu_);
  int cut = 0;
  for (auto& [id, c] : conns_) {
    if (c.cut) { continue; }
    ShedReason why;
    if (now - c.opened >= limits_.max_connection_time) {
      why = ShedReason::max_connection_time;
    } else if (!c.in_request && now - c.waiting_since >= limits_.request_timeout) {
      why = ShedReason::request_timeout;
    } else {
      continue;
    }
    c.cut = true;
    shed_locked(why, c.client);
    if (shut_) { shut_(c.fd); }
    ++cut;
  }
  log_due_locked(now, false);
  return cut;
}

void ConnectionGuard::start() {
  std::lock_guard starting(mu_);
  if (thread_.joinable()) { return; }
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lk(mu_);
    while (!stopping_) {
      std::uint64_t pending = 0;
      for (auto n : pending_) { pending += n; }
      if (conns_.empty() && pending == 0) {
        cv_.wait(lk);  // idle: nothing to time out, nothing to report
        continue;
      }
      cv_.wait_for(lk, limits_.sweep_interval);
      if (stopping_) { break; }
      lk.unlock();
      sweep(Clock::now());
      lk.lock();
      if (conns_.empty()) {  // the last connection is gone: report what is left when due, then sleep
        std::uint64_t left = 0;
        for (auto n : pending_) { left += n; }
        if (left && Clock::now() - last_log_ < limits_.log_interval) {
          cv_.wait_for(lk, limits_.log_interval - (Clock::now() - last_log_));
        }
        if (!stopping_) { log_due_locked(Clock::now(), true); }
      }
    }
  });
}

void ConnectionGuard::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) { thread_.join(); }
}

std::array<std::uint64_t, kShedReasons> ConnectionGuard::shed_counts() const {
  std::lock_guard lk(mu_);
  return counts_;
}

std::size_t ConnectionGuard::open_connections() const {
  std::lock_guard lk(mu_);
  return conns_.size();
}

std::string ConnectionGuard::metrics_text() const {
  const auto c = shed_counts();
  std::string s =
      "# HELP p2pnode_http_connections_rejected_total API connections shed: refused at accept (per_client_limit, "
      "connection_limit) or cut off (request_timeout: no complete request in time; max_connection_time)\n"
      "# TYPE p2pnode_http_connections_rejected_total counter\n";
  for (std::size_t i = 0; i < kShedReasons; ++i) {
    s += std::string("p2pnode_http_connections_rejected_total{reason=\"") + to_string(static_cast<ShedReason>(i)) +
         "\"} " + std::to_string(c[i]) + "\n";
  }
  s += "# HELP p2pnode_http_connections_open API connections open now\n# TYPE p2pnode_http_connections_open gauge\n";
  s += "p2pnode_http_connections_open " + std::to_string(open_connections()) + "\n";
  return s;
}

}  // namespace p2pnode::http
