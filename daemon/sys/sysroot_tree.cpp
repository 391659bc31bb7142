// SysRoot's tree operations: what the module's life does to whole directories (staged sources,
// scratch copies, the core cache), each counted as one write when it changes something.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "sys/sysroot.hpp"

namespace p2pnode::sys {
namespace fs = std::filesystem;

namespace {
Error tree_error(const std::string& what, std::string_view path, const std::error_code& ec) {
  return Error{what + " " + std::string(path) + ": " + ec.message(), ec.value()};
}

// Host paths: the entries of `from` into `to`, .git left out.
Status copy_host_tree(const fs::path& from, const fs::path& to, std::string_view shown) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) { return tree_error("cannot create", shown, ec); }
  for (const auto& e : fs::directory_iterator(from, ec)) {
    if (e.path().filename() == ".git") { continue; }
    fs::copy(e.path(), to / e.path().filename(),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return Error{"cannot copy " + e.path().filename().string() + " into " + std::string(shown) + ": " + ec.message(),
                   ec.value()};
    }
  }
  if (ec) { return tree_error("cannot list", shown, ec); }
  return {};
}
std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ULL << 30) && bytes % (1ULL << 30) == 0) { return std::to_string(bytes >> 30) + " GiB"; }
  return std::to_string(bytes) + " bytes";
}
}  // namespace

Status SysRoot::read_stream(std::string_view path, std::uint64_t max_bytes, std::string_view what,
                            const std::function<void(std::span<const char>)>& chunk) const {
  const std::string shown(path);
  const int fd = ::open(host_path(path).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) { return Error{"cannot open " + shown + ": " + std::strerror(errno), errno}; }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) { return Error{"cannot stat " + shown + ": " + std::strerror(errno), errno}; }
  if (!S_ISREG(st.st_mode)) { return Error{shown + " is not a regular file: refusing to read it"}; }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Error{shown + " is " + std::to_string(st.st_size) + " bytes; " + std::string(what) + " is at most " +
                 size_text(max_bytes)};
  }
  std::vector<char> buf(1 << 16);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) { continue; }
    if (n < 0) { return Error{"reading " + shown + ": " + std::strerror(errno), errno}; }
    if (n == 0) { break; }
    total += static_cast<std::uint64_t>(n);
    if (total > max_bytes) { return Error{shown + " grew past " + size_text(max_bytes) + " while it was read"}; }
    chunk(std::span<const char>(buf.data(), static_cast<std::size_t>(n)));
  }
  return {};
}

Status SysRoot::remove_tree(std::string_view path) const {
  std::error_code ec;
  const fs::path host = host_path(path);
  if (!fs::exists(fs::symlink_status(host, ec))) { return {}; }
  ++writes_;
  fs::remove_all(host, ec);
  if (ec) { return tree_error("cannot remove", path, ec); }
  return {};
}

Status SysRoot::remove_empty_dir(std::string_view path) const {
  if (::rmdir(host_path(path).c_str()) == 0) {
    ++writes_;
    return {};
  }
  if (errno == ENOENT || errno == ENOTEMPTY || errno == EEXIST) { return {}; }
  return Error{"cannot remove the directory " + std::string(path) + ": " + std::strerror(errno), errno};
}

Status SysRoot::copy_tree(std::string_view from, std::string_view to) const {
  ++writes_;
  return copy_host_tree(host_path(from), host_path(to), to);
}

Status SysRoot::copy_file(std::string_view from, std::string_view to) const {
  ++writes_;
  std::error_code ec;
  const fs::path dest = host_path(to);
  if (fs::is_symlink(fs::symlink_status(dest, ec))) { fs::remove(dest, ec); }
  fs::copy_file(host_path(from), dest, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    return Error{"cannot copy " + std::string(from) + " to " + std::string(to) + ": " + ec.message(), ec.value()};
  }
  return {};
}

Status SysRoot::move_tree(std::string_view from, std::string_view to) const {
  ++writes_;
  std::error_code ec;
  const fs::path src = host_path(from), dest = host_path(to);
  fs::rename(src, dest, ec);
  if (!ec) { return {}; }
  const std::string both = std::string(from) + " to " + std::string(to);
  if (ec != std::errc::cross_device_link) { return Error{"cannot move " + both + ": " + ec.message(), ec.value()}; }
  ec.clear();
  if (fs::is_directory(fs::symlink_status(src, ec))) {
    if (auto st = copy_host_tree(src, dest, to); !st) { return st; }
  } else {
    fs::copy(src, dest, fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing, ec);
    if (ec) { return Error{"cannot copy " + both + ": " + ec.message(), ec.value()}; }
  }
  fs::remove_all(src, ec);
  if (ec) {
    return Error{"cannot remove " + std::string(from) + " after copying it to " + std::string(to) + ": " + ec.message(),
                 ec.value()};
  }
  return {};
}

Status SysRoot::strip_setid(std::string_view dir) const {
  std::error_code ec;
  bool changed = false;
  for (fs::recursive_directory_iterator it(host_path(dir), ec), end; !ec && it != end; it.increment(ec)) {
    const auto st = it->symlink_status(ec);
    if (ec || fs::is_symlink(st)) { continue; }
    if ((st.permissions() & (fs::perms::set_uid | fs::perms::set_gid)) != fs::perms::none) {
      changed = true;
      fs::permissions(it->path(), fs::perms::set_uid | fs::perms::set_gid, fs::perm_options::remove, ec);
      if (ec) {
        return Error{"cannot clear the set-id bits of " + it->path().filename().string() + " under " +
                         std::string(dir) + ": " + ec.message(),
                     ec.value()};
      }
    }
  }
  if (changed) { ++writes_; }
  if (ec) { return tree_error("cannot list", dir, ec); }
  return {};
}

Status SysRoot::touch(std::string_view path) const {
  ++writes_;
  std::error_code ec;
  fs::last_write_time(host_path(path), fs::file_time_type::clock::now(), ec);
  if (ec) { return tree_error("cannot set the time of", path, ec); }
  return {};
}

Result<std::ofstream> SysRoot::open_log(std::string_view path) const {
  ++writes_;
  std::ofstream out(host_path(path), std::ios::trunc);
  if (!out) { return Error{"cannot open " + std::string(path) + " for writing"}; }
  return out;
}

}  // namespace p2pnode::sys
