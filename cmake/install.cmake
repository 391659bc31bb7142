# What `cmake --install` lays down; debian/rules packages exactly this (DESTDIR), so the layout is
# decided here once. Programs go under the install prefix (bin, libexec/p2pnode: see
# daemon/cli/delegate.cpp); the units and the configuration go to the system's own places, which
# `cmake --install --prefix` does not move, so a tree built for tests can be packaged as it is.
# The units' directory as the release's systemd names it (systemd.pc: /lib/systemd/system on Debian
# 12, /usr/lib/systemd/system on Debian 13, whose lintian rejects the aliased /lib path).
pkg_get_variable(P2PNODE_SYSTEMD_UNITDIR_PC systemd systemdsystemunitdir)
if(NOT P2PNODE_SYSTEMD_UNITDIR_PC)
  set(P2PNODE_SYSTEMD_UNITDIR_PC "/lib/systemd/system")
endif()
set(P2PNODE_SYSTEMD_UNITDIR "${P2PNODE_SYSTEMD_UNITDIR_PC}" CACHE PATH "Where the systemd units are installed")
set(P2PNODE_CONFDIR "/etc/p2pnode" CACHE PATH "Where the daemon's configuration is installed")
set(P2PNODE_KERNEL_HOOKDIR "/etc/kernel/postinst.d" CACHE PATH "Where kernel packages look for install hooks")
set(P2PNODE_HEADER_HOOKDIR "/etc/kernel/header_postinst.d" CACHE PATH "Where kernel headers packages look for install hooks")

install(FILES systemd/p2pnode.service systemd/p2pnode-apply.service systemd/p2pnode-judge-kernel.service
  systemd/p2pnode-judge-kernel.timer DESTINATION ${P2PNODE_SYSTEMD_UNITDIR})
install(FILES systemd/p2pnode.yaml DESTINATION ${P2PNODE_CONFDIR})
# The node's profiles go here (Ansible, or by hand); the daemon starts once one exists.
install(DIRECTORY DESTINATION ${P2PNODE_CONFDIR}/profiles)
# The kernel-install hook (the same file `apply` writes as driver.kernel_hook): a new kernel gets
# the module built and checked, and the daemon reports it (daemon/lifecycle/kernel-postinst.sh).
# Also run by the headers' postinst: dpkg may configure a kernel image before its headers.
install(PROGRAMS daemon/lifecycle/kernel-postinst.sh DESTINATION ${P2PNODE_KERNEL_HOOKDIR} RENAME z50-p2pnode)
install(PROGRAMS daemon/lifecycle/kernel-postinst.sh DESTINATION ${P2PNODE_HEADER_HOOKDIR} RENAME z50-p2pnode)

install(DIRECTORY profiles/ DESTINATION share/p2pnode/profiles FILES_MATCHING PATTERN "*.yaml")
install(FILES grafana/p2pnode-cluster.json grafana/p2pnode-fleet.json DESTINATION share/p2pnode/grafana)
install(FILES prometheus/p2pnode-alerts.yml prometheus/p2pnode-rules.yml DESTINATION share/p2pnode/prometheus)
install(FILES api/profile.schema.json DESTINATION share/p2pnode/api)
# Slurm's side (docs/slurm.md): the HealthCheckProgram, the Prolog and what they share, and the NHC
# check, which only defines check_p2pnode until nhc.conf names it.
install(PROGRAMS slurm/p2pnode-slurm-health slurm/p2pnode-slurm-prolog DESTINATION lib/p2pnode/slurm)
install(FILES slurm/p2pnode-slurm.sh DESTINATION lib/p2pnode/slurm)
install(FILES slurm/p2pnode.nhc DESTINATION /etc/nhc/scripts)
install(FILES prometheus/alertmanager.example.yml DESTINATION share/p2pnode/prometheus)
