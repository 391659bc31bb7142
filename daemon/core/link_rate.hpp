#pragma once
// What a link can carry, from its kind and generation: the physics behind every expectation.
// Pure data and arithmetic; GB/s is 1e9 bytes/s per direction, as bandwidth tools print.
//
// PCIe (per lane, per direction, after line encoding; PCI-SIG base specifications 1.0a-6.0):
//   Gen1 2.5 GT/s and Gen2 5 GT/s use 8b/10b (80 %), Gen3 8, Gen4 16 and Gen5 32 GT/s use
//   128b/130b (98.46 %), Gen6 64 GT/s sends 256-byte FLITs of which 242 bytes carry TLPs and
//   DLLPs (the other 14 are CRC and FEC: 94.53 %). x16 per direction: Gen1 4.0, Gen2 8.0,
//   Gen3 15.75, Gen4 31.51, Gen5 63.02, Gen6 121.0 GB/s.
// NVLink (per link, per direction; NVIDIA's data sheets give the bidirectional total per GPU):
//   NVLink 1 (P100: 4 links, 160 GB/s) 20 GB/s; NVLink 2 (V100: 6 links, 300 GB/s) 25 GB/s;
//   NVLink 3 (A100: 12 links, 600 GB/s) 25 GB/s; NVLink 4 (H100/H200: 18 links, 900 GB/s)
//   25 GB/s; NVLink 5 (B200: 18 links, 1.8 TB/s) 50 GB/s.
#include <string>
#include <string_view>
#include <vector>

namespace p2pnode {

// 1 … 6 from the link speed in GT/s (2.5, 5, 8, 16, 32, 64); 0 when it is none of those.
int pcie_generation(double gts);
// The fraction of the raw bit rate left after line encoding (see above); 0 for an unknown speed.
double pcie_encoding_efficiency(double gts);
// Per-direction data rate of a link after encoding, GB/s; 0 for an unknown speed or width.
double pcie_gbps(double gts, int width);

// NVML's nvmlNvlinkVersion_t (1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0) to
// the NVLink generation 1 … 5; 0 when unknown. NVML reports 7 (5.0) for Hopper GPUs on some
// drivers, so compute capability 9.x always maps to NVLink 4.
int nvlink_generation(unsigned nvml_version, int compute_capability_major);
// Per-link, per-direction rate of an NVLink generation, GB/s; 0 when unknown.
double nvlink_link_gbps(int generation);

// Which efficiency applies: what the data crosses.
enum class PathKind {
  nvlink,                 // GPU to GPU over NVLink (direct or through NVSwitch)
  pcie_p2p,               // GPU to GPU over PCIe within one CPU socket (PIX, PXB, PHB, NODE)
  pcie_p2p_cross_socket,  // GPU to GPU over PCIe across NUMA nodes (SYS)
  pcie_host,              // pinned host memory to or from a GPU
};
const char* to_string(PathKind k);

// How a measurement moves data: copy engine one way, SM loads/stores one way, both ways at
// once (the bidirectional figure is the sum of both directions), or CPU stores through a
// write-combined BAR mapping of GPU memory (gdrcopy).
enum class CopyKind { ce, sm, bidirectional, bar_write };
const char* to_string(CopyKind k);

// measured / ceiling on a healthy box, with where it was measured.
struct Efficiency {
  PathKind path;
  CopyKind copy;
  double factor;
  std::string_view source;
};
const std::vector<Efficiency>& efficiency_table();
const Efficiency& efficiency(PathKind path, CopyKind copy);

}  // namespace p2pnode
