#pragma once
// SysRoot: every read or write of /sys, /proc, /dev, /etc, /lib/modules, /usr/src and
// /var/lib/p2pnode goes through one of these. Production uses "/", tests a recorded tree,
// the VM harness a real kernel. Paths given to it are absolute *inside* the root.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace p2pnode::sys {

// What a path is, by lstat(2): a link is itself, never what it points to.
enum class FileType { missing, regular, directory, symlink, character_device, block_device, fifo, socket, unknown };
struct FileInfo {
  FileType type = FileType::missing;
  std::uint64_t size = 0;                      // st_size: a file's bytes, a link's target length
  std::filesystem::file_time_type modified{};  // st_mtime
};
// "a regular file", "a character device", "a FIFO", … for messages.
std::string_view describe(FileType t);

class SysRoot {
 public:
  explicit SysRoot(std::filesystem::path root = "/");

  const std::filesystem::path& root() const { return root_; }
  // Host path of an in-root absolute path ("/sys/bus/pci" -> "<root>/sys/bus/pci").
  std::filesystem::path host_path(std::string_view path) const;

  // ---- reads ----
  bool exists(std::string_view path) const;
  bool is_dir(std::string_view path) const;
  // Whole text file, at most max_bytes (sysfs attributes are small; bounded anyway).
  Result<std::string> read_text(std::string_view path, std::size_t max_bytes = 1 << 20) const;
  // read_text with trailing whitespace removed.
  Result<std::string> read_attr(std::string_view path) const;
  Result<std::vector<std::uint8_t>> read_bytes(std::string_view path, std::size_t max_bytes = 1 << 20) const;
  // Raw target of a symlink as stored ("../../../devices/…").
  Result<std::string> read_link(std::string_view path) const;
  // Canonical in-root path with every link resolved; an error if it leaves the root.
  Result<std::string> resolve(std::string_view path) const;
  // One symlink followed lexically: its target joined to the link's directory and normalised.
  // For sysfs device links (/sys/bus/pci/devices/<bdf> -> ../../../devices/…), whose targets
  // hold no further links; one readlink instead of canonical()'s one per component.
  Result<std::string> resolve_link(std::string_view path) const;
  // The path itself, a link not followed (lstat); type missing when it does not exist, an error
  // when it cannot be told (a component not searchable).
  Result<FileInfo> lstat(std::string_view path) const;
  // A regular file read to its end in chunks (a digest of a large artifact): opened without
  // following a link or blocking (a FIFO never hangs it), judged on the descriptor, refused above
  // max_bytes ("<path> is N bytes; <what> is at most 8 GiB"), and refused if it grows past that.
  Status read_stream(std::string_view path, std::uint64_t max_bytes, std::string_view what,
                     const std::function<void(std::span<const char>)>& chunk) const;
  // Entry names of a directory, sorted; empty when it does not exist.
  std::vector<std::string> list_dir(std::string_view path) const;

  // ---- writes (each counted, so tests and `apply` can prove a no-op) ----
  // One write(2) of the whole value, as sysfs attributes want it (no temp file, no truncate).
  Status write_attr(std::string_view path, std::string_view value) const;
  // pwrite at an offset (PCI config space read-modify-write).
  Status write_bytes_at(std::string_view path, std::uint64_t offset, std::span<const std::uint8_t> bytes) const;
  // Regular files we own: temp file, fsync, rename, fsync of the directory; never half-written.
  Status write_file_atomic(std::string_view path, std::string_view content,
                           std::filesystem::perms mode = std::filesystem::perms(0644)) const;
  Status make_dirs(std::string_view path) const;
  Status remove_file(std::string_view path) const;
  // rename(2) inside the root: one entry moved, never copied (both paths on the root's filesystem).
  Status move(std::string_view from, std::string_view to) const;

  // ---- trees (sysroot_tree.cpp; each call that changes something counted once) ----
  // A file or a whole tree removed; nothing to do, and nothing counted, when it is missing.
  Status remove_tree(std::string_view path) const;
  // rmdir(2): a directory removed only if it is empty (another build's work beside ours is never
  // taken); not there or not empty is no error and not counted.
  Status remove_empty_dir(std::string_view path) const;
  // The tree under `from` into `to` (created): .git left out, links copied as links, files overwritten.
  Status copy_tree(std::string_view from, std::string_view to) const;
  // One file copied over whatever `to` was (a link there is replaced, not followed).
  Status copy_file(std::string_view from, std::string_view to) const;
  // rename(2), or where the two are on different mounts (EXDEV: the units' ProtectSystem=strict makes
  // /usr, /lib/modules and /var/lib each its own bind mount) a copy, then the original removed.
  Status move_tree(std::string_view from, std::string_view to) const;
  // Clears the set-user-id and set-group-id bits of every file under `dir` (links not followed).
  Status strip_setid(std::string_view dir) const;
  // The modification time set to now (a cache entry's last use).
  Status touch(std::string_view path) const;
  // A file truncated and opened for a stream of lines (a build log another thread reads as it grows).
  Result<std::ofstream> open_log(std::string_view path) const;

  std::uint64_t write_count() const { return writes_; }

 private:
  std::filesystem::path root_;
  bool is_real_root_;
  mutable std::uint64_t writes_ = 0;
};

// Joins in-root path pieces: join("/sys/bus/pci/devices", bdf, "driver").
std::string join(std::string_view a, std::string_view b);
template <typename... Rest>
std::string join(std::string_view a, std::string_view b, Rest&&... rest) {
  return join(join(a, b), std::forward<Rest>(rest)...);
}

}  // namespace p2pnode::sys
