// Dropping root, in a forked child (it changes the process for good): afterwards no way back.
#include "privsep/drop.hpp"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace p2pnode::privsep {
namespace {

// Runs `f` in a child; its exit status (0: every check held).
template <typename F>
int in_child(F f) {
  const pid_t pid = ::fork();
  if (pid == 0) { ::_exit(f()); }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(PrivsepDrop, RootBecomesAnAccountThatCannotComeBack) {
  if (::geteuid() != 0) { GTEST_SKIP() << "needs root (tests/serve/test_privsep.sh covers the daemon)"; }
  auto account = find_unprivileged_account();
  ASSERT_TRUE(account.ok()) << account.error().message;
  EXPECT_NE(account->uid, 0u);
  const int rc = in_child([&] {
    if (!drop_privileges(*account)) { return 1; }
    if (::getuid() == 0 || ::geteuid() == 0 || ::getgid() == 0) { return 2; }
    if (::setuid(0) == 0) { return 3; }
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) { return 4; }
    if (::getgroups(0, nullptr) != 0) { return 5; }
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(PrivsepDrop, RefusesToSwitchToRoot) { EXPECT_FALSE(drop_privileges(Account{"root", 0, 0, ""}).ok()); }

// Started by a user: nothing to switch to, the same confinement and checks. Run as root (as make
// test runs), the child first becomes nobody by itself, as a user's shell would have it.
TEST(PrivsepDrop, WithoutRootOnlyConfines) {
  EXPECT_EQ(in_child([] {
              if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                                       ::setresuid(65534, 65534, 65534) != 0)) {
                return 10;
              }
              if (!confine_unprivileged()) { return 1; }
              if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) { return 2; }
              return ::setuid(0) == 0 ? 3 : 0;
            }),
            0);
}

}  // namespace
}  // namespace p2pnode::privsep
