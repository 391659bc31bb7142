// The bar_copy case's host side: the backend decision, libgdrapi opened at run time (a stand-in
// library whose "GPU memory" is host memory), the measurement and its integrity checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "p2pnode/agent/bar/bar_copy.hpp"
#include "p2pnode/agent/bar/gdrapi.hpp"
#include "unit/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace p2pnode::agent;
using namespace p2pnode::agent::bar;

namespace {

TEST(BarBackend, GdrdrvFirstThenDmaBufOnCuda133) {
  Environment env;
  env.gdrdrv_node = true;
  env.driver_version = 13000;
  EXPECT_EQ(expected_backend(env), "gdrdrv");
  EXPECT_EQ(no_backend_reason(env), "");
  env.gdrdrv_node = false;
  env.dma_buf_supported = true;
  EXPECT_EQ(expected_backend(env), "");  // CUDA 13.0: gdrcopy's dma-buf path refuses it
  env.driver_version = 13030;
  EXPECT_EQ(expected_backend(env), "dma-buf");
  env.dma_buf_supported = false;
  EXPECT_EQ(expected_backend(env), "");
}

TEST(BarBackend, ReasonNamesBothMissingHalves) {
  // What the lent GPU boxes have: driver 580 (CUDA 13.0), no gdrdrv.
  Environment env;
  env.gdrdrv_detail = "/dev/gdrdrv: No such file or directory";
  env.driver_version = 13000;
  EXPECT_EQ(no_backend_reason(env),
            "neither gdrdrv (/dev/gdrdrv: No such file or directory; gdrdrv is not loaded) nor the dma-buf backend "
            "(the driver is CUDA 13.0, and gdrcopy's dma-buf mapping needs 13.3 or later): install gdrdrv with the "
            "profile's gdrcopy section");
  env.gdrdrv_loaded = true;  // loaded, but nobody made the node
  env.driver_version = 13030;
  const auto why = no_backend_reason(env);
  EXPECT_NE(why.find("although gdrdrv is loaded (see gdrcopy.device)"), std::string::npos) << why;
  EXPECT_NE(why.find("no GPU reports dma-buf support"), std::string::npos) << why;
}

TEST(BarBackend, ReadsTheNodeAndProcDevices) {
  const p2pnode::test::TempDir scratch("bar-env");
  const fs::path root = scratch.path();
  fs::create_directories(root / "dev");
  fs::create_directories(root / "proc");
  std::ofstream(root / "proc/devices") << "Character devices:\n  1 mem\n195 nvidia\n235 gdrdrv\n\nBlock devices:\n";
  Environment env;
  read_gdrdrv(env, root.string());
  EXPECT_FALSE(env.gdrdrv_node);
  EXPECT_TRUE(env.gdrdrv_loaded);
  EXPECT_EQ(env.gdrdrv_detail, "/dev/gdrdrv: No such file or directory");
  std::ofstream(root / "dev/gdrdrv") << "";
  read_gdrdrv(env, root.string());
  EXPECT_TRUE(env.gdrdrv_node);
  EXPECT_EQ(expected_backend(env), "gdrdrv");
  std::ofstream(root / "proc/devices") << "Character devices:\n195 nvidia\n";
  read_gdrdrv(env, root.string());
  EXPECT_FALSE(env.gdrdrv_loaded);
}

TEST(GdrApi, NamesEveryLibraryItTried) {
  GdrApi api;
  const auto why = api.open({"/nonexistent/libgdrapi.so.2", "libgdrapi-none.so"});
  EXPECT_EQ(why.rfind("libgdrapi not found: ", 0), 0u) << why;
  EXPECT_NE(why.find("/nonexistent/libgdrapi.so.2"), std::string::npos) << why;
  EXPECT_NE(why.find("libgdrapi-none.so"), std::string::npos) << why;
}

TEST(GdrApi, RefusesALibraryWithoutTheEntryPoints) {
  GdrApi api;
  const auto why = api.open({P2PNODE_FAKE_NVML});  // a real shared object, not gdrcopy
  EXPECT_NE(why.find("is not gdrcopy 2.4 or later"), std::string::npos) << why;
}

// A "GPU buffer" in host memory, 64 KiB aligned as cudaMalloc's are, and the case's two views of it.
struct BarRig {
  std::size_t bytes;
  void* raw = nullptr;
  char* dev = nullptr;
  GdrApi api;
  GdrHandle g = nullptr;
  explicit BarRig(std::size_t b) : bytes(b) {
    raw = std::aligned_alloc(kGpuPageBytes, bytes + kGpuPageBytes);
    dev = static_cast<char*>(raw);
    EXPECT_EQ(api.open({P2PNODE_FAKE_GDRAPI}), "");
    g = api.gdr_open();
  }
  ~BarRig() {
    if (g) { api.gdr_close(g); }
    std::free(raw);
  }
  Window window(const Mapping& m) {
    Window w;
    w.bytes = bytes;
    const GdrMemHandle mh = m.handle();
    char* cpu = m.cpu();
    w.write = [this, mh, cpu](std::size_t off, const void* src, std::size_t n) {
      api.gdr_copy_to_mapping(mh, cpu + off, src, n);
    };
    w.read = [this, mh, cpu](void* dst, std::size_t off, std::size_t n) {
      api.gdr_copy_from_mapping(mh, dst, cpu + off, n);
    };
    return w;
  }
  Reference reference() {
    return {[this](const void* src) { std::memcpy(dev, src, bytes); },
            [this](void* dst) { std::memcpy(dst, dev, bytes); }};
  }
};

Plan quick() {
  Plan p;
  p.latency_sizes = {4, 4096, 65536};
  p.latency_samples = 5;
  p.iterations = 2;
  p.min_sample_s = 0.001;
  p.seed = 42;
  return p;
}

TEST(BarMeasure, EveryByteArrivesThroughTheMapping) {
  unsetenv("FAKE_GDRAPI_FLIP_WRITE");
  BarRig r(512 * 1024);
  ASSERT_NE(r.g, nullptr);
  EXPECT_EQ(r.api.version(), "2.6");
  Mapping m(r.api, r.g);
  ASSERT_EQ(m.map(reinterpret_cast<std::uint64_t>(r.dev), r.bytes), "");
  EXPECT_EQ(m.cpu(), r.dev);
  EXPECT_STREQ(mapping_type_name(m.info().mapping_type), "wc");
  const Figures f = measure(r.window(m), r.reference(), quick());
  ASSERT_EQ(f.integrity.size(), 4u);
  for (const auto& ic : f.integrity) {
    EXPECT_EQ(ic.bad_bytes, 0u) << ic.label;
    EXPECT_GT(ic.checked_bytes, r.bytes - 8192) << ic.label;
  }
  EXPECT_EQ(f.integrity[0].label, "cpu_write/whole");
  EXPECT_EQ(f.integrity[3].label, "cpu_read/partial_offset");
  ASSERT_EQ(f.latency.size(), 3u);
  EXPECT_EQ(f.latency[2].bytes, 65536u);
  EXPECT_EQ(f.latency[0].write_us.count, 5u);
  EXPECT_GT(f.write_gbps.median, 0.0);
  EXPECT_EQ(f.read_gbps.count, 2u);
  const Cell c = make_cell(1, f, "gdrdrv", "wc", r.api.path() + " " + r.api.version());
  EXPECT_EQ(c.status, Status::passed);
  EXPECT_EQ(c.src, 1);
  EXPECT_EQ(c.extra["backend"], "gdrdrv");
  EXPECT_EQ(c.extra["bar_latency"].size(), 3u);
  EXPECT_EQ(c.measures.at(0).first, "bar_write_bandwidth_gbps");
}

TEST(BarMeasure, AFlippedByteFailsTheCellWithItsOffset) {
  setenv("FAKE_GDRAPI_FLIP_WRITE", "70000", 1);
  BarRig r(256 * 1024);
  Mapping m(r.api, r.g);
  ASSERT_EQ(m.map(reinterpret_cast<std::uint64_t>(r.dev), r.bytes), "");
  const Figures f = measure(r.window(m), r.reference(), quick());
  unsetenv("FAKE_GDRAPI_FLIP_WRITE");
  EXPECT_EQ(f.integrity[0].bad_bytes, 1u);
  EXPECT_EQ(f.integrity[0].first_bad_offset, 70000u);
  EXPECT_EQ(f.integrity[1].bad_bytes, 1u);  // partial: 70000 is inside the written region
  EXPECT_EQ(f.integrity[2].bad_bytes, 0u);  // reads are untouched
  const Cell c = make_cell(0, f, "gdrdrv", "wc", "fake");
  EXPECT_EQ(c.status, Status::failed);
  EXPECT_EQ(c.reason, "integrity: cpu_write/whole: 1 bad bytes of 262144, first at offset 70000");
}

TEST(BarMeasure, PartialWritesLeaveTheGuardsAlone) {
  // A copy that writes one byte too many is caught by the poison around the region.
  BarRig r(128 * 1024);
  Mapping m(r.api, r.g);
  ASSERT_EQ(m.map(reinterpret_cast<std::uint64_t>(r.dev), r.bytes), "");
  Window w = r.window(m);
  auto exact = w.write;
  w.write = [exact](std::size_t off, const void* src, std::size_t n) {
    exact(off, src, n);
    if (off != 0) {
      exact(off + n, src, 1);  // overrun by one
    }
  };
  const Figures f = measure(w, r.reference(), quick());
  EXPECT_EQ(f.integrity[0].bad_bytes, 0u);
  EXPECT_EQ(f.integrity[1].label, "cpu_write/partial_offset");
  EXPECT_GE(f.integrity[1].bad_bytes, 1u);
  EXPECT_EQ(f.integrity[1].first_bad_offset, 128u * 1024 - 4096 - 6);  // off + len
}

TEST(BarMapping, PinFailureSaysWhatAndWhere) {
  setenv("FAKE_GDRAPI_PIN_FAIL", "12", 1);
  BarRig r(64 * 1024);
  Mapping m(r.api, r.g);
  const auto why = m.map(reinterpret_cast<std::uint64_t>(r.dev), r.bytes);
  unsetenv("FAKE_GDRAPI_PIN_FAIL");
  EXPECT_EQ(why.rfind("gdr_pin_buffer of 65536 bytes at 0x", 0), 0u) << why;
  EXPECT_NE(why.find("returned 12"), std::string::npos) << why;
}

TEST(BarMeasure, RefusesABufferBelowOneGpuPage) {
  Window w;
  w.bytes = 4096;
  EXPECT_THROW(measure(w, Reference{}, quick()), std::invalid_argument);
}

TEST(BarPattern, DependsOnSeedAndOffset) {
  std::vector<unsigned char> a(256), b(256);
  fill_pattern(a.data(), a.size(), 7, 0);
  fill_pattern(b.data(), b.size(), 7, 0);
  EXPECT_EQ(a, b);
  fill_pattern(b.data(), b.size(), 8, 0);
  EXPECT_NE(a, b);
  fill_pattern(b.data(), 128, 7, 128);  // the second half, written from its own offset
  EXPECT_TRUE(std::equal(a.begin() + 128, a.end(), b.begin()));
  std::uint64_t first = 0;
  a[77] ^= 1;
  EXPECT_EQ(count_bad(a.data(), a.size(), 7, 0, &first), 1u);
  EXPECT_EQ(first, 77u);
}

}  // namespace
