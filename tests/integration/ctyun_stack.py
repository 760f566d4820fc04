"""What `pulumi up` / `pulumi destroy` do with the CTyun resource chain, without the CLI.

`Stack` drives the five dynamic providers (owner token, network, security group, cluster order,
cluster) with the inputs the program would pass (the same functions cluster.py uses), the way
the engine does: `check`, then `create` for a resource not in state, `diff` + `update` (or
delete-before-replace) for one that is; a failed create leaves nothing in state and stops the
run; destroy deletes in reverse order. So a test can interrupt an `up` (a deadline, a fault)
and run it again exactly as a user would, with the state a real engine would have kept.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from components.ctyun_hcc import cluster as wiring
from components.ctyun_hcc.cluster_order import HccClusterOrderProvider
from components.ctyun_hcc.cluster_provider import HccClusterProvider
from components.ctyun_hcc.config import parse_hcc_config
from components.ctyun_hcc.network_provider import HccNetworkProvider
from components.ctyun_hcc.owner_provider import HccStackOwnerProvider
from components.ctyun_hcc.sg_provider import HccSecurityGroupProvider
from components.config.shared import parse_settings
from tests.emulators.ctyun.catalog import SPEC_910C
from tests.emulators.ctyun.state import AZ, REGION

PASSWORD = "K3-Passw0rd!"
MASTER_SPEC = "physical.2.large.1.hpc"   # the emulator's 910C spec is compute-only
ORDER = ("owner", "net", "sg", "order", "cluster")
#: provider deadlines and poll interval for tests (the config's floors are for people)
FAST = {"pollIntervalS": 0.03, "timeoutS": 60, "createTimeoutS": 60, "updateTimeoutS": 60,
        "lostAnswerWaitS": 1.0,
        "deleteTimeoutS": 60}


class CheckFailed(Exception):
    def __init__(self, name: str, failures):
        self.failures = list(failures)
        super().__init__(f"{name}: " + "; ".join(r for _, r in self.failures))


class Direct:
    """Calls the providers in this process (what the host would do, minus gRPC)."""

    def check(self, name, p, news):
        r = p.check({}, news)
        return r.inputs, [(f.property, f.reason) for f in r.failures]

    def create(self, name, p, news):
        r = p.create(news)
        return r.id, r.outs

    def diff(self, name, p, id_, olds, news):
        d = p.diff(id_, olds, news)
        return bool(d.changes), list(d.replaces or [])

    def update(self, name, p, id_, olds, news):
        return p.update(id_, olds, news).outs

    def read(self, name, p, id_, outs):
        r = p.read(id_, outs)
        return r.id, r.outs

    def delete(self, name, p, id_, outs):
        p.delete(id_, outs)


class Stack:
    """One stack's state and its `up`/`destroy` (see the module docstring)."""

    def __init__(self, stack: str = "test", organization: str = "org-a",
                 ctyun: Optional[Dict[str, Any]] = None, kimi: Optional[Dict[str, Any]] = None,
                 fast: Optional[Dict[str, Any]] = None, password: str = PASSWORD,
                 engine: Any = None, defer_shrink: bool = False):
        self.engine = engine or Direct()
        #: the program's wiring (a bootstrap follows): the cluster leaves a shrink to HccShrink
        self.defer_shrink = defer_shrink
        self.stack, self.organization = stack, organization
        self.ctyun = {"regionId": REGION, "azName": AZ, "specification": SPEC_910C,
                      "masterSpecification": MASTER_SPEC, **(ctyun or {})}
        self.kimi = {"target": "ctyun-hcc", "nodes": "4", "allowedCidrs": "203.0.113.0/24",
                     "sshAllowedCidrs": "198.51.100.7/32", **(kimi or {})}
        self.fast = {**FAST, **(fast or {})}
        self.password = password
        self.state: Dict[str, Tuple[str, Dict[str, Any]]] = {}
        self.providers = {"owner": HccStackOwnerProvider(), "net": HccNetworkProvider(),
                          "sg": HccSecurityGroupProvider(), "order": HccClusterOrderProvider(),
                          "cluster": HccClusterProvider()}

    def config(self, ctyun=None, kimi=None):
        shared = parse_settings({**self.kimi, **(kimi or {})}, self.stack)
        cfg = parse_hcc_config({**self.ctyun, **(ctyun or {})}, shared,
                               organization=self.organization)
        return cfg, shared

    def outs(self, name: str) -> Dict[str, Any]:
        return self.state[name][1]

    def _inputs(self, name: str, cfg, shared) -> Optional[Dict[str, Any]]:
        token = self.outs("owner")["ownerToken"] if "owner" in self.state else None
        creates_net = "create" in (cfg.vpc_id, cfg.subnet_id)
        vpc = self.outs("net")["vpcID"] if "net" in self.state else cfg.vpc_id
        subnet = self.outs("net")["subnetID"] if "net" in self.state else cfg.subnet_id
        if name == "owner":
            return {"ownerToken": None}
        if name == "net":
            return wiring.network_inputs(cfg, token, "") if creates_net else None
        if name == "sg":
            return wiring.group_inputs(cfg, shared, vpc, token, "")
        group_name = cfg.names.security_group if cfg.security_group == "create" else \
            self.outs("sg")["securityGroupName"]
        if name == "order":
            return wiring.order_inputs(cfg, vpc, subnet, group_name, self.password, "")
        o = self.outs("order")
        return wiring.cluster_inputs(cfg, vpc, subnet, o["jobUUID"], o["clusterUUID"],
                                     o["orderedAt"], o["resolved"],
                                     self.outs("sg")["securityGroupID"], self.password, "",
                                     defer_shrink=self.defer_shrink)

    def _fast(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
        return {**inputs, **{k: v for k, v in self.fast.items() if k in inputs}}

    def up(self, ctyun=None, kimi=None, replace=()) -> Dict[str, Any]:
        """One `pulumi up`: the cluster's outputs, or the first error (state kept as the
        engine keeps it). `replace` names resources to replace (`pulumi up --replace URN`:
        delete before replace, dependents first)."""
        cfg, shared = self.config(ctyun, kimi)
        e = self.engine
        for name in replace:
            if name in self.state:
                for later in reversed(ORDER[ORDER.index(name):]):
                    if later in self.state:
                        lid, louts = self.state.pop(later)
                        e.delete(later, self.providers[later], lid, louts)
        for name in ORDER:
            news = self._inputs(name, cfg, shared)
            p = self.providers[name]
            if news is None:
                continue
            news, failures = e.check(name, p, self._fast(news))
            if failures:
                raise CheckFailed(name, failures)
            if name in self.state:
                id_, olds = self.state[name]
                changes, replaces = e.diff(name, p, id_, olds, news)
                if replaces:
                    for later in reversed(ORDER[ORDER.index(name):]):
                        if later in self.state:
                            lid, louts = self.state.pop(later)
                            e.delete(later, self.providers[later], lid, louts)
                elif changes:
                    self.state[name] = (id_, e.update(name, p, id_, olds, news))
                    continue
                else:
                    continue
            self.state[name] = e.create(name, p, news)
        return self.outs("cluster")

    def state_delete(self, name: str) -> None:
        """`pulumi state delete <URN>`: the record dropped from state, nothing called."""
        self.state.pop(name, None)

    def refresh(self) -> None:
        for name in ORDER:
            if name in self.state:
                id_, outs = self.state[name]
                rid, routs = self.engine.read(name, self.providers[name], id_, outs)
                if rid:
                    self.state[name] = (rid, {**outs, **routs})
                else:
                    self.state.pop(name)

    def destroy(self) -> None:
        """One `pulumi destroy`: reverse order; a failure stops it with the rest kept."""
        for name in reversed(ORDER):
            if name in self.state:
                id_, outs = self.state[name]
                self.engine.delete(name, self.providers[name], id_, outs)
                self.state.pop(name)


def clean(emu) -> dict:
    """The emulator's report, asserting the ownership invariants every test shares."""
    report = emu.report()
    assert report["foreignTouched"] == [], report["foreignTouched"]
    return report
