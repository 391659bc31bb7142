# Sourced by the scripts that run `apply` with a driver section on this machine: apply writes the
# kernel-install hooks (driver.kernel_hook), which must not outlive the script unless they were
# there before it.
#   note_kernel_hooks      remembers which of the two hooks exist now
#   restore_kernel_hooks   removes those that did not (call it from the script's cleanup)
KERNEL_HOOKS="/etc/kernel/postinst.d/z50-p2pnode /etc/kernel/header_postinst.d/z50-p2pnode"
KERNEL_HOOKS_BEFORE=""
note_kernel_hooks() {
  local h
  KERNEL_HOOKS_BEFORE=""
  for h in $KERNEL_HOOKS; do [ -e "$h" ] && KERNEL_HOOKS_BEFORE="$KERNEL_HOOKS_BEFORE $h"; done
  return 0
}
restore_kernel_hooks() {
  local h
  for h in $KERNEL_HOOKS; do
    case " $KERNEL_HOOKS_BEFORE " in *" $h "*) ;; *) rm -f "$h" ;; esac
  done
}
