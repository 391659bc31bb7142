// `p2pnode serve`: the daemon. The main thread owns signals and the systemd watchdog; the engine
// reconciles on its own thread; the routes answer from published snapshots. HTTP and TLS are
// parsed by a child process without root (privsep/), started again whenever it dies.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>

#include <unistd.h>

#include "cli/commands.hpp"
#include "engine/config.hpp"
#include "engine/engine.hpp"
#include "http/router.hpp"
#include "http/server.hpp"
#include "privsep/http_supervisor.hpp"
#include "service/device_monitor.hpp"
#include "service/systemd.hpp"

namespace p2pnode::cli {

namespace {
struct ServeOptions {
  std::string config;
  std::string root = "/";
  std::string listen;
  std::string port_file;
  bool verbose = false;
  bool check_config = false;  // validate and exit (Ansible's template validate, `nginx -t`)
  bool strict = false;        // --check-config: a missing token file fails too
};

// Against a recorded tree (--root) the daemon must not run dkms or update-grub on this host.
class RefusingRunner final : public sys::CommandRunner {
 public:
  sys::CommandResult run(const sys::Command& cmd) override {
    sys::CommandResult r;
    r.start_failed = true;
    r.err =
        "not run: the daemon serves a recorded tree (--root), so it runs no commands but the agent: " + cmd.display();
    return r;
  }
};

std::string status_line(const engine::Snapshot& s) {
  const auto& st = s.state;
  std::string line = std::string(engine::to_string(st.state)) + ": profile " +
                     (st.profile.empty() ? "none" : st.profile) + ", " +
                     std::to_string(st.devices.value("gpus", nlohmann::json::array()).size()) + " GPU(s)";
  if (st.selftest) { line += ", self-test " + st.selftest->verdict; }
  if (!st.reasons.empty()) {
    line += "; " + st.reasons.front() +
            (st.reasons.size() > 1 ? " (+" + std::to_string(st.reasons.size() - 1) + " more)" : "");
  }
  return line;
}

// The configuration and what it names on this machine, checked together: a bad TLS file refuses
// the whole configuration, at start and on SIGHUP alike.
struct LoadedConfig {
  engine::DaemonConfig config;
  std::shared_ptr<const tls::Identity> tls;  // null: plain HTTP
};

std::optional<LoadedConfig> load_config(const ServeOptions& o, const sys::SysRoot& root, const engine::LogFn& log,
                                        std::string* problem) {
  const bool explicit_file = !o.config.empty();
  const std::string file = explicit_file ? o.config : root.host_path("/etc/p2pnode/p2pnode.yaml").string();
  std::error_code ec;
  if (!explicit_file && !std::filesystem::exists(file, ec)) {
    log({engine::LogLevel::notice, "no " + file + ": using the built-in defaults", "", "config", ""});
    return LoadedConfig{};
  }
  auto loaded = engine::load_config_file(file);
  std::shared_ptr<const tls::Identity> identity;
  if (loaded.config) { identity = engine::read_tls_identity(*loaded.config, root, loaded.diagnostics); }
  if (!loaded.config || !loaded.diagnostics.empty()) {
    *problem = "the configuration is not valid:\n" + loaded.diagnostics.format();
    return std::nullopt;
  }
  return LoadedConfig{std::move(*loaded.config), std::move(identity)};
}

void apply_listen_override(const ServeOptions& o, engine::DaemonConfig& c) {
  if (o.listen.empty()) { return; }
  std::string why;
  auto a = engine::parse_listen(o.listen, &why);
  if (!a) { throw CLI::ValidationError("--listen", why); }
  c.listen = *a;
}

void load_token(const sys::SysRoot& root, const engine::DaemonConfig& c, http::Router& router,
                const engine::LogFn& log) {
  auto t = http::read_token_file(engine::host_paths(c, root).token_file);
  if (t) {
    router.set_token(*t, "");
    return;
  }
  router.set_token("", t.error().message);
  log({engine::LogLevel::warning, t.error().message + "; POST /v1/reconcile and /v1/selftest are disabled", "",
       "config", ""});
}

std::shared_ptr<const tls::PemIdentity> pem_of(const std::shared_ptr<const tls::Identity>& id) {
  return id ? std::make_shared<const tls::PemIdentity>(tls::to_pem(*id)) : nullptr;
}

// The HTTP process's part of a reload: its limits at once, and a new certificate and key for new
// connections (it logs whether they took); turning TLS on or off needs a restart, like a new
// listen address.
void reload_http(const LoadedConfig& fresh, const http::ServerOptions& options, bool serves_tls,
                 privsep::HttpSupervisor& http_side, const engine::LogFn& log) {
  privsep::HttpSettings s = privsep::settings_of(options);
  if (fresh.tls && serves_tls) {
    const auto pem = tls::to_pem(*fresh.tls);
    s.tls_chain = pem.chain;
    s.tls_key = pem.key.c_str();
    s.tls_describe = fresh.tls->describe();
  } else if (fresh.tls || serves_tls) {
    log({engine::LogLevel::warning,
         std::string("tls was ") + (fresh.tls ? "added to" : "removed from") +
             " the configuration; it takes effect on restart",
         "", "config", ""});
  }
  if (auto st = http_side.send_settings(s); !st) {
    log({engine::LogLevel::error, "the HTTP process did not take the new settings: " + st.error().message, "", "http",
         ""});
  }
  std::fill(s.tls_key.begin(), s.tls_key.end(), '\0');
}

// Stops the HTTP process before what its answering thread uses (the router, the engine) goes.
struct StopFirst {
  privsep::HttpSupervisor& http_side;
  ~StopFirst() { http_side.stop(); }
};

// What the HTTP process starts with: the limits and, with TLS, the certificate and key.
privsep::HttpSettings first_http_settings(const http::ServerOptions& o,
                                          const std::shared_ptr<const tls::Identity>& id) {
  privsep::HttpSettings s = privsep::settings_of(o);
  if (o.tls) {
    s.tls_chain = o.tls->chain;
    s.tls_key = o.tls->key.c_str();
    s.tls_describe = id ? id->describe() : "";
  }
  return s;
}

// Sleeps until a signal, the next watchdog ping or the HTTP process's next start, whichever comes first.
int wait_for_signal(const sigset_t& mask, std::chrono::microseconds tick, const privsep::HttpSupervisor& http_side) {
  if (const auto due = http_side.next_due()) { tick = std::min<std::chrono::microseconds>(tick, *due); }
  const timespec ts{static_cast<time_t>(tick.count() / 1000000), static_cast<long>((tick.count() % 1000000) * 1000)};
  return sigtimedwait(&mask, nullptr, &ts);
}

// The HTTP server's options from the configuration (its TLS identity is set apart).
http::ServerOptions server_options(const engine::DaemonConfig& c) {
  http::ServerOptions h;
  h.listen = c.listen;
  h.threads = c.http_threads;
  h.max_body = c.http_max_body;
  h.max_connections = c.http_max_connections;
  h.max_connections_per_client = c.http_max_connections_per_client;
  h.request_timeout = c.http_request_timeout;
  h.idle_timeout = c.http_idle_timeout;
  h.max_connection_time = c.http_max_connection_time;
  h.server_names = c.http_server_names;
  // This host's own name is always one of them (what Prometheus and people use by default).
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0 && name[0]) { h.server_names.emplace_back(name); }
  return h;
}

// Says on stderr and in the log why the daemon does not start; `code` is what it exits with.
int serve_refuse(int code, const std::string& message, const char* topic, const engine::LogFn& log) {
  std::cerr << "p2pnode serve: " << message << "\n";
  log({engine::LogLevel::error, message, "", topic, ""});
  return code;
}

// The configuration to serve, --listen applied; nullopt (said on stderr and in the log) when it
// is not valid or would listen beyond this host without leave.
std::optional<LoadedConfig> serve_checked_config(const ServeOptions& o, const sys::SysRoot& root,
                                                 const engine::LogFn& log) {
  std::string problem;
  auto loaded = load_config(o, root, log, &problem);
  if (!loaded) {
    std::cerr << "p2pnode serve: " << problem;
    log({engine::LogLevel::error, problem, "", "config", ""});
    return std::nullopt;
  }
  apply_listen_override(o, loaded->config);
  const engine::DaemonConfig& config = loaded->config;
  if (!config.listen.is_loopback() && !config.allow_non_loopback) {
    std::cerr
        << "p2pnode serve: " << config.listen.display()
        << " is not a loopback address; set allow_non_loopback: true in the configuration to listen beyond this host\n";
    return std::nullopt;
  }
  if (auto why = engine::plaintext_refusal(config)) {  // --listen may have moved it beyond loopback
    serve_refuse(kUsage, *why, "config", log);
    return std::nullopt;
  }
  return loaded;
}

// --check-config, once the configuration itself is valid: the token file, then the verdict.
int serve_check_config(const ServeOptions& o, const sys::SysRoot& root, const engine::DaemonConfig& config) {
  // The daemon would start with a bad token file, but with every POST disabled: say so here.
  const auto token = engine::host_paths(config, root).token_file;
  std::error_code ec;
  if (!std::filesystem::exists(token, ec)) {
    std::cerr
        << "p2pnode serve: " << (o.strict ? "" : "warning: ") << "the token file " << token.string()
        << " does not exist: POST /v1/reconcile and /v1/selftest would answer 503. Create it (root only, at least "
           "16 characters), e.g. umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > "
        << token.string() << "\n";
    if (o.strict) { return kUsage; }
  } else if (auto t = http::read_token_file(token); !t) {
    std::cerr << "p2pnode serve: " << t.error().message << ": POST /v1/reconcile and /v1/selftest would answer 503\n";
    return kUsage;
  }
  // The file that was read (config.source_file), or the built-in defaults when there was none.
  std::cout << "p2pnode serve: the configuration "
            << (config.source_file.empty() ? std::string("(built-in defaults: no configuration file)")
                                           : config.source_file)
            << " is valid\n";
  return kOk;
}

// Signals go to this thread only: block them before any other thread (or the HTTP process) starts.
sigset_t serve_block_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGHUP, SIGTERM, SIGINT, SIGCHLD}) { sigaddset(&mask, s); }
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return mask;
}

// Once the HTTP process runs: the port file, and where the daemon listens and how.
void serve_announce(const ServeOptions& o, const http::ServerOptions& hopt, const engine::ListenAddress& bound,
                    const engine::DaemonConfig& config, const tls::Identity* identity, const engine::LogFn& log) {
  if (!o.port_file.empty()) { std::ofstream(o.port_file) << bound.port << "\n"; }
  log({engine::LogLevel::notice,
       std::string("listening on ") + (hopt.tls ? "https://" : "http://") + bound.display() + " (profiles " +
           config.profiles_dir + ", state " + config.state_file() + ")",
       "", "http", ""});
  if (identity) {
    log({engine::LogLevel::notice, "TLS certificate: " + identity->describe(), "", "tls", ""});
  } else if (!bound.is_loopback()) {
    log({engine::LogLevel::warning,
         "serving plain HTTP beyond this host (allow_plaintext_beyond_loopback: true): the bearer "
         "token and every answer cross the network unencrypted",
         "", "http", ""});
  }
}

// A recorded machine is a copy someone may want unchanged (a checkout's fixture).
void serve_warn_apply_into_tree(const ServeOptions& o, const engine::LogFn& log) {
  log({engine::LogLevel::warning,
       "--root " + o.root +
           " with apply: true: the daemon's fixes write into that tree (ACS bytes, resized BARs, "
           "modprobe.d, GRUB's drop-in; no program is run); set apply: false in the configuration to only read it",
       "", "config", ""});
}

// What the engine calls after each pass: READY=1 after the first, then the status line alone.
std::function<void(const engine::Snapshot&)> serve_systemd_notifier() {
  auto ready_sent = std::make_shared<std::atomic<bool>>(false);
  return [ready_sent](const engine::Snapshot& s) {
    if (!ready_sent->exchange(true)) {
      service::notify_ready(status_line(s));
    } else {
      service::notify_status(status_line(s));
    }
  };
}

// The PCI hotplug monitor, on a real machine when the configuration asks for it; null otherwise
// or when it could not start (logged).
std::unique_ptr<service::DeviceMonitor> serve_start_monitor(const engine::DaemonConfig& config, bool real_root,
                                                            engine::Engine& engine, const engine::LogFn& log) {
  std::unique_ptr<service::DeviceMonitor> monitor;
  if (config.device_monitor && real_root) {
    monitor = std::make_unique<service::DeviceMonitor>(engine, log);
    if (auto st = monitor->start(); !st) {
      log({engine::LogLevel::warning, "PCI hotplug monitor not started: " + st.error().message, "", "monitor", ""});
      monitor.reset();
    }
  }
  return monitor;
}

// What the main thread tends while the daemon serves.
struct ServeRunning {
  const ServeOptions& o;
  const sys::SysRoot& root;
  const engine::LogFn& log;
  privsep::HttpSupervisor& http_side;
  http::Router& router;
  engine::Engine& engine;
  bool serves_tls;  // what the HTTP process started with: a reload cannot turn TLS on or off
};

// SIGHUP: the configuration read again and handed to the HTTP process, the router and the engine;
// a configuration that is not valid is refused and the running one kept.
void serve_reload(const ServeRunning& s, std::optional<engine::DaemonConfig>& config) {
  service::notify_reloading();
  std::string why;
  auto reloaded = load_config(s.o, s.root, s.log, &why);
  if (reloaded) {
    std::optional<engine::DaemonConfig> fresh = reloaded->config;
    try {
      apply_listen_override(s.o, *fresh);
    } catch (const CLI::Error&) {}
    if (fresh->listen.display() != config->listen.display() && s.o.listen.empty()) {
      s.log({engine::LogLevel::warning,
             "the listen address changed to " + fresh->listen.display() + "; it takes effect on restart", "", "config",
             ""});
    }
    const http::ServerOptions fresh_options = server_options(*fresh);
    reload_http(*reloaded, fresh_options, s.serves_tls, s.http_side, s.log);
    s.router.set_max_headers(fresh_options.max_headers);
    s.router.set_server_names(fresh_options.server_names);
    config = fresh;
    s.engine.set_config(*config);
    load_token(s.root, *config, s.router, s.log);
    s.log({engine::LogLevel::notice, "configuration reloaded", "", "reload", ""});
  } else {
    s.log({engine::LogLevel::error, "reload refused, keeping the running configuration: " + why, "", "reload", ""});
    s.engine.set_config_problem("reload refused, the previous configuration is in use: " + why);
  }
  s.engine.request("reload", false);
  service::notify_ready(status_line(*s.engine.snapshot()));
}

// The main thread's loop, until SIGTERM or SIGINT: the watchdog, the HTTP process, SIGHUP.
void serve_until_stopped(const ServeRunning& s, const sigset_t& mask, std::optional<engine::DaemonConfig>& config) {
  const auto ping = service::watchdog_ping_interval();
  // Wake only to ping the watchdog (none without one): an idle daemon uses no CPU.
  const std::chrono::microseconds tick = ping ? *ping : std::chrono::hours(1);
  for (;;) {
    const int sig = wait_for_signal(mask, tick, s.http_side);
    if (ping && !s.engine.wedged()) {
      service::notify_watchdog();  // a wedged pass: let systemd restart us
    }
    if (sig == SIGTERM || sig == SIGINT) {
      s.log({engine::LogLevel::notice, std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"), "",
             "signal", ""});
      return;
    }
    s.http_side.tend();  // SIGCHLD: it died; or its next start is due
    if (sig == SIGHUP) { serve_reload(s, config); }
  }
}

int run_serve(const ServeOptions& o) {
  const sys::SysRoot root(o.root);
  const engine::LogFn log = service::make_logger(o.verbose);
  auto loaded = serve_checked_config(o, root, log);
  if (!loaded) { return kUsage; }
  std::optional<engine::DaemonConfig> config = loaded->config;
  if (o.check_config) { return serve_check_config(o, root, *config); }

  const sigset_t mask = serve_block_signals();
  http::ServerOptions hopt = server_options(*config);
  hopt.tls = pem_of(loaded->tls);
  auto listener = http::bind_listener(config->listen);
  if (!listener) { return serve_refuse(1, listener.error().message, "http", log); }
  engine::ListenAddress bound = config->listen;
  bound.port = listener->port;
  // Started now, before the token or the state is read; the daemon holds the socket for the next one.
  auto account = privsep::http_account(log);
  if (!account) {
    ::close(listener->fd);
    return serve_refuse(1, account.error().message, "privsep", log);
  }
  privsep::HttpSupervisor http_supervisor(listener->fd, first_http_settings(hopt, loaded->tls), *account, o.verbose,
                                          log);
  if (auto st = http_supervisor.start(); !st) { return serve_refuse(1, st.error().message, "privsep", log); }
  serve_announce(o, hopt, bound, *config, loaded->tls.get(), log);

  sys::ProcessRunner agent_runner;
  sys::ProcessRunner host_runner;
  sys::ProcessRunner health_runner;  // the health pass's own thread runs `p2pnode-agent --health`
  RefusingRunner refusing;
  const bool real_root = std::filesystem::weakly_canonical(o.root) == "/";
  sys::CommandRunner& action_runner = real_root ? static_cast<sys::CommandRunner&>(host_runner) : refusing;
  if (!real_root && config->apply) { serve_warn_apply_into_tree(o, log); }
  engine::EngineDeps deps{root, action_runner, agent_runner, log, serve_systemd_notifier(), &health_runner};
  engine::Engine engine(deps, *config, P2PNODE_VERSION);
  http::Router router(engine, hopt.max_headers);
  router.set_server_names(hopt.server_names);
  router.set_metrics_extra([&http_supervisor] { return http_supervisor.metrics_text(); });
  load_token(root, *config, router, log);
  StopFirst stop_first{http_supervisor};
  http_supervisor.serve([&router](const http::Request& req) { return router.handle(req); });
  service::notify_status("reconciling: the first pass since start");
  engine.start();
  const auto monitor = serve_start_monitor(*config, real_root, engine, log);

  serve_until_stopped({o, root, log, http_supervisor, router, engine, hopt.tls != nullptr}, mask, config);
  service::notify_stopping();
  if (monitor) { monitor->stop(); }
  http_supervisor.stop();
  engine.stop();
  return kOk;
}
}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd =
      app.add_subcommand("serve", "Run the daemon: reconcile, self-test on a schedule, serve REST and /metrics");
  cmd->add_option("--config", o->config,
                  "Daemon configuration (default ROOT/etc/p2pnode/p2pnode.yaml; built-in defaults when absent)");
  cmd->add_option("--root", o->root,
                  "Treat DIR as the filesystem root (a recorded machine); runs no commands but the agent")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--listen", o->listen, "HOST:PORT to listen on (port 0: any free port), overrides the configuration");
  cmd->add_option("--port-file", o->port_file, "Write the bound port to this file once listening");
  cmd->add_flag("-v,--verbose", o->verbose, "Log debug messages too");
  cmd->add_flag("--check-config", o->check_config,
                "Validate the configuration (TLS and token files included) and exit: 0 valid, 2 not; serves nothing");
  cmd->add_flag("--strict", o->strict, "With --check-config: a missing token file is an error, not a warning");
  cmd->callback([o] { throw CLI::RuntimeError(run_serve(*o)); });
}

}  // namespace p2pnode::cli
