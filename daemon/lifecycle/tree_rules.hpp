#pragma once
// What a source tree may hold, wherever it came from (a path:, a git checkout, an unpacked
// tarball): one rule, applied where the tree's sha256 is computed and again to the staged tree
// before p2pnode writes into it or hands it to DKMS. A tree holds regular files, directories and
// symbolic links only, and every link, followed through each link on its way (as the kernel
// resolves it, not by its text), stays inside the tree.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/sysroot.hpp"

namespace p2pnode::lifecycle {

struct TreeMember {
  enum class Kind { file, directory, link };
  std::string path;  // "./a/b.c", relative to the tree
  Kind kind = Kind::file;
  std::string target;  // a link's text
};

// Every member of the tree under `dir` (in-root), in walk order, each held to the rule above; the
// top .git/ is left out (git's own files, never copied or hashed). The error names the member and
// why: "./dev0 is a character device", "the symbolic link ./a/q points to p/../.., outside the tree
// once ./a/p -> .. is followed". `dir` itself must be a directory, not a link to one.
Result<std::vector<TreeMember>> walk_tree(const sys::SysRoot& root, std::string_view dir);

// Where a link of a tree leads, every link on the way followed, as path resolution does (pure).
// `link` is the link's path relative to the tree ("a/b/q1"); `target_of` gives a member's link text,
// nullopt for a member that is not a link (or is missing: the rest of the path is then taken as
// written). The answer is the member it leads to, relative ("" for the tree itself), or an error: an
// absolute target, a ".." above the tree, or more than 40 links (the kernel's ELOOP).
using LinkTextFn = std::function<std::optional<std::string>(const std::string& rel)>;
struct LinkEnd {
  std::string member;                 // where it leads
  std::vector<std::string> followed;  // "./a/b/p -> ..": the other links on the way
};
Result<LinkEnd> resolve_in_tree(const std::string& link, const LinkTextFn& target_of);

// A folder p2pnode writes into (the staging folder, the tree's patches/): a directory itself, not a
// link to one. `what` names it in the error.
Status expect_real_dir(const sys::SysRoot& root, std::string_view path, std::string_view what);

// GNU tar's verbose listing (`tar -tvf ARCHIVE --quoting-style=escape`, one member a line, its mode
// first): the first member that is not a file, a directory or a link, as "p2ptest-1.5/sda is a
// character device"; nullopt when every member is one of those. Pure.
std::optional<std::string> special_archive_member(std::string_view listing);

}  // namespace p2pnode::lifecycle
