# Prints, at the end of every ansible-playbook run of site.yml, one line per node of the play:
# ready (with the version), failed (with why: /readyz's reasons, or a roll-back), unreachable, or
# untouched (the roll-out stopped before its batch). Loaded from beside the playbook; needs no
# ansible.cfg.
from ansible import context
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: p2pnode_summary
type: aggregate
short_description: one line per node after a p2pnode roll-out
description: Lists every host of the p2pnode play with the state the roll-out left it in.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "p2pnode_summary"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self):
        super().__init__()
        self.hosts = []        # every host of the p2pnode play, inventory order
        self.outcome = {}      # host -> p2pnode_outcome fact
        self.failed = {}       # host -> message of the task that failed it
        self.unreachable = {}
        self.touched = set()

    def v2_playbook_on_play_start(self, play):
        if "p2pnode" not in [getattr(r, "_role_name", "") for r in play.get_roles()]:
            return
        # With serial, each batch restricts the inventory to itself; --limit still applies.
        inventory = play.get_variable_manager()._inventory
        for h in inventory.get_hosts(play.hosts, ignore_restrictions=True):
            if h.name not in self.hosts:
                self.hosts.append(h.name)

    def _host(self, result):
        return result._host.get_name()

    def v2_runner_on_ok(self, result):
        h = self._host(result)
        self.touched.add(h)
        facts = result._result.get("ansible_facts") or {}
        if "p2pnode_outcome" in facts:
            self.outcome[h] = facts["p2pnode_outcome"]

    def v2_runner_on_failed(self, result, ignore_errors=False):
        h = self._host(result)
        self.touched.add(h)
        if not ignore_errors:
            msg = result._result.get("msg") or result._result.get("stderr") or "failed"
            text = " ".join(str(msg).split())
            self.failed[h] = "%s: %s" % (result._task.get_name(), text if len(text) <= 400 else text[:400] + " …")

    def v2_runner_on_skipped(self, result):
        self.touched.add(self._host(result))

    def v2_runner_on_unreachable(self, result):
        h = self._host(result)
        self.touched.add(h)
        self.unreachable[h] = result._result.get("msg", "unreachable")

    def v2_playbook_on_stats(self, stats):
        if not self.hosts:
            return
        width = max(len(h) for h in self.hosts)
        checks_only = list(context.CLIARGS.get("tags") or []) == ["p2pnode_checks"]
        self._display.banner("P2PNODE ROLL-OUT SUMMARY")
        for h in self.hosts:
            if h in self.unreachable:
                line = "unreachable: %s" % self.unreachable[h]
            elif h in self.failed:
                line = "FAILED at %s" % self.failed[h]
            elif h in self.outcome and self.outcome[h].get("state") == "ready":
                o = self.outcome[h]
                line = "ready, p2pnode %s%s" % (o.get("version"), "" if o.get("previous") in ("", o.get("version")) else " (was %s)" % o.get("previous"))
            elif h in self.touched and checks_only:
                line = "variables checked (--tags p2pnode_checks: the node was not contacted)"
            elif h in self.touched:
                line = "not finished (the run ended before this node was checked)"
            else:
                line = "untouched (the roll-out stopped before this node's batch)"
            self._display.display("%s  %s" % (h.ljust(width), line))
