// The connection lifetime limit on real loopback sockets: an accepted connection older than the
// limit is shut down (the client reads EOF), a young one and the listener are left alone.
#include "http/connection_reaper.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace p2pnode::http {
namespace {
using namespace std::chrono_literals;

struct Loopback {
  int listener = -1, port = 0;
  Loopback() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listener, 8), 0);
    socklen_t len = sizeof a;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Loopback() { ::close(listener); }
  std::pair<int, int> connect() const {  // {client, accepted}
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return {c, ::accept(listener, nullptr, nullptr)};
  }
};

bool reads_eof(int fd) {
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b;
  return ::recv(fd, &b, 1, 0) == 0;
}

}  // namespace

TEST(ConnectionReaper, ShutsDownOnlyConnectionsOlderThanTheLimit) {
  Loopback lo;
  ConnectionReaper reaper(lo.port, 150ms);
  auto [old_client, old_conn] = lo.connect();
  EXPECT_EQ(reaper.sweep(), 0);  // first seen now
  std::this_thread::sleep_for(250ms);
  auto [young_client, young_conn] = lo.connect();
  EXPECT_EQ(reaper.sweep(), 1);  // the old one only; the young one is first seen here
  EXPECT_TRUE(reads_eof(old_client));
  EXPECT_EQ(reaper.sweep(), 0);  // not counted twice while the server has not closed it yet
  EXPECT_EQ(reaper.reaped(), 1u);

  // The young connection still works both ways.
  ASSERT_EQ(::send(young_client, "x", 1, 0), 1);
  char b = 0;
  ASSERT_EQ(::recv(young_conn, &b, 1, 0), 1);
  EXPECT_EQ(b, 'x');
  for (int fd : {old_client, old_conn, young_client, young_conn}) ::close(fd);
}

TEST(ConnectionReaper, ItsThreadReapsATricklingClientWhileTheListenerStays) {
  Loopback lo;
  ConnectionReaper reaper(lo.port, 500ms);
  reaper.start();
  auto [client, conn] = lo.connect();
  reaper.connection_started();  // as the worker pool does when a worker takes it
  const auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() - t0 < 5s) {  // one byte every 200 ms
    ::send(client, "G", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(200ms);
    char b;
    closed = ::recv(conn, &b, 1, MSG_DONTWAIT) == 0;
  }
  reaper.connection_finished();
  reaper.stop();
  EXPECT_TRUE(closed) << "the trickling connection was not shut down";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  auto [c2, a2] = lo.connect();  // the listener was not touched
  EXPECT_GE(a2, 0);
  for (int fd : {client, conn, c2, a2}) ::close(fd);
}

TEST(ConnectionReaper, SleepsWhileNoWorkerHoldsAConnection) {
  Loopback lo;
  ConnectionReaper reaper(lo.port, 100ms);
  auto [client, conn] = lo.connect();  // accepted, but no worker said it took it
  reaper.start();
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(reaper.reaped(), 0u);  // it never swept: an idle daemon wakes for nothing
  reaper.connection_started();
  const auto t0 = std::chrono::steady_clock::now();
  while (reaper.reaped() == 0 && std::chrono::steady_clock::now() - t0 < 4s) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(reaper.reaped(), 1u);  // first seen on the first sweep, shut on the next
  reaper.connection_finished();
  reaper.stop();
  for (int fd : {client, conn}) ::close(fd);
}

}  // namespace p2pnode::http
