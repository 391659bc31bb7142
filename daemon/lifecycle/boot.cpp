#include "lifecycle/boot.hpp"

#include <algorithm>
#include <cctype>

#include "core/text.hpp"

namespace p2pnode::lifecycle {
namespace {

struct Entry {
  std::string title, id, kernel;  // kernel: release from the linux line
  std::vector<Entry> children;    // a submenu's entries
  bool submenu = false;
};

std::string_view trim(std::string_view s) { return p2pnode::trim(s, kSpaces); }

// Words of a grub.cfg line, with '…' and "…" quoting removed.
std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) { out.push_back(cur); }
      cur.clear();
      in_word = false;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (in_word) { out.push_back(cur); }
  return out;
}

std::string release_of(const std::string& image) {
  const auto pos = image.rfind("/vmlinuz-");
  if (pos == std::string::npos) { return {}; }
  return image.substr(pos + 9);
}

// Parses menuentry/submenu blocks (nested by braces) into entries.
std::vector<Entry> parse_entries(const std::vector<std::string_view>& lines, std::size_t& i, int depth) {
  std::vector<Entry> out;
  while (i < lines.size()) {
    const auto line = trim(lines[i]);
    ++i;
    if (line == "}") {
      if (depth > 0) { return out; }
      continue;
    }
    const auto w = words(line);
    if (w.empty()) { continue; }
    if ((w[0] == "menuentry" || w[0] == "submenu") && line.back() == '{') {
      Entry e;
      e.submenu = w[0] == "submenu";
      if (w.size() > 1) { e.title = w[1]; }
      for (std::size_t k = 2; k + 1 < w.size(); ++k) {
        if (w[k] == "$menuentry_id_option" || w[k] == "--id") { e.id = w[k + 1]; }
      }
      if (e.submenu) {
        e.children = parse_entries(lines, i, depth + 1);
      } else {
        int braces = 1;
        while (i < lines.size() && braces > 0) {
          const auto l = trim(lines[i]);
          ++i;
          if (l == "}") {
            --braces;
            continue;
          }
          const auto lw = words(l);
          if (lw.size() >= 2 && (lw[0] == "linux" || lw[0] == "linuxefi") && e.kernel.empty()) {
            e.kernel = release_of(lw[1]);
          }
          if (!l.empty() && l.back() == '{') { ++braces; }
        }
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

const Entry* pick(const std::vector<Entry>& entries, std::string_view key) {
  if (!key.empty() &&
      std::all_of(key.begin(), key.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    const auto n = std::stoul(std::string(key));
    return n < entries.size() ? &entries[n] : nullptr;
  }
  for (const auto& e : entries) {
    if (e.id == key || e.title == key) { return &e; }
  }
  return nullptr;
}

// "1>2", "gnulinux-advanced-…>gnulinux-6.1.0-56-amd64-advanced-…", "0", a title.
const Entry* resolve(const std::vector<Entry>& top, std::string_view def) {
  const std::vector<Entry>* level = &top;
  const Entry* e = nullptr;
  while (true) {
    const auto gt = def.find('>');
    e = pick(*level, def.substr(0, gt));
    if (!e) { return nullptr; }
    if (gt == std::string_view::npos) { break; }
    if (!e->submenu) { return nullptr; }
    level = &e->children;
    def.remove_prefix(gt + 1);
  }
  if (e->submenu) {
    return e->children.empty() ? nullptr : &e->children.front();  // GRUB opens the submenu's first
  }
  return e;
}

std::string grubenv_value(std::string_view env, std::string_view key) {
  std::size_t pos = 0;
  while (pos < env.size()) {
    const auto nl = env.find('\n', pos);
    const auto line = env.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.substr(0, key.size() + 1) == std::string(key) + "=") { return std::string(line.substr(key.size() + 1)); }
    if (nl == std::string_view::npos) { break; }
    pos = nl + 1;
  }
  return {};
}

std::vector<std::string_view> lines_of(std::string_view cfg) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos <= cfg.size()) {
    const auto nl = cfg.find('\n', pos);
    lines.push_back(cfg.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    if (nl == std::string_view::npos) { break; }
    pos = nl + 1;
  }
  return lines;
}

std::vector<Entry> parse_cfg(std::string_view cfg) {
  std::size_t i = 0;
  return parse_entries(lines_of(cfg), i, 0);
}

// Depth-first: the first entry booting `kernel` that is not a recovery entry, as a path.
std::optional<std::string> find_path(const std::vector<Entry>& entries, std::string_view kernel) {
  for (const auto& e : entries) {
    const std::string name = e.id.empty() ? e.title : e.id;
    if (e.submenu) {
      if (auto sub = find_path(e.children, kernel)) { return name + ">" + *sub; }
    } else if (e.kernel == kernel && e.title.find("recovery mode") == std::string::npos) {
      return name;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> grub_entry_for(std::string_view grub_cfg, std::string_view kernel) {
  return find_path(parse_cfg(grub_cfg), kernel);
}

int compare_releases(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      unsigned long long x = 0, y = 0;
      while (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i]))) {
        x = x * 10 + static_cast<unsigned>(a[i++] - '0');
      }
      while (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j]))) {
        y = y * 10 + static_cast<unsigned>(b[j++] - '0');
      }
      if (x != y) { return x < y ? -1 : 1; }
      continue;
    }
    if (a[i] != b[j]) { return a[i] < b[j] ? -1 : 1; }
    ++i;
    ++j;
  }
  if (i < a.size()) { return 1; }
  if (j < b.size()) { return -1; }
  return 0;
}

std::optional<BootChoice> grub_default_kernel(std::string_view cfg, std::string_view env) {
  const auto lines = lines_of(cfg);
  // The last top-level `set default=` before the first entry wins (Debian writes it once, or in
  // an `if [ "${next_entry}" ]` block whose else branch sets "0" or "${saved_entry}").
  std::string def = "0", def_line = "(no set default: entry 0)";
  std::string next_entry = grubenv_value(env, "next_entry");
  for (const auto& raw : lines) {
    const auto l = trim(raw);
    if (l.rfind("menuentry ", 0) == 0 || l.rfind("submenu ", 0) == 0) { break; }
    if (l.rfind("set default=", 0) != 0) { continue; }
    const auto w = words(l.substr(4));
    std::string v = w.empty() ? std::string() : w[0].substr(std::string("default=").size());
    if (v == "${next_entry}") {
      continue;  // used only when grubenv has next_entry (handled below)
    }
    def_line = "set default=\"" + v + "\"";
    if (v == "${saved_entry}") {
      v = grubenv_value(env, "saved_entry");
      def_line += " (grubenv saved_entry=" + v + ")";
      if (v.empty()) { v = "0"; }
    }
    def = v;
  }
  if (!next_entry.empty()) {
    def = next_entry;
    def_line = "grubenv next_entry=" + next_entry + " (grub-reboot)";
  }
  std::size_t i = 0;
  const auto entries = parse_entries(lines, i, 0);
  const Entry* e = resolve(entries, def);
  if (!e || e->kernel.empty()) { return std::nullopt; }
  return BootChoice{e->kernel, "grub.cfg " + def_line + " -> '" + e->title + "' (/boot/vmlinuz-" + e->kernel + ")"};
}

std::vector<std::string> installed_kernels(const sys::SysRoot& root) {
  std::vector<std::string> out;
  for (const auto& k : root.list_dir("/lib/modules")) {
    const std::string d = sys::join("/lib/modules", k);
    if (root.is_dir(sys::join(d, "kernel")) || root.exists(sys::join(d, "modules.dep")) ||
        root.is_dir(sys::join(d, "build"))) {
      out.push_back(k);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return compare_releases(a, b) > 0; });
  return out;
}

BootChoice next_boot_kernel(const sys::SysRoot& root) {
  const auto kernels = installed_kernels(root);
  auto installed = [&](const std::string& k) { return std::find(kernels.begin(), kernels.end(), k) != kernels.end(); };
  std::string why_not;
  if (auto cfg = root.read_text("/boot/grub/grub.cfg", 4 << 20)) {
    const auto env = root.read_text("/boot/grub/grubenv", 1 << 16).value_or("");
    if (auto c = grub_default_kernel(*cfg, env)) {
      if (installed(c->kernel)) { return *c; }
      why_not = "grub.cfg's default is " + c->kernel + ", which has no /lib/modules directory; ";
    } else {
      why_not = "grub.cfg's default entry does not name a /boot/vmlinuz-<release>; ";
    }
  }
  std::vector<std::string> images;
  for (const auto& f : root.list_dir("/boot")) {
    if (f.rfind("vmlinuz-", 0) == 0 && installed(f.substr(8))) { images.push_back(f.substr(8)); }
  }
  std::sort(images.begin(), images.end(), [](const auto& a, const auto& b) { return compare_releases(a, b) > 0; });
  if (!images.empty()) { return {images.front(), why_not + "the newest /boot/vmlinuz-* (" + images.front() + ")"}; }
  if (!kernels.empty()) {
    return {kernels.front(), why_not + "no /boot/vmlinuz-*: the newest /lib/modules/" + kernels.front()};
  }
  return {"", why_not + "no kernel in /lib/modules"};
}

}  // namespace p2pnode::lifecycle
