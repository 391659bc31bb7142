#include "p2pnode/agent/bar/gdrapi.hpp"

#include <dlfcn.h>

#include <cstdio>

namespace p2pnode::agent::bar {

const char* mapping_type_name(int t) {
  switch (t) {
    case 0: return "none";
    case 1: return "wc";
    case 2: return "caching";
    case 3: return "device";
    default: return "unknown";
  }
}

const std::vector<std::string>& default_library_names() {
  static const std::vector<std::string> names = {"libgdrapi.so.2", "libgdrapi.so"};
  return names;
}

GdrApi::~GdrApi() {
  if (lib_) { dlclose(lib_); }
}

namespace {
template <typename F>
bool sym(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}
}  // namespace

std::string GdrApi::open(const std::vector<std::string>& names) {
  std::string tried;
  for (const auto& name : names) {
    lib_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_) {
      path_ = name;
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + (e ? std::string(e) : name + ": not found");
  }
  if (!lib_) { return "libgdrapi not found: " + tried; }
  // gdr_get_info is a macro for gdr_get_info_v2 since 2.4; the v2 symbol is what 2.x exports.
  const bool ok = sym(lib_, gdr_open, "gdr_open") && sym(lib_, gdr_close, "gdr_close") &&
                  sym(lib_, gdr_pin_buffer, "gdr_pin_buffer") && sym(lib_, gdr_unpin_buffer, "gdr_unpin_buffer") &&
                  sym(lib_, gdr_get_info, "gdr_get_info_v2") && sym(lib_, gdr_map, "gdr_map") &&
                  sym(lib_, gdr_unmap, "gdr_unmap") && sym(lib_, gdr_copy_to_mapping, "gdr_copy_to_mapping") &&
                  sym(lib_, gdr_copy_from_mapping, "gdr_copy_from_mapping") &&
                  sym(lib_, gdr_runtime_get_version, "gdr_runtime_get_version");
  if (!ok) {
    const char* e = dlerror();
    return path_ + " is not gdrcopy 2.4 or later: " + (e ? e : "an entry point is missing");
  }
  sym(lib_, gdr_get_attribute, "gdr_get_attribute");
  return {};
}

std::string GdrApi::version() const {
  int major = 0, minor = 0;
  if (gdr_runtime_get_version) { gdr_runtime_get_version(&major, &minor); }
  return std::to_string(major) + "." + std::to_string(minor);
}

Mapping::~Mapping() {
  if (map_) { api_.gdr_unmap(g_, mh_, map_, map_bytes_); }
  if (pinned_) { api_.gdr_unpin_buffer(g_, mh_); }
}

std::string Mapping::map(std::uint64_t device_address, std::size_t bytes) {
  auto failed = [&](const char* what, int rc) {
    char at[32];
    std::snprintf(at, sizeof at, "0x%llx", static_cast<unsigned long long>(device_address));
    return std::string(what) + " of " + std::to_string(bytes) + " bytes at " + at + " returned " + std::to_string(rc);
  };
  if (int rc = api_.gdr_pin_buffer(g_, static_cast<unsigned long>(device_address), bytes, 0, 0, &mh_); rc != 0) {
    return failed("gdr_pin_buffer", rc) + " (the BAR1 space left, or the driver refused a third-party mapping)";
  }
  pinned_ = true;
  if (int rc = api_.gdr_get_info(g_, mh_, &info_); rc != 0) { return failed("gdr_get_info", rc); }
  map_bytes_ = static_cast<std::size_t>(info_.mapped_size);
  if (int rc = api_.gdr_map(g_, mh_, &map_, map_bytes_); rc != 0) {
    map_ = nullptr;
    return failed("gdr_map", rc);
  }
  if (int rc = api_.gdr_get_info(g_, mh_, &info_); rc != 0) { return failed("gdr_get_info", rc); }
  if (device_address < info_.va || device_address + bytes > info_.va + info_.mapped_size) {
    return failed("gdr_map", 0) + ", but the mapping does not cover the buffer";
  }
  cpu_ = static_cast<char*>(map_);
  offset_ = static_cast<std::size_t>(device_address - info_.va);
  return {};
}

}  // namespace p2pnode::agent::bar
