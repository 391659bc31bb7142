#include "privsep/drop.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace p2pnode::privsep {
namespace {

std::string errno_text() { return std::strerror(errno); }

// capget without libcap: version 3, two 32-bit words per set.
Status capabilities_empty() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) { return Error{"capget: " + errno_text()}; }
  for (const auto& d : data) {
    if (d.effective || d.permitted || d.inheritable) { return Error{"capabilities remain after dropping root"}; }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SYS_ADMIN, 0, 0) == 1) {
    return Error{"ambient capabilities remain after dropping root"};
  }
  return Status::success();
}

Status verify_confined() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { return Error{"PR_SET_NO_NEW_PRIVS: " + errno_text()}; }
  if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) { return Error{"no_new_privs did not stick"}; }
  if (::getuid() == 0 || ::geteuid() == 0 || ::getgid() == 0 || ::getegid() == 0) {
    return Error{"still root after dropping privileges"};
  }
  if (::setuid(0) == 0 || ::seteuid(0) == 0) { return Error{"setuid(0) succeeded after dropping root"}; }
  return capabilities_empty();
}
}  // namespace

Result<Account> find_unprivileged_account() {
  if (const passwd* p = ::getpwnam("p2pnode")) { return Account{"p2pnode", p->pw_uid, p->pw_gid, ""}; }
  const passwd* nobody = ::getpwnam("nobody");
  // A system with no account database worth the name (a minimal image, an initramfs): the kernel
  // needs none to switch to an id, so the overflow id nobody conventionally has.
  if (!nobody) {
    return Account{"65534", 65534, 65534,
                   "neither the system account p2pnode nor nobody exists: the HTTP process runs as uid and gid 65534"};
  }
  const group* nogroup = ::getgrnam("nogroup");
  Account a{"nobody", nobody->pw_uid, nogroup ? nogroup->gr_gid : nobody->pw_gid,
            "the system account p2pnode is missing (the package creates it): the HTTP process runs as nobody"};
  if (a.uid == 0 || a.gid == 0) { return Error{"the account nobody maps to root"}; }
  return a;
}

Status drop_privileges(const Account& to) {
  if (to.uid == 0 || to.gid == 0) { return Error{"refusing to switch to " + to.name + ": it is root"}; }
  if (::setgroups(0, nullptr) != 0) { return Error{"setgroups: " + errno_text()}; }
  if (::setresgid(to.gid, to.gid, to.gid) != 0) {
    return Error{"setresgid " + std::to_string(to.gid) + ": " + errno_text()};
  }
  if (::setresuid(to.uid, to.uid, to.uid) != 0) {
    return Error{"setresuid " + std::to_string(to.uid) + ": " + errno_text()};
  }
  return verify_confined();
}

Status confine_unprivileged() { return verify_confined(); }

}  // namespace p2pnode::privsep
