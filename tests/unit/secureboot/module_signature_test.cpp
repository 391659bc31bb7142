// Secure Boot after the build: whether the modules DKMS installed are signed (modinfo through the
// runner, only where signatures are enforced), the boot guard counting an unsigned module as a
// missing one there, and the signing key apply makes when there is none (real openssl).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "actions/signing_key.hpp"
#include "lifecycle/boot_guard.hpp"
#include "profile/loader.hpp"
#include "secureboot/verdict.hpp"
#include "unit/secureboot/sb_node.hpp"

namespace p2pnode {
namespace {
using namespace sbtest;

const std::string kNew = "6.12.118+deb13-amd64", kOld = "6.12.117+deb13-amd64";

// Two kernels, each with nvidia/570.86.16 built and installed by DKMS (compressed, as on Debian 13).
void two_kernels(const Node& n) {
  for (const auto& k : {kNew, kOld}) {
    n.text("lib/modules/" + k + "/updates/dkms/nvidia.ko.xz", "xz");
    n.text("var/lib/dkms/nvidia/570.86.16/" + k + "/x86_64/module/nvidia.ko.xz", "xz");
    n.text("boot/vmlinuz-" + k, "k");
    n.text("lib/modules/" + k + "/modules.dep", "");
  }
}

Profile module_profile() {
  Profile p;
  p.name = "sb";
  DriverSpec d;
  d.version = "570.86.16";
  d.kernel_module = ModuleSource{};
  d.kernel_module->name = "nvidia";
  p.driver = d;
  return p;
}

// modinfo answers: the newest kernel's module unsigned (built before the key existed), the older signed.
// modinfo is given the module's path on the host (the node's root is a directory here).
void answer_modinfo(sys::ScriptedRunner& r, const Node& n) {
  const auto ko = [&](const std::string& k) {
    return (n.dir / ("lib/modules/" + k + "/updates/dkms/nvidia.ko.xz")).string();
  };
  r.on({"modinfo", "-F", "signer", ko(kNew)}, sys::exited_with(0, "\n"));
  r.on({"modinfo", "-F", "signer", ko(kOld)}, sys::exited_with(0, "DKMS module signing key\n"));
}

TEST(ModuleSignature, OnASecureBootNodeAnUnsignedModuleIsAMissingOneForTheBootGuard) {
  Node n;
  n.uefi(true);
  n.dkms_key('k');
  n.write(kMokList, esl({der('k')}));
  two_kernels(n);
  Inventory inv = probe::probe_inventory(sys::SysRoot(n.dir));
  ASSERT_EQ(inv.kernels.kernels.size(), 2u);
  sys::ScriptedRunner r;
  answer_modinfo(r, n);
  probe::probe_module_signatures_by_commands(sys::SysRoot(n.dir), r, inv);
  EXPECT_EQ(r.count("modinfo"), 2u);
  ASSERT_EQ(inv.kernels.kernels[0].dkms.size(), 1u);
  EXPECT_EQ(inv.kernels.kernels[0].dkms[0].signed_modules, false);
  EXPECT_EQ(inv.kernels.kernels[1].dkms[0].signed_modules, true);
  EXPECT_EQ(inv.kernels.kernels[1].dkms[0].signer, "DKMS module signing key");
  const auto in = lifecycle::boot_guard_inputs(module_profile(), inv);
  ASSERT_EQ(in.kernels.size(), 2u);
  EXPECT_FALSE(in.kernels[0].has_module);
  EXPECT_TRUE(in.kernels[0].unsigned_under_secure_boot);
  EXPECT_TRUE(in.kernels[1].has_module);
  const auto d = lifecycle::decide_boot_guard(in);
  EXPECT_EQ(d.what, lifecycle::BootGuardDecision::What::hold);
  EXPECT_EQ(d.kernel, kOld);
  EXPECT_NE(d.reason.find("has the module unsigned and Secure Boot enforces signatures"), std::string::npos)
      << d.reason;
}

TEST(ModuleSignature, WithoutSecureBootNothingRunsAndEveryInstalledModuleCounts) {
  Node n;
  n.uefi(false);
  two_kernels(n);
  Inventory inv = probe::probe_inventory(sys::SysRoot(n.dir));
  sys::ScriptedRunner r;
  answer_modinfo(r, n);
  probe::probe_module_signatures_by_commands(sys::SysRoot(n.dir), r, inv);
  EXPECT_EQ(r.count("modinfo"), 0u);
  EXPECT_FALSE(inv.kernels.kernels[0].dkms[0].signed_modules.has_value());
  const auto in = lifecycle::boot_guard_inputs(module_profile(), inv);
  EXPECT_TRUE(in.kernels[0].has_module);
  EXPECT_EQ(lifecycle::decide_boot_guard(in).what, lifecycle::BootGuardDecision::What::nothing);
  // On, but modinfo cannot say: unknown, not unsigned (the module still counts).
  n.uefi(true);
  n.dkms_key('k');
  n.write(kMokList, esl({der('k')}));
  inv = probe::probe_inventory(sys::SysRoot(n.dir));
  sys::ScriptedRunner failing;
  failing.on({"modinfo"}, sys::exited_with(1, "", "modinfo: ERROR: could not get modinfo"));
  probe::probe_module_signatures_by_commands(sys::SysRoot(n.dir), failing, inv);
  EXPECT_FALSE(inv.kernels.kernels[0].dkms[0].signed_modules.has_value());
  EXPECT_TRUE(lifecycle::boot_guard_inputs(module_profile(), inv).kernels[0].has_module);
}

TEST(SigningKey, ApplyMakesDkmsKeyWithOpensslWhereThereIsNone) {
  Node n;
  n.uefi(true);
  const sys::SysRoot root(n.dir);
  auto s = probe::probe_secure_boot(root);
  ASSERT_FALSE(s.cert_present);
  // No openssl: said, nothing made.
  sys::ScriptedRunner none;
  none.on({"openssl"}, [](const sys::Command&) {
    sys::CommandResult r;
    r.start_failed = true;
    return r;
  });
  auto k = actions::make_signing_key(root, none, s);
  EXPECT_FALSE(k.made);
  EXPECT_NE(k.message.find("openssl is not installed"), std::string::npos) << k.message;
  // The real openssl: a private key only root can read and a DER certificate the probe then reads.
  sys::ProcessRunner real;
  k = actions::make_signing_key(root, real, s);
  ASSERT_TRUE(k.made) << k.message;
  struct stat st {};
  ASSERT_EQ(::stat((n.dir / "var/lib/dkms/mok.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u) << std::oct << st.st_mode;
  s = probe::probe_secure_boot(root);
  EXPECT_TRUE(s.cert_present);
  EXPECT_TRUE(s.key_present);
  EXPECT_EQ(secureboot::decide_signing(s).trust, secureboot::Trust::untrusted);  // made, not yet enrolled
  // A second call makes nothing: the key is there.
  EXPECT_FALSE(actions::make_signing_key(root, real, s).made);
}

}  // namespace
}  // namespace p2pnode

namespace p2pnode {
namespace {
using namespace sbtest;

const std::string kProfileHead =
    "apiVersion: p2pnode/v1\nkind: NodeProfile\nmetadata:\n  name: t\n"
    "driver:\n  version: \"570.86.16\"\n  kernel_module:\n"
    "    source: {url: \"https://example.org/t.tar.gz\", sha256: \"" +
    std::string(64, 'a') + "\"}\n";

TEST(ProfileSigningKey, TheProfileNamesItAndApplyPointsDkmsAtIt) {
  auto r = profile::load_profile_text(
      kProfileHead + "    signing: {key: /etc/p2pnode/keys/module.key, certificate: /etc/p2pnode/keys/module.der}\n",
      "t.yaml");
  ASSERT_TRUE(r.profile) << r.diagnostics.format();
  const auto& sg = r.profile->driver->kernel_module->signing;
  ASSERT_TRUE(sg);
  EXPECT_EQ(sg->certificate, "/etc/p2pnode/keys/module.der");
  // A relative path, or a missing certificate: what, where, what was expected.
  r = profile::load_profile_text(kProfileHead + "    signing: {key: keys/module.key, certificate: /k.der}\n", "t.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("driver.kernel_module.signing.key: expected the module signing key as an "
                                        "absolute path of letters, digits and "
                                        "._+@:/- with no . or .. component, found 'keys/module.key'"),
            std::string::npos)
      << r.diagnostics.format();
  r = profile::load_profile_text(kProfileHead + "    signing: {key: /k.key}\n", "t.yaml");
  ASSERT_FALSE(r.profile);
  EXPECT_NE(r.diagnostics.format().find("certificate"), std::string::npos) << r.diagnostics.format();

  // On a Secure Boot node whose MOK list holds the profile's certificate (not DKMS's own): trusted.
  Node n;
  n.uefi(true);
  n.dkms_key('d');
  n.write("etc/p2pnode/keys/module.der", der('p'));
  n.text("etc/p2pnode/keys/module.key", "-----BEGIN PRIVATE KEY-----\n");
  n.write(kMokList, esl({der('p')}));
  const sys::SysRoot root(n.dir);
  Inventory inv = probe::probe_inventory(root);
  EXPECT_EQ(secureboot::decide_signing(inv.secure_boot).trust, secureboot::Trust::untrusted);  // DKMS's key
  probe::use_profile_signing(root, *r.profile, inv);  // unchanged: that profile failed to load
  Profile p = *profile::load_profile_text(
                   kProfileHead +
                       "    signing: {key: /etc/p2pnode/keys/module.key, certificate: /etc/p2pnode/keys/module.der}\n",
                   "t.yaml")
                   .profile;
  probe::use_profile_signing(root, p, inv);
  EXPECT_TRUE(inv.secure_boot.key_from_profile);
  EXPECT_EQ(secureboot::decide_signing(inv.secure_boot).trust, secureboot::Trust::trusted);
  // Apply's drop-in: DKMS 3.x reads it, and so does the probe (then without the profile's help).
  auto w = actions::point_dkms_at(root, *p.driver->kernel_module->signing);
  ASSERT_TRUE(w);
  EXPECT_TRUE(*w);
  EXPECT_FALSE(*actions::point_dkms_at(root, *p.driver->kernel_module->signing));  // unchanged: not rewritten
  const auto s = probe::probe_secure_boot(root);
  EXPECT_TRUE(s.key_from_config);
  EXPECT_EQ(s.key_path, "/etc/p2pnode/keys/module.key");
  EXPECT_EQ(secureboot::decide_signing(s).trust, secureboot::Trust::trusted);
}

}  // namespace
}  // namespace p2pnode
