#include "pci/config_space.hpp"

#include <set>

namespace p2pnode::pci {

std::optional<std::uint16_t> read16(Bytes cfg, std::size_t off) {
  if (off + 2 > cfg.size()) { return std::nullopt; }
  return static_cast<std::uint16_t>(cfg[off] | (cfg[off + 1] << 8));
}

std::optional<std::uint32_t> read32(Bytes cfg, std::size_t off) {
  if (off + 4 > cfg.size()) { return std::nullopt; }
  return static_cast<std::uint32_t>(cfg[off]) | (static_cast<std::uint32_t>(cfg[off + 1]) << 8) |
         (static_cast<std::uint32_t>(cfg[off + 2]) << 16) | (static_cast<std::uint32_t>(cfg[off + 3]) << 24);
}

std::optional<std::size_t> find_capability(Bytes cfg, std::uint8_t id) {
  const auto status = read16(cfg, 0x06);
  if (!status || !(*status & 0x10)) {
    return std::nullopt;  // no capability list
  }
  std::size_t ptr = cfg.size() > 0x34 ? cfg[0x34] & 0xFC : 0;
  std::set<std::size_t> seen;  // a looping list must not hang us
  while (ptr >= 0x40 && ptr + 2 <= cfg.size() && seen.insert(ptr).second) {
    if (cfg[ptr] == id) { return ptr; }
    ptr = cfg[ptr + 1] & 0xFC;
  }
  return std::nullopt;
}

bool ext_caps_hidden(Bytes cfg) {
  // Virtualised config spaces zero the IDs of the capabilities they mask but keep version and
  // next pointers (the recorded H100 shows LTR and AER yet masks ReBAR): one masked header, or no
  // readable header at all, means an absent capability proves nothing.
  std::size_t ptr = 0x100;
  std::set<std::size_t> seen;
  bool any = false;
  while (ptr >= 0x100 && ptr + 4 <= cfg.size() && seen.insert(ptr).second) {
    const auto h = read32(cfg, ptr);
    if (!h || *h == 0 || *h == 0xFFFFFFFF) { break; }
    if ((*h & 0xFFFF) == 0) { return true; }
    any = true;
    ptr = (*h >> 20) & 0xFFC;
  }
  return !any;
}

std::optional<std::size_t> find_ext_capability(Bytes cfg, std::uint16_t id) {
  std::size_t ptr = 0x100;
  std::set<std::size_t> seen;
  while (ptr >= 0x100 && ptr + 4 <= cfg.size() && seen.insert(ptr).second) {
    const auto h = read32(cfg, ptr);
    if (!h || *h == 0 || *h == 0xFFFFFFFF) { return std::nullopt; }
    if ((*h & 0xFFFF) == id && id != 0) { return ptr; }
    ptr = (*h >> 20) & 0xFFC;
  }
  return std::nullopt;
}

std::optional<int> decode_pm_state(Bytes cfg) {
  const auto cap = find_capability(cfg, kCapPm);
  if (!cap) { return std::nullopt; }
  const auto pmcsr = read16(cfg, *cap + 4);
  if (!pmcsr) { return std::nullopt; }
  return *pmcsr & 0x3;
}

std::optional<std::uint16_t> decode_command(Bytes cfg) { return read16(cfg, 0x04); }

std::optional<double> link_speed_gts(int encoding) {
  static constexpr double kSpeeds[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  if (encoding < 1 || encoding > 6) { return std::nullopt; }
  return kSpeeds[encoding];
}

LinkInfo decode_pcie_link(Bytes cfg) {
  LinkInfo l;
  const auto cap = find_capability(cfg, kCapPcie);
  if (!cap) { return l; }
  if (const auto lnkcap = read32(cfg, *cap + 0x0C)) {
    l.max_gts = link_speed_gts(static_cast<int>(*lnkcap & 0xF));
    l.max_width = static_cast<int>((*lnkcap >> 4) & 0x3F);
  }
  if (const auto lnksta = read16(cfg, *cap + 0x12)) {
    l.current_gts = link_speed_gts(*lnksta & 0xF);
    l.current_width = (*lnksta >> 4) & 0x3F;
  }
  return l;
}

std::vector<RebarEntry> decode_rebar(Bytes cfg) {
  std::vector<RebarEntry> out;
  const auto cap = find_ext_capability(cfg, kExtCapRebar);
  if (!cap) { return out; }
  const auto first_ctrl = read32(cfg, *cap + 8);
  if (!first_ctrl) { return out; }
  const unsigned count = (*first_ctrl >> 5) & 0x7;  // number of resizable BARs, in entry 0
  for (unsigned i = 0; i < count && i < 6; ++i) {
    const auto capability = read32(cfg, *cap + 4 + 8 * i);
    const auto control = read32(cfg, *cap + 8 + 8 * i);
    if (!capability || !control) { break; }
    RebarEntry e;
    e.bar = static_cast<int>(*control & 0x7);
    // Capability bits 4..31: bit n = 2^(n+16) bytes, i.e. bit 4 = 1 MiB; sizes above 128 TB
    // live in the control register's upper bits 16..31 (bit 16 = 256 TB… rare, ignored).
    e.supported_mask = (*capability >> 4) & 0x0FFFFFFF;
    const unsigned cur = (*control >> 8) & 0x3F;
    e.current_size = cur + 20 < 64 ? 1ULL << (cur + 20) : 0;
    out.push_back(e);
  }
  return out;
}

std::optional<AcsInfo> decode_acs(Bytes cfg) {
  const auto cap = find_ext_capability(cfg, kExtCapAcs);
  if (!cap) { return std::nullopt; }
  const auto capability = read16(cfg, *cap + 4);
  const auto control = read16(cfg, *cap + 6);
  if (!capability || !control) { return std::nullopt; }
  return AcsInfo{*capability, *control, static_cast<int>(*cap)};
}

}  // namespace p2pnode::pci
