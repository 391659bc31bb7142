// The AER statistics decoder on what the kernel really printed (Debian 6.1.0-56 in the QEMU VM,
// root port 0000:00:02.0 after an injected Completion Timeout) and on broken files.
#include "health/aer.hpp"

#include <gtest/gtest.h>

using namespace p2pnode::health;

namespace {
const char* kCorrectable =
    "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n";
const char* kNonfatal =
    "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq "
    "0\n"
    "ACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nDMWrReqBlocked "
    "0\n"
    "IDECheck 0\nMisIDETLP 0\nPCRC_CHECK 0\nTLPXlatBlocked 0\nTOTAL_ERR_NONFATAL 1\n";
}  // namespace

TEST(AerDecode, CorrectableFileFromTheKernel) {
  auto r = decode_aer_stats(kCorrectable);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->by_name.size(), 8u);
  EXPECT_EQ(r->total, 0u);
  EXPECT_EQ(r->by_name.at("RxErr"), 0u);
  EXPECT_EQ(r->by_name.count("TOTAL_ERR_COR"), 0u);
}

TEST(AerDecode, NonfatalFileWithOneCompletionTimeout) {
  auto r = decode_aer_stats(kNonfatal);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->by_name.size(), 23u);
  EXPECT_EQ(r->by_name.at("CmpltTO"), 1u);
  EXPECT_EQ(r->total, 1u);
}

TEST(AerDecode, TotalIsTheKernelsNotTheSum) {
  // The kernel counts TOTAL_ERR_* per message; a multi-error message can make it differ from the sum.
  auto r = decode_aer_stats("RxErr 2\nBadTLP 1\nTOTAL_ERR_COR 2\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->total, 2u);
  auto s = decode_aer_stats("RxErr 2\nBadTLP 1\n");  // no TOTAL line: the sum
  ASSERT_TRUE(s);
  EXPECT_EQ(s->total, 3u);
}

TEST(AerDecode, LargeCountsAndTrailingSpace) {
  auto r = decode_aer_stats("RxErr 18446744073709551615 \r\nTOTAL_ERR_COR 18446744073709551615\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->by_name.at("RxErr"), 18446744073709551615ull);
}

TEST(AerDecode, BadLinesNameTheLine) {
  auto r = decode_aer_stats("RxErr 0\nBadTLP x\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 2 'BadTLP x'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("expected 'NAME COUNT'"), std::string::npos);
  EXPECT_FALSE(decode_aer_stats("RxErr\n"));
  EXPECT_FALSE(decode_aer_stats("RxErr -1\n"));
  EXPECT_FALSE(decode_aer_stats(""));
  EXPECT_FALSE(decode_aer_stats("\n\n"));
}

TEST(AerDecode, FileNames) {
  EXPECT_STREQ(aer_file_name(AerSeverity::correctable), "aer_dev_correctable");
  EXPECT_STREQ(aer_file_name(AerSeverity::nonfatal), "aer_dev_nonfatal");
  EXPECT_STREQ(aer_file_name(AerSeverity::fatal), "aer_dev_fatal");
  EXPECT_STREQ(to_string(AerSeverity::nonfatal), "nonfatal");
}
