#include "health/monitor.hpp"

#include <cmath>
#include <cstdio>

#include "health/thresholds.hpp"

namespace p2pnode::health {

namespace {
using json = nlohmann::json;
constexpr std::size_t kMaxRecentXids = 4096;  // kept for the window's findings
constexpr std::size_t kShownXids = 50;        // the newest, in /v1/health

json link_json(const LinkInfo& l) {
  return {{"speed_gts", l.current_gts ? json(*l.current_gts) : json(nullptr)},
          {"width", l.current_width ? json(*l.current_width) : json(nullptr)},
          {"max_speed_gts", l.max_gts ? json(*l.max_gts) : json(nullptr)},
          {"max_width", l.max_width ? json(*l.max_width) : json(nullptr)}};
}

std::vector<std::string> list(const std::map<std::string, std::set<std::string>>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? std::vector<std::string>{} : std::vector<std::string>(it->second.begin(), it->second.end());
}

// " on the paths of 0000:01:00.0 (pairs 0000:01:00.0-0000:41:00.0)" for a summary.
std::string where(const PathIndex& paths, const std::string& bdf) {
  std::string out;
  const auto ends = list(paths.endpoints, bdf);
  const auto pairs = list(paths.pairs, bdf);
  if (!pairs.empty()) {
    out = "; on " + std::to_string(pairs.size()) + (pairs.size() == 1 ? " P2P path: " : " P2P paths: ");
    for (std::size_t i = 0; i < pairs.size() && i < 4; ++i) { out += (i ? ", " : "") + pairs[i]; }
    if (pairs.size() > 4) { out += ", …"; }
  } else if (!ends.empty() && !(ends.size() == 1 && ends[0] == bdf)) {
    out = "; on the path of ";
    for (std::size_t i = 0; i < ends.size() && i < 4; ++i) { out += (i ? ", " : "") + ends[i]; }
  }
  return out;
}

std::string gts_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g GT/s", v);
  return b;
}
}  // namespace

std::string window_text(double s) {
  const auto n = static_cast<long>(std::llround(s));
  if (n % 3600 == 0 && n >= 3600) { return std::to_string(n / 3600) + "h"; }
  if (n % 60 == 0 && n >= 60) { return std::to_string(n / 60) + "m"; }
  return std::to_string(n) + "s";
}

std::string rate_text(double per_second) {
  char b[32];
  if (per_second < 1) {
    std::snprintf(b, sizeof b, "%.3g/min", per_second * 60);
  } else {
    std::snprintf(b, sizeof b, "%.4g/s", per_second);
  }
  return b;
}

std::string describe_rises(const std::map<std::string, std::uint64_t>& rises) {
  std::string out;
  for (const auto& [name, v] : rises) {
    if (!v) { continue; }
    out += (out.empty() ? "" : ", ") + name + " +" + std::to_string(v);
  }
  return out;
}

void HealthMonitor::update(const HealthSample& s, const PathIndex& paths) {
  ++passes_;
  findings_.clear();
  devices_ = json::array();
  assess_aer(s, paths);
  assess_link(s, paths);
  assess_nvlink(s, paths);
  assess_driver(s, paths);
  assess_xid(s, paths);
  assess_kernel(s, paths);
  window_.forget_stale(s.mono_s);
}

void HealthMonitor::assess_aer(const HealthSample& s, const PathIndex& paths) {
  for (const auto& d : s.devices) {
    json dj = {{"bdf", d.bdf},
               {"kind", d.kind},
               {"link", link_json(d.link)},
               {"pairs", list(paths.pairs, d.bdf)},
               {"on_paths_of", list(paths.endpoints, d.bdf)}};
    json aer = json::object();
    for (const auto& [sev, counts] : d.aer) {
      const std::string base = "aer/" + d.bdf + "/" + sev;
      window_.record(base, s.mono_s, counts.total);
      std::map<std::string, std::uint64_t> rises;
      for (const auto& [name, v] : counts.by_name) {
        window_.record(base + "/" + name, s.mono_s, v);
        rises[name] = window_.rise(base + "/" + name);
      }
      const std::uint64_t rise = window_.rise(base);
      const double span = window_.span(base), rate = rate_per_second(rise, span);
      const CounterLimit& limit = limits_.aer_limit(sev);
      aer[sev] = {{"total", counts.total}, {"rise", rise}, {"rate_per_s", rate}, {"by_name", counts.by_name}};
      // A few correctable errors are what healthy links show: judged by rate (thresholds.cpp).
      if (!over_limit(limit, rise, span)) { continue; }
      Finding f;
      f.check = "health.aer";
      f.subject = d.bdf;
      f.severity = limit.severity;
      const std::string named = describe_rises(rises);
      f.summary = std::to_string(rise) + " " + sev + " PCIe AER error" + (rise == 1 ? "" : "s") + " in the last " +
                  window_text(window_.window()) + " on " + d.kind + " " + d.bdf +
                  (named.empty() ? "" : " (" + named + ")") +
                  (limit.per_second > 0 ? ", " + rate_text(rate) + " (limit " + limit_text(limit) + ")" : "") +
                  where(paths, d.bdf);
      f.observed = {{"severity", sev},
                    {"rise", rise},
                    {"rate_per_s", rate},
                    {"total", counts.total},
                    {"rise_by_name", rises},
                    {"kind", d.kind},
                    {"pairs", list(paths.pairs, d.bdf)},
                    {"on_paths_of", list(paths.endpoints, d.bdf)}};
      f.expected = {{"rate_per_s_below", limit.per_second},
                    {"min_rise", limit.min_rise},
                    {"limit_source", limit.source},
                    {"window_s", window_.window()}};
      f.remediation =
          sev == "correctable"
              ? "Correctable errors are retried by the link and cost bandwidth; a steady rise points at the "
                "slot, riser, retimer or cable of this device's link: reseat it and watch the counter "
                "(/sys/bus/pci/devices/" +
                    d.bdf + "/aer_dev_correctable)"
              : "Uncorrectable errors can corrupt or drop P2P transfers: drain the node, check the kernel log "
                "for the AER report of " +
                    d.bdf + ", reseat or replace the card, riser or cable on this link";
      findings_.push_back(std::move(f));
    }
    dj["aer"] = d.aer.empty() ? json(nullptr) : aer;
    dj["aer_absent"] = d.aer_absent.empty() ? json(nullptr) : json(d.aer_absent);
    devices_.push_back(std::move(dj));
  }
}

void HealthMonitor::assess_link(const HealthSample& s, const PathIndex& paths) {
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    const auto& d = s.devices[i];
    const LinkInfo& l = d.link;
    std::vector<std::string> problems;
    if (l.current_width && l.max_width && *l.current_width<*l.max_width&& * l.current_width> 0) {
      problems.push_back("width x" + std::to_string(*l.current_width) + " of x" + std::to_string(*l.max_width));
    }
    // GPUs lower their link speed when idle: on a GPU's own link a low speed alone is not a finding.
    if (l.current_gts && l.max_gts && *l.current_gts < *l.max_gts && !d.link_idles) {
      problems.push_back("speed " + gts_text(*l.current_gts) + " of " + gts_text(*l.max_gts));
    }
    const bool degraded = !problems.empty();
    devices_[i]["link_degraded"] = degraded;
    if (!degraded) { continue; }
    Finding f;
    f.check = "health.link";
    f.subject = d.bdf;
    f.severity = Severity::warning;
    f.summary = "PCIe link of " + d.kind + " " + d.bdf + " runs below its maximum: " + problems.front() +
                (problems.size() > 1 ? ", " + problems[1] : "") + where(paths, d.bdf);
    f.observed = {{"link", link_json(l)},
                  {"kind", d.kind},
                  {"pairs", list(paths.pairs, d.bdf)},
                  {"on_paths_of", list(paths.endpoints, d.bdf)}};
    f.expected = {{"speed_gts", l.max_gts ? json(*l.max_gts) : json(nullptr)},
                  {"width", l.max_width ? json(*l.max_width) : json(nullptr)}};
    f.remediation =
        "A link that trained narrower or slower caps every P2P transfer through it: reseat the card, "
        "riser or cable, check the slot's bifurcation and PCIe speed settings in the BIOS";
    findings_.push_back(std::move(f));
  }
}

void HealthMonitor::assess_nvlink(const HealthSample& s, const PathIndex& paths) {
  nvlink_ = {{"read", s.agent.read},
             {"skipped", s.agent.skipped.empty() ? json(nullptr) : json(s.agent.skipped)},
             {"driver_version", s.agent.driver_version.empty() ? json(nullptr) : json(s.agent.driver_version)},
             {"gpus", json::array()}};
  if (!s.agent.read) { return; }
  for (const auto& g : s.agent.gpus) {
    json gj = {
        {"gpu", g.gpu}, {"problem", g.problem.empty() ? json(nullptr) : json(g.problem)}, {"links", json::array()}};
    int active = 0;
    for (const auto& l : g.links) {
      const std::string id = g.gpu + "/" + std::to_string(l.link);
      json errors = json::object(), rises = json::object(), rates = json::object();
      std::map<std::string, std::uint64_t> rose;  // the counters over their limits (thresholds.cpp)
      std::vector<std::string> over;
      Severity worst = Severity::warning;
      for (const auto& [name, v] : l.errors) {
        errors[name] = v ? json(*v) : json(nullptr);
        if (!v) { continue; }
        const std::string key = "nvlink/" + id + "/" + name;
        window_.record(key, s.mono_s, *v);
        const auto r = window_.rise(key);
        const double span = window_.span(key), rate = rate_per_second(r, span);
        rises[name] = r;
        rates[name] = rate;
        const CounterLimit* limit = limits_.nvlink_limit(name);
        if (!limit || !over_limit(*limit, r, span)) { continue; }
        rose[name] = r;
        over.push_back(name + " " + rate_text(rate) + " (limit " + limit_text(*limit) + ")");
        if (limit->severity == Severity::error) { worst = Severity::error; }
      }
      if (l.active) {
        ++active;
        links_seen_active_.insert(id);
      }
      gj["links"].push_back({{"link", l.link},
                             {"active", l.active},
                             {"remote", l.remote.empty() ? json(nullptr) : json(l.remote)},
                             {"errors", errors},
                             {"rise", rises},
                             {"rate_per_s", rates}});
      const bool went_down = !l.active && links_seen_active_.count(id);
      if (rose.empty() && !went_down) { continue; }
      Finding f;
      f.check = "health.nvlink";
      f.subject = g.gpu;
      f.severity = went_down ? Severity::error : worst;
      std::string rates_over;
      for (std::size_t i = 0; i < over.size(); ++i) { rates_over += (i ? ", " : "") + over[i]; }
      f.summary = "NVLink " + std::to_string(l.link) + " of GPU " + g.gpu +
                  (went_down ? " went down (it was active earlier)" : "") +
                  (!rose.empty() ? std::string(went_down ? "; " : ": ") + describe_rises(rose) +
                                       " errors in the last " + window_text(window_.window()) + ": " + rates_over
                                 : "") +
                  (l.remote.empty() ? "" : " (far end " + l.remote + ", the pair " + g.gpu + "-" + l.remote + ")") +
                  where(paths, g.gpu);
      json limits = json::object();
      for (const auto& [name, r] : rose) {
        if (const CounterLimit* limit = limits_.nvlink_limit(name)) {
          limits[name] = {
              {"rate_per_s_below", limit->per_second}, {"min_rise", limit->min_rise}, {"source", limit->source}};
        }
      }
      f.observed = {{"link", l.link},
                    {"active", l.active},
                    {"remote", l.remote},
                    {"errors", errors},
                    {"rise", rises},
                    {"rate_per_s", rates},
                    {"pairs", list(paths.pairs, g.gpu)}};
      f.expected = {{"active", true}, {"limits", limits}, {"window_s", window_.window()}};
      f.remediation =
          "NVLink replays and CRC errors cost bandwidth, recoveries stall transfers, corrected ECC errors far "
          "above a healthy link's rate say the link is going bad, a link that goes down sends peer traffic "
          "over PCIe: check `nvidia-smi nvlink -e -i <gpu>`, reseat the NVLink bridge or "
          "the board, reset the GPUs when idle; replace if the counters keep rising";
      findings_.push_back(std::move(f));
    }
    gj["active_links"] = active;
    nvlink_["gpus"].push_back(std::move(gj));
  }
}

void HealthMonitor::assess_xid(const HealthSample& s, const PathIndex& paths) {
  for (const auto& ev : s.xid.events) {
    if (ev.seq && last_xid_seq_ && *ev.seq <= *last_xid_seq_) {
      continue;  // read again (a file, or a reopen)
    }
    if (ev.seq) { last_xid_seq_ = *ev.seq; }
    xid_counts_[{ev.bdf, ev.xid}]++;
    if (limits_.xid_ignored.count(ev.xid)) {
      continue;  // the site's known noise: counted, never a finding
    }
    recent_xids_.push_back({ev, s.mono_s});
    if (recent_xids_.size() > kMaxRecentXids) {
      recent_xids_.pop_front();  // an Xid storm must not grow without bound
    }
  }
  auto age = [&](const SeenXid& x) {
    if (s.xid.uptime_s && x.ev.ts_us) { return *s.xid.uptime_s - static_cast<double>(*x.ev.ts_us) / 1e6; }
    return s.mono_s - x.seen_mono;
  };
  while (!recent_xids_.empty() && age(recent_xids_.front()) > window_.window()) { recent_xids_.pop_front(); }
  // Events are in log order; one with a late timestamp can sit behind an expired one: filter again.
  std::map<std::pair<std::string, int>, std::vector<const SeenXid*>> by;
  json recent = json::array();
  for (const auto& x : recent_xids_) {
    if (age(x) > window_.window()) { continue; }
    by[{x.ev.bdf, x.ev.xid}].push_back(&x);
    const XidInfo* info = find_xid(x.ev.xid);
    recent.push_back({{"gpu", x.ev.bdf},
                      {"xid", x.ev.xid},
                      {"name", info ? json(info->mnemonic) : json(nullptr)},
                      {"message", x.ev.message},
                      {"pid", x.ev.pid ? json(*x.ev.pid) : json(nullptr)},
                      {"process", x.ev.process},
                      {"age_s", std::round(age(x))}});
  }
  if (recent.size() > kShownXids) {
    recent.erase(recent.begin(), recent.end() - static_cast<std::ptrdiff_t>(kShownXids));
  }
  json counts = json::array();
  for (const auto& [k, n] : xid_counts_) {
    const XidInfo* info = find_xid(k.second);
    counts.push_back(
        {{"gpu", k.first}, {"xid", k.second}, {"name", info ? json(info->mnemonic) : json(nullptr)}, {"count", n}});
  }
  xid_ = {{"source", s.xid.source},
          {"problem", s.xid.problem.empty() ? json(nullptr) : json(s.xid.problem)},
          {"recent", recent},
          {"counts", counts}};
  for (const auto& [k, evs] : by) {
    const auto& [gpu, xid] = k;
    const XidInfo* info = find_xid(xid);
    const SeenXid& last = *evs.back();
    const bool known = paths.kind.count(gpu) > 0;
    Finding f;
    f.check = "health.xid";
    f.subject = gpu;
    const auto own = limits_.xid_severity.find(xid);  // the site's own severity for it, if set
    f.severity = own != limits_.xid_severity.end() ? own->second : info ? info->severity : Severity::warning;
    f.summary = "Xid " + std::to_string(xid) + " on GPU " + gpu + ": " +
                (info ? std::string(info->summary) : "not in p2pnode's table (see NVIDIA's Xid catalog)") + " (" +
                std::to_string(evs.size()) + "x in the last " + window_text(window_.window()) + ")" +
                (known ? where(paths, gpu) : "; not a GPU of the last discovery");
    json pids = json::array();
    for (const auto* e : evs) {
      if (e->ev.pid) { pids.push_back({{"pid", *e->ev.pid}, {"process", e->ev.process}}); }
    }
    f.observed = {{"xid", xid},
                  {"name", info ? json(info->mnemonic) : json(nullptr)},
                  {"area", info ? json(info->area) : json(nullptr)},
                  {"count", evs.size()},
                  {"last_message", last.ev.message},
                  {"processes", pids},
                  {"pairs", list(paths.pairs, gpu)}};
    f.expected = {{"xid_events", 0}, {"window_s", window_.window()}};
    f.remediation = std::string(info ? info->action : "look the Xid up in NVIDIA's catalog") +
                    " (NVIDIA's Xid catalog: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)";
    findings_.push_back(std::move(f));
  }
}

nlohmann::json HealthMonitor::view() const {
  json fs = json::array();
  for (const auto& f : findings_) { fs.push_back(to_json(f)); }
  return {{"window_s", window_.window()}, {"passes", passes_}, {"findings", fs},
          {"devices", devices_},          {"nvlink", nvlink_}, {"gpus", gpus_},
          {"p2p_status", p2p_status_},    {"xid", xid_}};
}

}  // namespace p2pnode::health
