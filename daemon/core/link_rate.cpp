#include "core/link_rate.hpp"

#include <cmath>

namespace p2pnode {

namespace {
bool near(double a, double b) { return std::fabs(a - b) < 0.05; }
}  // namespace

int pcie_generation(double gts) {
  const double speeds[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int g = 0; g < 6; ++g) {
    if (near(gts, speeds[g])) { return g + 1; }
  }
  return 0;
}

double pcie_encoding_efficiency(double gts) {
  switch (pcie_generation(gts)) {
    case 1:
    case 2: return 8.0 / 10.0;
    case 3:
    case 4:
    case 5: return 128.0 / 130.0;
    case 6: return 242.0 / 256.0;
    default: return 0;
  }
}

double pcie_gbps(double gts, int width) {
  if (width <= 0) { return 0; }
  return gts * width * pcie_encoding_efficiency(gts) / 8.0;
}

int nvlink_generation(unsigned nvml_version, int compute_capability_major) {
  if (nvml_version == 0) { return 0; }
  if (compute_capability_major == 9) {
    return 4;  // Hopper: NVLink 4, whatever NVML says
  }
  switch (nvml_version) {
    case 1: return 1;
    case 2:
    case 3: return 2;
    case 4:
    case 5: return 3;
    case 6: return 4;
    case 7: return 5;
    default: return 0;
  }
}

double nvlink_link_gbps(int generation) {
  switch (generation) {
    case 1: return 20;
    case 2:
    case 3:
    case 4: return 25;
    case 5: return 50;
    default: return 0;
  }
}

const char* to_string(PathKind k) {
  switch (k) {
    case PathKind::nvlink: return "nvlink";
    case PathKind::pcie_p2p: return "pcie_p2p";
    case PathKind::pcie_p2p_cross_socket: return "pcie_p2p_cross_socket";
    case PathKind::pcie_host: break;
  }
  return "pcie_host";
}

const char* to_string(CopyKind k) {
  switch (k) {
    case CopyKind::ce: return "ce";
    case CopyKind::sm: return "sm";
    case CopyKind::bar_write: return "bar_write";
    case CopyKind::bidirectional: break;
  }
  return "bidirectional";
}

// Each factor is the median of healthy measurements over the ceiling of their link, rounded
// down to two places. The lowest healthy cell over its expectation is 0.93 (seed 001, across
// sockets), which is why the default threshold fraction is 0.85 (judge/expectations.hpp).
const std::vector<Efficiency>& efficiency_table() {
  static const std::vector<Efficiency> t = {
      {PathKind::nvlink, CopyKind::ce, 0.875,
       "2x H200 NV18 (NVLink 4, 18 x 25 = 450 GB/s), this project's runs tests/fixtures/gpu-runs/h200x2-default-*.json "
       "(2026-11-21): CE write 396.33-396.46, CE read 393.80-393.88 GB/s; the lower direction, 393.8/450"},
      {PathKind::nvlink, CopyKind::sm, 0.82,
       "same runs: SM write 369.49-370.03, SM read 374.11-374.37 GB/s; 369.5/450"},
      {PathKind::nvlink, CopyKind::bidirectional, 0.865,
       "same runs: CE bidirectional total 778.48-778.62 GB/s over 2 x 450"},
      {PathKind::pcie_p2p, CopyKind::ce, 0.82,
       "seed 001: 8x RTX 4090 Gen4 x16 (31.51 GB/s), 2x EPYC 7542, P2P writes between GPUs of one socket "
       "25.51-26.01 GB/s, median 25.79 (p2pBandwidthLatencyTest)"},
      {PathKind::pcie_p2p, CopyKind::sm, 0.82, "not measured on PCIe: the copy-engine factor"},
      {PathKind::pcie_p2p, CopyKind::bidirectional, 0.80,
       "seed 001: bidirectional one socket 49.75-50.66 GB/s, median 50.25, over 2 x 31.51; seed 000 (tinybox, "
       "6x 4090) 50.09-51.23"},
      {PathKind::pcie_p2p_cross_socket, CopyKind::ce, 0.70,
       "seed 001: P2P writes across the two sockets 20.57-22.53 GB/s, median 22.19, over 31.51"},
      {PathKind::pcie_p2p_cross_socket, CopyKind::sm, 0.70, "not measured on PCIe: the copy-engine factor"},
      {PathKind::pcie_p2p_cross_socket, CopyKind::bidirectional, 0.66,
       "seed 001: bidirectional across sockets 38.93-41.93 GB/s, median 41.59, over 2 x 31.51"},
      {PathKind::pcie_host, CopyKind::ce, 0.87,
       "2x H200 on PCIe Gen5 x16 (63.02 GB/s), tests/fixtures/gpu-runs/h200x2-default-*.json: pinned host to device "
       "55.07-55.26, device to host 55.01-55.08 GB/s; 55.0/63.02"},
      {PathKind::pcie_host, CopyKind::bar_write, 0.38,
       "seed 004 (gdrcopy): CPU stores through the write-combined BAR mapping 6-8 GB/s on Ivy Bridge Xeons over "
       "PCIe 3.0 x16; 6/15.75 (gdrcopy's README shows 10.1 GB/s on a V100). One CPU core's write combining, not "
       "the link, sets the figure, so judge/expectations.cpp caps it (kBarWriteCapGbps)"},
  };
  return t;
}

const Efficiency& efficiency(PathKind path, CopyKind copy) {
  const auto& t = efficiency_table();
  for (const auto& e : t) {
    if (e.path == path && e.copy == copy) { return e; }
  }
  for (const auto& e : t) {  // host copies have only a copy-engine figure
    if (e.path == path && e.copy == CopyKind::ce) { return e; }
  }
  return t.front();
}

}  // namespace p2pnode
