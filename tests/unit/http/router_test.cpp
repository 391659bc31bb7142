// The route table without a server: status codes, problem documents, the token, headers. Routes
// that read a snapshot are covered end to end by tests/serve/test_serve.sh (with the OpenAPI
// validator); these need no running engine.
#include "http/router.hpp"
#include "http/host_check.hpp"

#include <gtest/gtest.h>

namespace p2pnode::http {
namespace {

struct Fixture {
  sys::SysRoot root{"/nonexistent/p2pnode-router-test"};
  sys::ScriptedRunner runner;
  engine::Engine engine{engine::EngineDeps{root, runner, runner, nullptr, nullptr}, engine::DaemonConfig{}, "test"};
  Router router{engine, 64};
};

Request get(const std::string& path) { return Request{"GET", path, {}, 0, ""}; }

std::string header_of(const Response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) { return v; }
  }
  return "";
}

TEST(Router, LivezNeedsNothing) {
  Fixture f;
  const auto r = f.router.handle(get("/livez"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"status":"alive"})");
  EXPECT_EQ(r.content_type, "application/json");
}

TEST(Router, UnknownPathsAndWrongMethodsAreProblems) {
  Fixture f;
  auto r = f.router.handle(get("/v1/nothing"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.content_type, "application/problem+json");
  r = f.router.handle(Request{"DELETE", "/v1/status", {}, 0, ""});
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(header_of(r, "Allow"), "GET, HEAD");
  EXPECT_NE(r.body.find("DELETE is not allowed on /v1/status"), std::string::npos);
  r = f.router.handle(get("/v1/reconcile"));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(header_of(r, "Allow"), "POST");
}

TEST(Router, TooManyHeaderFieldsIs431) {
  Fixture f;
  Request r = get("/livez");
  r.header_count = 65;
  EXPECT_EQ(f.router.handle(r).status, 431);
}

TEST(Router, PostsNeedTheBearerToken) {
  Fixture f;
  Request post{"POST", "/v1/reconcile", {}, 0, ""};
  auto r = f.router.handle(post);
  EXPECT_EQ(r.status, 503);  // no token configured
  EXPECT_NE(r.body.find("no token file was read"), std::string::npos);
  f.router.set_token("0123456789abcdef0123456789abcdef", "");
  r = f.router.handle(post);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(header_of(r, "WWW-Authenticate"), "Bearer realm=\"p2pnode\"");
  post.headers["authorization"] = "Bearer wrong";
  r = f.router.handle(post);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(header_of(r, "WWW-Authenticate"), "Bearer realm=\"p2pnode\", error=\"invalid_token\"");
}

// The whole Authorization value is the credential: a NUL and junk after the token (which an HTTP
// parser may cut off, or a proxy keep) is no valid token; a control byte is no field value at all.
TEST(Router, TheTokenIsTheWholeAuthorizationValue) {
  Fixture f;
  const std::string token = "0123456789abcdef0123456789abcdef";
  f.router.set_token(token, "");
  Request post{"POST", "/v1/reconcile", {}, 1, ""};
  post.headers["authorization"] = "Bearer " + token + std::string("\0junk", 5);
  EXPECT_EQ(f.router.handle(post).status, 400);
  post.headers["authorization"] = "Bearer " + token + "\x01";
  EXPECT_EQ(f.router.handle(post).status, 400);
  post.headers["authorization"] = "Bearer " + token + "junk";
  EXPECT_EQ(f.router.handle(post).status, 401);
  post.headers["authorization"] = "Bearer " + token.substr(1);
  EXPECT_EQ(f.router.handle(post).status, 401);
  post.headers["authorization"] = "Bearer " + token;
  EXPECT_EQ(f.router.handle(post).status, 202);
}

TEST(Router, MetricsCarryTheServersOwnCounters) {
  Fixture f;
  f.engine.start();
  f.router.set_metrics_extra([] { return std::string("p2pnode_http_connections_open 3\n"); });
  const auto r = f.router.handle(get("/metrics"));
  f.engine.stop();
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("p2pnode_http_connections_open 3\n"), std::string::npos);
}

}  // namespace
}  // namespace p2pnode::http

namespace p2pnode::http {
namespace {

// A forged Host (DNS rebinding: a page of evil.example made to reach this daemon) is answered 421
// before any route; addresses, localhost and the configured names are answered.
TEST(Router, ForgedHostIs421) {
  Fixture f;
  f.router.set_server_names({"node1.example.org", "*.gpu.example.org"});
  auto with_host = [&](const std::string& host) {
    Request r = get("/livez");
    r.headers["host"] = host;
    r.header_count = 1;
    return f.router.handle(r).status;
  };
  for (const char* ok : {"127.0.0.1:9470", "[::1]:9470", "localhost:9470", "10.1.2.3", "node1.example.org:9470",
                         "NODE1.example.org", "a.gpu.example.org:9470", "node1.example.org."}) {
    EXPECT_EQ(with_host(ok), 200) << ok;
  }
  for (const char* ok : {"127.0.0.1\t", "\t localhost "}) { EXPECT_EQ(with_host(ok), 200) << "OWS around it"; }
  for (const char* bad : {"evil.example", "evil.example:9470", "node1.example.org.evil.example", "gpu.example.org", "",
                          "a b", "node1.example.org:x", "[::1", "127.0.0.1:9470@evil", "localhost:1:2"}) {
    EXPECT_EQ(with_host(bad), 421) << bad;
  }
  EXPECT_EQ(f.router.handle(get("/livez")).status, 200) << "no Host at all (HTTP/1.0) is answered";
}

TEST(HostCheck, HostOfHeader) {
  EXPECT_EQ(host_of_header("Node1.Example.org:9470"), "node1.example.org");
  EXPECT_EQ(host_of_header("[::1]:9470"), "::1");
  EXPECT_EQ(host_of_header("[::1]"), "::1");
  EXPECT_EQ(host_of_header("[evil]:1"), "");
  EXPECT_EQ(host_of_header("a\r\nb"), "");
}

}  // namespace
}  // namespace p2pnode::http
