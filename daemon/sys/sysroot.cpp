#include "sys/sysroot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <system_error>

namespace p2pnode::sys {
namespace fs = std::filesystem;

namespace {
Error errno_error(const std::string& what, const fs::path& p, int err) {
  return Error{what + " " + p.string() + ": " + std::strerror(err), err};
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) { ::close(fd_); }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};
}  // namespace

SysRoot::SysRoot(fs::path root) : root_(fs::absolute(std::move(root)).lexically_normal()) {
  std::string s = root_.string();
  while (s.size() > 1 && s.back() == '/') { s.pop_back(); }
  root_ = s;
  is_real_root_ = (s == "/");
}

fs::path SysRoot::host_path(std::string_view path) const {
  std::string_view rel = path;
  while (!rel.empty() && rel.front() == '/') { rel.remove_prefix(1); }
  if (is_real_root_) { return fs::path("/") / rel; }
  return root_ / rel;
}

bool SysRoot::exists(std::string_view path) const {
  std::error_code ec;
  return fs::exists(fs::symlink_status(host_path(path), ec)) && !ec;
}

bool SysRoot::is_dir(std::string_view path) const {
  std::error_code ec;
  return fs::is_directory(host_path(path), ec);
}

namespace {
// Reads up to max_bytes. short_read_is_eof: a read that returns less than asked ends the file.
// True of sysfs attributes (the kernel formats the whole value in one go, at most a page) and
// of regular files; it saves the second read() that only finds EOF (~1,700 syscalls per check).
Result<std::vector<std::uint8_t>> read_fd(int fd, std::string_view path, std::size_t max_bytes,
                                          bool short_read_is_eof) {
  std::vector<std::uint8_t> out;
  std::uint8_t buf[8192];
  while (out.size() < max_bytes) {
    const std::size_t want = std::min(sizeof buf, max_bytes - out.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) { continue; }
      return errno_error("cannot read", path, errno);
    }
    if (n == 0) { break; }
    out.insert(out.end(), buf, buf + n);
    if (short_read_is_eof && static_cast<std::size_t>(n) < want) { break; }
  }
  return out;
}
// Opens for reading without ever blocking in open(): O_NONBLOCK, then fstat. A FIFO or a socket is
// refused (a recorded root may hold one where a file belongs; reading it would wait for a writer
// forever); regular files, directories' files and devices are read as before (blocking again).
Result<int> open_for_reading(const fs::path& p, std::string_view path) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) { return errno_error("cannot open", path, errno); }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return errno_error("cannot stat", path, e);
  }
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
    ::close(fd);
    return Error{std::string(path) + " is a " + (S_ISFIFO(st.st_mode) ? "FIFO (named pipe)" : "socket") +
                     ", not a file: not read (it could block forever)",
                 EINVAL};
  }
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}
}  // namespace

Result<std::vector<std::uint8_t>> SysRoot::read_bytes(std::string_view path, std::size_t max_bytes) const {
  auto opened = open_for_reading(host_path(path), path);
  if (!opened) { return opened.error(); }
  Fd fd(*opened);
  return read_fd(fd.get(), path, max_bytes, false);
}

Result<std::string> SysRoot::read_text(std::string_view path, std::size_t max_bytes) const {
  auto bytes = read_bytes(path, max_bytes);
  if (!bytes) { return bytes.error(); }
  return std::string(bytes->begin(), bytes->end());
}

Result<std::string> SysRoot::read_attr(std::string_view path) const {
  auto opened = open_for_reading(host_path(path), path);
  if (!opened) { return opened.error(); }
  Fd fd(*opened);
  auto bytes = read_fd(fd.get(), path, 64 * 1024, path.substr(0, 5) == "/sys/");
  if (!bytes) { return bytes.error(); }
  std::string s(bytes->begin(), bytes->end());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\0')) { s.pop_back(); }
  return s;
}

Result<std::string> SysRoot::read_link(std::string_view path) const {
  std::error_code ec;
  fs::path target = fs::read_symlink(host_path(path), ec);
  if (ec) { return Error{"cannot read link " + std::string(path) + ": " + ec.message(), ec.value()}; }
  return target.string();
}

Result<std::string> SysRoot::resolve(std::string_view path) const {
  std::error_code ec;
  fs::path c = fs::canonical(host_path(path), ec);
  if (ec) { return Error{"cannot resolve " + std::string(path) + ": " + ec.message(), ec.value()}; }
  if (is_real_root_) { return c.string(); }
  const std::string cs = c.string(), rs = root_.string();
  if (cs == rs) { return std::string("/"); }
  if (cs.compare(0, rs.size(), rs) != 0 || cs[rs.size()] != '/') {
    return Error{"link " + std::string(path) + " leaves the root " + rs + " (" + cs + ")", 0};
  }
  return cs.substr(rs.size());
}

Result<std::string> SysRoot::resolve_link(std::string_view path) const {
  auto target = read_link(path);
  if (!target) {
    return resolve(path);  // not a link: the slow, general way
  }
  fs::path in_root =
      fs::path(*target).is_absolute() ? fs::path(*target) : (fs::path(std::string(path)).parent_path() / *target);
  in_root = in_root.lexically_normal();
  const std::string s = in_root.string();
  if (s.rfind("/..", 0) == 0 || s.empty() || s[0] != '/') {
    return Error{"link " + std::string(path) + " leaves the root (" + *target + ")", 0};
  }
  // An absolute target of a recorded tree would point outside it: take the general way.
  if (fs::path(*target).is_absolute() && !is_real_root_) { return resolve(path); }
  return s;
}

std::string_view describe(FileType t) {
  switch (t) {
    case FileType::missing: return "missing";
    case FileType::regular: return "a regular file";
    case FileType::directory: return "a directory";
    case FileType::symlink: return "a symbolic link";
    case FileType::character_device: return "a character device";
    case FileType::block_device: return "a block device";
    case FileType::fifo: return "a FIFO";
    case FileType::socket: return "a socket";
    case FileType::unknown: break;
  }
  return "a file of an unknown type";
}

Result<FileInfo> SysRoot::lstat(std::string_view path) const {
  struct stat st {};
  if (::lstat(host_path(path).c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) { return FileInfo{}; }
    return errno_error("cannot lstat", path, errno);
  }
  FileInfo info;
  info.size = static_cast<std::uint64_t>(st.st_size);
  info.modified = std::filesystem::file_time_type::clock::from_sys(
      std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec))));
  switch (st.st_mode & S_IFMT) {
    case S_IFREG: info.type = FileType::regular; break;
    case S_IFDIR: info.type = FileType::directory; break;
    case S_IFLNK: info.type = FileType::symlink; break;
    case S_IFCHR: info.type = FileType::character_device; break;
    case S_IFBLK: info.type = FileType::block_device; break;
    case S_IFIFO: info.type = FileType::fifo; break;
    case S_IFSOCK: info.type = FileType::socket; break;
    default: info.type = FileType::unknown; break;
  }
  return info;
}

std::vector<std::string> SysRoot::list_dir(std::string_view path) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(host_path(path), ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status SysRoot::write_attr(std::string_view path, std::string_view value) const {
  ++writes_;
  const fs::path p = host_path(path);
  Fd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC | (is_real_root_ ? 0 : O_TRUNC)));
  if (fd.get() < 0) { return errno_error("cannot open for writing", path, errno); }
  const ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) { return errno_error("write of '" + std::string(value) + "' to", path, errno); }
  if (static_cast<std::size_t>(n) != value.size()) { return Error{"short write to " + std::string(path), 0}; }
  return {};
}

Status SysRoot::write_bytes_at(std::string_view path, std::uint64_t offset, std::span<const std::uint8_t> bytes) const {
  ++writes_;
  const fs::path p = host_path(path);
  Fd fd(::open(p.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) { return errno_error("cannot open for writing", path, errno); }
  const ssize_t n = ::pwrite(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(offset));
  if (n < 0) { return errno_error("pwrite to", path, errno); }
  if (static_cast<std::size_t>(n) != bytes.size()) { return Error{"short pwrite to " + std::string(path), 0}; }
  return {};
}

Status SysRoot::write_file_atomic(std::string_view path, std::string_view content, fs::perms mode) const {
  ++writes_;
  const fs::path p = host_path(path);
  const fs::path dir = p.parent_path();
  std::string tmpl = (dir / ("." + p.filename().string() + ".XXXXXX")).string();
  Fd fd(::mkstemp(tmpl.data()));
  if (fd.get() < 0) { return errno_error("cannot create a temporary file in", dir, errno); }
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    return errno_error(what, path, err);
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) { continue; }
      return fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) { return fail("cannot chmod"); }
  if (::fsync(fd.get()) != 0) { return fail("cannot fsync"); }
  ::close(fd.release());
  if (::rename(tmpl.c_str(), p.c_str()) != 0) { return fail("cannot rename into"); }
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0) { ::fsync(dfd.get()); }
  return {};
}

Status SysRoot::make_dirs(std::string_view path) const {
  std::error_code ec;
  if (fs::is_directory(host_path(path), ec)) { return {}; }
  ++writes_;
  fs::create_directories(host_path(path), ec);
  if (ec) { return Error{"cannot create directory " + std::string(path) + ": " + ec.message(), ec.value()}; }
  return {};
}

Status SysRoot::remove_file(std::string_view path) const {
  ++writes_;
  std::error_code ec;
  fs::remove(host_path(path), ec);
  if (ec) { return Error{"cannot remove " + std::string(path) + ": " + ec.message(), ec.value()}; }
  return {};
}

Status SysRoot::move(std::string_view from, std::string_view to) const {
  ++writes_;
  std::error_code ec;
  fs::rename(host_path(from), host_path(to), ec);
  if (ec) {
    return Error{"cannot move " + std::string(from) + " to " + std::string(to) + ": " + ec.message(), ec.value()};
  }
  return {};
}

std::string join(std::string_view a, std::string_view b) {
  std::string out(a);
  while (!out.empty() && out.back() == '/') { out.pop_back(); }
  while (!b.empty() && b.front() == '/') { b.remove_prefix(1); }
  out += '/';
  out += b;
  return out;
}

}  // namespace p2pnode::sys
