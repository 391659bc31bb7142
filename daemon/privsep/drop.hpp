#pragma once
// Giving up root for good: the account the HTTP process becomes, the switch, and the proof that
// there is no way back. Changes the calling process only.
#include <sys/types.h>

#include <string>

#include "core/result.hpp"

namespace p2pnode::privsep {

struct Account {
  std::string name;  // "p2pnode", or "nobody" when the package's account is missing
  uid_t uid = 0;
  gid_t gid = 0;
  std::string note;  // why a fallback was taken, for the log; empty otherwise
};

// The package's system account `p2pnode`, else nobody:nogroup, else uid and gid 65534 (no account).
Result<Account> find_unprivileged_account();

// setgroups(0) + setresgid + setresuid to `to` (root only), then no_new_privs. Then checks what
// must hold afterwards whoever started it: setuid(0) fails, and the permitted, effective and
// inheritable capability sets are empty. Any failure is an error and the caller must exit.
Status drop_privileges(const Account& to);
// Without root there is nothing to switch to: no_new_privs, and the same checks.
Status confine_unprivileged();

}  // namespace p2pnode::privsep
