// Secure Boot before any build: the efivars decoders (the layouts of the UEFI specification, 3.3
// and 32.4.1, and shim's MokListRT/MokNew, which are signature lists), lockdown, DKMS's signing
// key, and the verdict on a root laid out as a node's: off; on with the key trusted; on with it
// queued; on with no key; setup mode; on with a key nobody enrolled. The check and the refusals of
// `plan`/`apply` follow it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "actions/action.hpp"
#include "checks/check.hpp"
#include "probe/probe.hpp"
#include "secureboot/efi.hpp"
#include "secureboot/verdict.hpp"
#include "unit/secureboot/sb_node.hpp"

namespace p2pnode {
namespace {
namespace fs = std::filesystem;
using namespace sbtest;

TEST(SecureBootEfi, Decoders) {
  EXPECT_EQ(secureboot::decode_efi_bool(EfiBytes{6, 0, 0, 0, 1}), true);
  EXPECT_EQ(secureboot::decode_efi_bool(EfiBytes{6, 0, 0, 0, 0}), false);
  EXPECT_FALSE(secureboot::decode_efi_bool(EfiBytes{6, 0, 0, 0}));
  const auto certs = secureboot::decode_esl_certs(esl({der('a'), der('b')}, true));
  ASSERT_TRUE(certs);
  ASSERT_EQ(certs->size(), 2u);
  EXPECT_EQ((*certs)[1], der('b'));
  EfiBytes cut = esl({der('a')});
  cut.resize(cut.size() - 10);  // a list that runs past the variable's end
  EXPECT_FALSE(secureboot::decode_esl_certs(cut));
  EXPECT_EQ(secureboot::decode_lockdown("none [integrity] confidentiality\n"), "integrity");
  EXPECT_EQ(secureboot::decode_lockdown("[none] integrity confidentiality"), "none");
  // DKMS 3.x's defaults, and framework.conf.d overriding them (Ubuntu's shim-signed key, quoted).
  auto s = secureboot::decode_dkms_signing({"# mok_signing_key=/x\n"});
  EXPECT_EQ(s.key, "/var/lib/dkms/mok.key");
  EXPECT_FALSE(s.from_config);
  s = secureboot::decode_dkms_signing(
      {"",
       "mok_signing_key=\"/var/lib/shim-signed/mok/MOK.priv\"\nmok_certificate='/var/lib/shim-signed/mok/MOK.der'\n"});
  EXPECT_EQ(s.key, "/var/lib/shim-signed/mok/MOK.priv");
  EXPECT_EQ(s.cert, "/var/lib/shim-signed/mok/MOK.der");
  EXPECT_TRUE(s.from_config);
}

TEST(SecureBootVerdict, OffSetupModeAndNoUefi) {
  Node n;
  n.dkms_key('k');
  EXPECT_EQ(secureboot::decide_signing(n.probe()).trust, secureboot::Trust::not_enforced);  // no /sys/firmware/efi
  n.uefi(false);
  auto v = secureboot::decide_signing(n.probe());
  EXPECT_EQ(v.trust, secureboot::Trust::not_enforced);
  EXPECT_EQ(v.summary, "Secure Boot is off: modules load unsigned");
  n.uefi(true, true);
  v = secureboot::decide_signing(n.probe());
  EXPECT_EQ(v.trust, secureboot::Trust::not_enforced);
  EXPECT_NE(v.summary.find("setup mode"), std::string::npos);
  EXPECT_FALSE(secureboot::build_refusal(n.probe()));
}

TEST(SecureBootVerdict, OnWithTheKeyTrustedQueuedMissingOrUnknownToShim) {
  Node n;
  n.uefi(true);
  // No key yet: DKMS would make one at its first build, which the kernel does not trust.
  auto s = n.probe();
  EXPECT_EQ(s.lockdown, "integrity");
  EXPECT_EQ(s.sig_enforce, true);
  auto v = secureboot::decide_signing(s);
  EXPECT_EQ(v.trust, secureboot::Trust::no_key);
  EXPECT_NE(v.remediation.find("dkms generate_mok"), std::string::npos);
  ASSERT_TRUE(secureboot::build_refusal(s));
  // A key shim does not know: refused, with the exact enrolment steps.
  n.dkms_key('k');
  n.write(kMokList, esl({der('o')}));  // another key (a distribution's) is enrolled
  v = secureboot::decide_signing(n.probe());
  EXPECT_EQ(v.trust, secureboot::Trust::untrusted);
  EXPECT_NE(v.summary.find("Key was rejected by service"), std::string::npos) << v.summary;
  EXPECT_NE(v.remediation.find("mokutil --import /var/lib/dkms/mok.pub"), std::string::npos) << v.remediation;
  EXPECT_NE(v.remediation.find("MokManager"), std::string::npos);
  // Queued (mokutil --import done, not yet confirmed at the console): builds, but no load before the reboot.
  n.write(kMokNew, esl({der('k')}));
  s = n.probe();
  EXPECT_EQ(s.cert_queued, true);
  v = secureboot::decide_signing(s);
  EXPECT_EQ(v.trust, secureboot::Trust::queued);
  EXPECT_FALSE(secureboot::build_refusal(s));
  ASSERT_TRUE(secureboot::load_refusal(s));
  // Enrolled (after the confirmed reboot shim mirrors it in MokListRT; MokNew is gone).
  fs::remove(n.dir / kMokNew);
  n.write(kMokList, esl({der('o'), der('k')}, true));
  s = n.probe();
  EXPECT_EQ(s.cert_enrolled, true);
  EXPECT_EQ(secureboot::decide_signing(s).trust, secureboot::Trust::trusted);
  EXPECT_FALSE(secureboot::build_refusal(s));
  EXPECT_FALSE(secureboot::load_refusal(s));
  // Shim's list unreadable: not refused, a warning to check by hand.
  EfiBytes bad = esl({der('k')});
  bad.resize(bad.size() - 3);
  n.write(kMokList, bad);
  EXPECT_EQ(secureboot::decide_signing(n.probe()).trust, secureboot::Trust::unknown);
}

TEST(SecureBootVerdict, TheKernelsOwnEnforcementCountsWhereTheFirmwareCannotBeRead) {
  Node n;
  n.dkms_key('k');
  // module.sig_enforce=1 on a BIOS boot: enforced, and shim's lists do not exist to say who is trusted.
  n.text("sys/module/module/parameters/sig_enforce", "Y\n");
  auto v = secureboot::decide_signing(n.probe());
  EXPECT_EQ(v.trust, secureboot::Trust::unknown);
  EXPECT_NE(v.summary.find("the kernel enforces module signatures (sig_enforce=Y; Secure Boot absent"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.remediation.find("mokutil --test-key /var/lib/dkms/mok.pub"), std::string::npos);
  // UEFI, efivarfs not mounted (an empty directory): the state is unknown, not "nothing enrolled".
  fs::create_directories(n.dir / "sys/firmware/efi/efivars");
  auto s = n.probe();
  EXPECT_FALSE(s.enabled.has_value());
  EXPECT_FALSE(s.cert_enrolled.has_value());
  v = secureboot::decide_signing(s);
  EXPECT_EQ(v.trust, secureboot::Trust::unknown);
  EXPECT_NE(v.summary.find("Secure Boot state unknown: no SecureBoot variable"), std::string::npos) << v.summary;
  // Without the kernel's enforcement either, an unreadable firmware is said, and modules load.
  n.text("sys/module/module/parameters/sig_enforce", "N\n");
  v = secureboot::decide_signing(n.probe());
  EXPECT_EQ(v.trust, secureboot::Trust::not_enforced);
  EXPECT_NE(v.summary.find("Secure Boot state unknown (no SecureBoot variable"), std::string::npos) << v.summary;
}

TEST(SecureBootCheck, BeforeAnyBuildThePlanRefuses) {
  Node n;
  n.uefi(true);
  n.dkms_key('k');
  Profile p;
  p.name = "sb";
  DriverSpec d;
  d.version = "570.86.16";
  d.kernel_module = ModuleSource{};
  p.driver = d;
  const sys::SysRoot root(n.dir);
  Inventory inv = probe::probe_inventory(root);
  auto f = checks::check_secure_boot(p, inv);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].check, "secureboot.module_signing");
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].observed["trust"], "untrusted");
  // A profile that builds nothing has nothing to sign.
  EXPECT_TRUE(checks::check_secure_boot(Profile{}, inv).empty());
  // The module's step is refused in the plan, before any download: the kernel would refuse it.
  fs::create_directories(n.dir / "lib/modules/6.12.117+deb13-amd64/build");
  inv = probe::probe_inventory(root);
  Step refused;
  for (const auto& s : actions::plan_all(p, inv, root).steps) {
    if (s.action == "driver.module") { refused = s; }
  }
  EXPECT_EQ(refused.description.rfind("refused: Secure Boot is on", 0), 0u) << refused.description;
  EXPECT_TRUE(refused.needs_operator);
}

}  // namespace
}  // namespace p2pnode
