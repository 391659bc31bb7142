#pragma once
// A private directory for one test: made fresh under the temp dir (mkdtemp, so unique per process
// and per instance), removed with everything under it when the object goes away, even when an
// assertion ends the test early. Shared by p2pnode_tests and p2pnode_agent_host_tests.
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <stdlib.h>

namespace p2pnode::test {

class TempDir {
 public:
  // The directory is <temp>/p2pnode-<prefix>-XXXXXX.
  explicit TempDir(std::string_view prefix) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / ("p2pnode-" + std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
    }
    path_ = tmpl;
  }
  ~TempDir() { remove(); }

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&& other) noexcept {
    if (this != &other) {
      remove();
      path_ = std::exchange(other.path_, {});
    }
    return *this;
  }

  const std::filesystem::path& path() const { return path_; }
  std::string string() const { return path_.string(); }
  std::filesystem::path operator/(const std::filesystem::path& rel) const { return path_ / rel; }

 private:
  void remove() noexcept {
    if (path_.empty()) { return; }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    path_.clear();
  }
  std::filesystem::path path_;
};

}  // namespace p2pnode::test
