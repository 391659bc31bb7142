#include "lifecycle/tree_rules.hpp"

#include <deque>
#include <map>

namespace p2pnode::lifecycle {
namespace {

// Linux follows at most 40 links resolving one path (ELOOP beyond).
constexpr int kMaxLinks = 40;
// Deeper than any source tree; a bound on the walk's recursion.
constexpr int kMaxTreeDepth = 64;

std::vector<std::string> path_parts(std::string_view p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= p.size()) {
    const auto j = std::min(p.find('/', i), p.size());
    if (j > i) { out.emplace_back(p.substr(i, j - i)); }
    i = j + 1;
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n && i < parts.size(); ++i) { out += (i ? "/" : "") + parts[i]; }
  return out;
}

struct Walk {
  const sys::SysRoot& root;
  std::string dir;
  std::vector<TreeMember> members;
  std::map<std::string, std::optional<std::string>> link_text;  // rel -> target (nullopt: not a link)

  std::optional<std::string> target_of(const std::string& rel) {
    if (auto it = link_text.find(rel); it != link_text.end()) { return it->second; }
    std::optional<std::string> t;
    const std::string p = sys::join(dir, rel);
    if (auto info = root.lstat(p); info && info->type == sys::FileType::symlink) {
      if (auto text = root.read_link(p)) { t = *text; }
    }
    link_text.emplace(rel, t);
    return t;
  }

  Status check_link(const std::string& rel, const std::string& target) {
    auto end = resolve_in_tree(rel, [this](const std::string& r) { return target_of(r); });
    if (end) { return {}; }
    return Error{"the symbolic link ./" + rel + " points to " + target + ", " + end.error().message};
  }

  Status walk(const std::string& rel, int depth) {
    if (depth > kMaxTreeDepth) {
      return Error{"./" + rel + " is nested more than " + std::to_string(kMaxTreeDepth) + " folders deep"};
    }
    for (const auto& name : root.list_dir(rel.empty() ? dir : sys::join(dir, rel))) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      if (rel.empty() && name == ".git") {
        continue;  // git's own files: never hashed, copied or staged
      }
      const auto info = root.lstat(sys::join(dir, child));
      if (!info) { return info.error(); }
      switch (info->type) {
        case sys::FileType::regular: members.push_back({"./" + child, TreeMember::Kind::file, ""}); break;
        case sys::FileType::directory:
          members.push_back({"./" + child, TreeMember::Kind::directory, ""});
          if (auto st = walk(child, depth + 1); !st) { return st; }
          break;
        case sys::FileType::symlink: {
          auto target = root.read_link(sys::join(dir, child));
          if (!target) { return target.error(); }
          link_text.emplace(child, *target);
          if (auto st = check_link(child, *target); !st) { return st; }
          members.push_back({"./" + child, TreeMember::Kind::link, *target});
          break;
        }
        case sys::FileType::missing: break;  // gone since the listing: not part of the tree
        default:
          return Error{"./" + child + " is " + std::string(sys::describe(info->type)) +
                       ": a tree holds only files, directories and symbolic links"};
      }
    }
    return {};
  }
};

}  // namespace

Result<LinkEnd> resolve_in_tree(const std::string& link, const LinkTextFn& target_of) {
  LinkEnd end;
  std::vector<std::string> at = path_parts(link);  // where we stand: starts at the link's folder
  const auto first = target_of(link);
  if (!first) {
    end.member = link;
    return end;
  }
  if (!at.empty()) { at.pop_back(); }
  std::deque<std::string> rest;
  // The tree moves (to the staging folder, to /usr/src): an absolute target never stays in it.
  auto take = [&](const std::string& text) {
    if (!text.empty() && text.front() == '/') { return false; }
    const auto parts = path_parts(text);
    rest.insert(rest.begin(), parts.begin(), parts.end());
    return true;
  };
  auto through = [&] {
    std::string s;
    for (const auto& f : end.followed) { s += (s.empty() ? "" : ", ") + f; }
    return s.empty() ? std::string() : " once " + s + (end.followed.size() == 1 ? " is" : " are") + " followed";
  };
  if (!take(*first)) { return Error{"outside the tree (an absolute path)"}; }
  int links = 1;
  while (!rest.empty()) {
    const std::string part = rest.front();
    rest.pop_front();
    if (part == ".") { continue; }
    if (part == "..") {
      if (at.empty()) { return Error{"outside the tree" + through()}; }
      at.pop_back();
      continue;
    }
    at.push_back(part);
    const std::string here = joined(at, at.size());
    const auto text = target_of(here);
    if (!text) {
      continue;  // a file, a folder or nothing: the rest of the path as written
    }
    if (++links > kMaxLinks) {
      return Error{"too many levels of symbolic links (more than " + std::to_string(kMaxLinks) +
                   " on the way: a loop?)"};
    }
    end.followed.push_back("./" + here + " -> " + *text);
    at.pop_back();
    if (!take(*text)) { return Error{"outside the tree" + through() + " (an absolute path)"}; }
  }
  end.member = joined(at, at.size());
  return end;
}

Result<std::vector<TreeMember>> walk_tree(const sys::SysRoot& root, std::string_view dir) {
  if (auto st = expect_real_dir(root, dir, "the tree"); !st) { return st.error(); }
  Walk w{root, std::string(dir), {}, {}};
  if (auto st = w.walk("", 0); !st) { return st.error(); }
  return std::move(w.members);
}

Status expect_real_dir(const sys::SysRoot& root, std::string_view path, std::string_view what) {
  const auto info = root.lstat(path);
  if (!info) { return info.error(); }
  if (info->type == sys::FileType::directory) { return {}; }
  if (info->type == sys::FileType::symlink) {
    const auto target = root.read_link(path);
    return Error{std::string(what) + " " + std::string(path) + " is a symbolic link (to " + target.value_or("?") +
                 "), not a folder: p2pnode writes only into a folder of its own tree"};
  }
  if (info->type == sys::FileType::missing) {
    return Error{std::string(what) + " " + std::string(path) + " does not exist"};
  }
  return Error{std::string(what) + " " + std::string(path) + " is " + std::string(sys::describe(info->type)) +
               ", not a folder"};
}

std::optional<std::string> special_archive_member(std::string_view listing) {
  std::size_t start = 0;
  while (start < listing.size()) {
    auto end = listing.find('\n', start);
    if (end == std::string_view::npos) { end = listing.size(); }
    const std::string_view line = listing.substr(start, end - start);
    start = end + 1;
    if (line.empty()) { continue; }
    // GNU tar's type letters: - regular, d folder, l link, h hard link (to an earlier member),
    // C contiguous (a regular file); c, b and p are devices and FIFOs.
    const char type = line.front();
    if (std::string_view("-dlhC").find(type) != std::string_view::npos) { continue; }
    // mode, owner/group, size (major,minor for a device), date, time, then the name.
    std::size_t pos = 0;
    for (int field = 0; field < 5 && pos < line.size(); ++field) {
      pos = line.find_first_not_of(' ', pos);
      pos = pos == std::string_view::npos ? line.size() : line.find(' ', pos);
      if (pos == std::string_view::npos) { pos = line.size(); }
    }
    pos = std::min(line.find_first_not_of(' ', pos), line.size());
    const std::string name(line.substr(pos));
    const std::string what = type == 'c'   ? "a character device"
                             : type == 'b' ? "a block device"
                             : type == 'p' ? "a FIFO"
                                           : std::string("a member of tar's type '") + type + "'";
    return (name.empty() ? std::string(line) : name) + " is " + what;
  }
  return std::nullopt;
}

}  // namespace p2pnode::lifecycle
