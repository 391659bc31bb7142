// driver.options: one /etc/modprobe.d file owned by p2pnode for the profile's NVreg_* options;
// with driver.conflicts: remove, also the other files' lines that keep nvidia from loading
// (blacklist / install … /bin/false) are commented out. plan() reads; apply() writes atomically
// and reads every file back.
#include <algorithm>

#include "actions/driver_install.hpp"
#include "checks/check.hpp"
#include "core/grammar.hpp"
#include "nvidia/blacklist.hpp"
#include "nvidia/version.hpp"

namespace p2pnode::actions {
namespace {
using json = nlohmann::json;
constexpr std::string_view kModprobeDir = "/etc/modprobe.d/";

struct Blacklisted {
  std::string file;  // in-root path
  std::string text;  // its content now
  std::vector<nvidia::BlacklistLine> lines;
};

struct OptionsState {
  std::string want, have;
  bool exists = false;
  std::vector<std::string> others;      // other files' nvidia options, and blacklists left alone
  std::vector<Blacklisted> blacklists;  // to disable (driver.conflicts: remove)
};

OptionsState options_state(const Profile& p, const sys::SysRoot& root) {
  OptionsState s;
  s.want = render_modprobe_conf(p.driver->module_options);
  for (const auto& [k, v] : p.driver->module_options) {
    if (!grammar::is_nvreg_key(k) || !grammar::is_nvreg_value(v)) {
      s.others.push_back("the profile's option " + k +
                         " is not written: not an NVreg_* name and value modprobe reads as one");
    }
  }
  if (auto t = root.read_text(kModprobeConf)) {
    s.exists = true;
    s.have = *t;
  }
  const std::string own = std::string(kModprobeConf).substr(kModprobeDir.size());
  for (const auto& f : root.list_dir(std::string(kModprobeDir))) {
    if (f == own || f.size() < 5 || f.substr(f.size() - 5) != ".conf") { continue; }
    const std::string path = std::string(kModprobeDir) + f;
    auto text = root.read_text(path);
    if (!text) { continue; }
    for (const auto& [k, v] : nvidia::parse_modprobe_options(*text, "nvidia")) {
      auto it = p.driver->module_options.find(k);
      if (it == p.driver->module_options.end() || it->second != v) {
        s.others.push_back(path + " sets " + k + "=" + v);
      }
    }
    auto lines = nvidia::find_nvidia_blacklists(*text);
    if (lines.empty()) { continue; }
    if (p.driver->conflicts == ConflictPolicy::remove) {
      s.blacklists.push_back({path, *text, std::move(lines)});
    } else {
      for (const auto& l : lines) {
        s.others.push_back(path + ":" + std::to_string(l.line) + " '" + l.text +
                           "' keeps nvidia from loading (driver.conflicts: remove would disable it)");
      }
    }
  }
  return s;
}

bool options_in_place(const OptionsState& s) { return s.want == s.have && (s.exists || s.want.empty()); }

json describe(const std::vector<Blacklisted>& b) {
  json out = json::array();
  for (const auto& f : b) {
    for (const auto& l : f.lines) { out.push_back(f.file + ":" + std::to_string(l.line) + " " + l.text); }
  }
  return out;
}

class DriverOptions final : public Action {
 public:
  std::string_view id() const override { return "driver.options"; }

  std::vector<Step> plan(const Profile& p, const Inventory&, const sys::SysRoot& root) const override {
    if (!p.driver) { return {}; }
    const auto s = options_state(p, root);
    std::vector<Step> steps;
    if (!options_in_place(s)) {
      steps.push_back(Step{"driver.options",
                           kModprobeConf,
                           s.want.empty() ? "remove " + std::string(kModprobeConf) + " (the profile sets no options)"
                                          : "write the profile's options to " + std::string(kModprobeConf) +
                                                " (takes effect at the next load of nvidia)",
                           false,
                           false,
                           {{"before", s.have}, {"wanted", s.want}, {"other_files", s.others}}});
    }
    for (const auto& b : s.blacklists) {
      steps.push_back(Step{"driver.options",
                           b.file,
                           "comment out " + std::to_string(b.lines.size()) + " line(s) of " + b.file +
                               " that keep nvidia from loading (driver.conflicts: remove)",
                           false,
                           false,
                           {{"lines", describe({b})}}});
    }
    return steps;
  }

  std::vector<StepResult> apply(ApplyContext& ctx, const Inventory&) const override {
    const DriverSpec& d = *ctx.profile.driver;
    const auto s = options_state(ctx.profile, ctx.root);
    if (auto problem = checks::p2p_type_problem(d.module_options, d.version)) {
      StepResult r{"driver.options", kModprobeConf, StepOutcome::refused, "", {{"content", s.have}}, json::object(), 0};
      r.message = "the profile's options would disable BAR1 P2P: " + *problem;
      return {r};
    }
    std::vector<StepResult> out{apply_own_file(ctx, s)};
    for (const auto& b : s.blacklists) { out.push_back(disable_blacklist(ctx, b)); }
    return out;
  }

 private:
  static StepResult apply_own_file(ApplyContext& ctx, const OptionsState& s) {
    StepResult r{"driver.options", kModprobeConf, StepOutcome::failed, "", json::object(), json::object(), 0};
    r.before = {{"content", s.have}, {"other_files", s.others}};
    const auto w0 = ctx.root.write_count();
    if (options_in_place(s)) {
      r.outcome = StepOutcome::unchanged;
      r.message = "options already in place";
    } else if (s.want.empty()) {
      if (auto st = ctx.root.remove_file(kModprobeConf); !st) {
        r.message = "removing " + std::string(kModprobeConf) + ": " + st.error().message;
        return r;
      }
      r.outcome = StepOutcome::changed;
      r.message = "removed " + std::string(kModprobeConf);
    } else {
      (void)ctx.root.make_dirs(std::string(kModprobeDir));
      if (auto st = ctx.root.write_file_atomic(kModprobeConf, s.want); !st) {
        r.message = "writing " + std::string(kModprobeConf) + ": " + st.error().message;
        r.writes = ctx.root.write_count() - w0;
        return r;
      }
      const auto back = ctx.root.read_text(kModprobeConf);
      if (!back || *back != s.want) {
        r.message = "wrote " + std::string(kModprobeConf) + " but it reads back differently";
        r.writes = ctx.root.write_count() - w0;
        return r;
      }
      r.outcome = StepOutcome::changed;
      r.message = "wrote " + std::string(kModprobeConf) + "; takes effect at the next load of nvidia";
    }
    r.after = {{"content", ctx.root.read_text(kModprobeConf).value_or("")}};
    if (!s.others.empty()) {
      r.message += "; other files also configure nvidia (left alone): ";
      for (std::size_t i = 0; i < s.others.size(); ++i) { r.message += (i ? "; " : "") + s.others[i]; }
    }
    r.writes = ctx.root.write_count() - w0;
    if (r.outcome == StepOutcome::changed) { ctx.log("driver.options", kModprobeConf, r.message); }
    return r;
  }

  static StepResult disable_blacklist(ApplyContext& ctx, const Blacklisted& b) {
    StepResult r{"driver.options", b.file, StepOutcome::failed, "", {{"lines", describe({b})}}, json::object(), 0};
    const auto w0 = ctx.root.write_count();
    const std::string want = nvidia::disable_nvidia_blacklists(b.text);
    if (auto st = ctx.root.write_file_atomic(b.file, want); !st) {
      r.message = "rewriting " + b.file + ": " + st.error().message + " (the file is unchanged)";
      r.writes = ctx.root.write_count() - w0;
      return r;
    }
    r.writes = ctx.root.write_count() - w0;
    const auto back = ctx.root.read_text(b.file);
    if (!back || *back != want || !nvidia::find_nvidia_blacklists(*back).empty()) {
      r.message = "rewrote " + b.file + " but it reads back differently";
      return r;
    }
    r.outcome = StepOutcome::changed;
    r.after = {{"content", *back}};
    r.message = "commented out " + std::to_string(b.lines.size()) + " line(s) that kept nvidia from loading";
    ctx.log("driver.options", b.file, r.message);
    return r;
  }
};

std::string option_value(std::string v) {
  v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
  const bool plain =
      !v.empty() &&
      v.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,:-+") == std::string::npos;
  return plain ? v : "\"" + v + "\"";
}

}  // namespace

std::string render_modprobe_conf(const std::map<std::string, std::string>& options) {
  if (options.empty()) { return {}; }
  std::string s =
      "# Written by p2pnode from the profile's driver.options; `p2pnode apply` rewrites it.\noptions nvidia";
  // modprobe.d is not a shell but a line is a directive: an option that is not one word is left out
  // (the loader refuses it first), so no value can start a second line (`install nvidia …`).
  for (const auto& [k, v] : options) {
    if (grammar::is_nvreg_key(k) && grammar::is_nvreg_value(v)) { s += " " + k + "=" + option_value(v); }
  }
  return s + "\n";
}

std::unique_ptr<Action> make_driver_options() { return std::make_unique<DriverOptions>(); }

}  // namespace p2pnode::actions
