"""Inputs shared by the cluster order and the cluster lifecycle resources, and their checks.

Field names follow CTyun's API where there is one (`regionID`, `azName`, `clusterName`,
`queueName`, the BMS disk fields); every check is the documented rule (api/rules.py) so `check`
refuses a bad value before any call, in one line, naming the config key behind it.
"""

from __future__ import annotations

from typing import Any, Dict

from pulumi.dynamic import CheckFailure

from . import provider_runtime as rt
from .api import rules
from .api.ehpc import Billing, BmsDisks, ServerOrder, SystemDisk
from .billables import Ordered
from .raid import RaidChoice, RaidLayout, choice_problem

#: the stack config behind an input, for messages
CONFIG_KEY = {
    "localSystemRaid": "ctyun:localSystemRaid", "localDataRaid": "ctyun:localDataRaid",
    "regionID": "ctyun:regionId", "azName": "ctyun:azName", "clusterName": "ctyun:clusterName",
    "queueName": "ctyun:queueName", "rootPassword": "ctyun:rootPassword",
    "computeNodeCount": "kimi-k3:nodes", "storageSizeGB": "ctyun:storageSizeGb",
    "storageName": "ctyun:storageName", "eipBandwidthMbps": "ctyun:eipBandwidthMbps",
}
CONFIG_HINT = {
    "regionID": "pulumi config set ctyun:regionId <region id>",
    "azName": "pulumi config set ctyun:azName <availability zone>",
    "rootPassword": "pulumi config set --secret ctyun:rootPassword <password>",
}
#: the order fields of a server (used by create and by expand); the RAID of the local disks is
#: a choice (raid.py) resolved by the order into `resolved`
SERVER_DEFAULTS: Dict[str, Any] = {
    "onDemand": True, "cycleType": "", "cycleCount": 0,
    "localSystemRaid": "", "localDataRaid": "", "bmsDeviceType": "",
    "cloudSystemDiskType": "", "cloudSystemDiskSizeGb": 0,
    "systemDiskType": "SSD", "systemDiskSizeGb": 100,
}
#: inputs renamed since stacks were deployed: their values are RAID choices too (a uuid)
RENAMED = {"localSystemVolumeRaidUuid": "localSystemRaid",
           "localDataVolumeRaidUuid": "localDataRaid"}
DEADLINE_KEYS = ("timeoutS", "createTimeoutS", "updateTimeoutS", "deleteTimeoutS",
                 "lostAnswerWaitS", "pollIntervalS")


def server_order(p: Dict[str, Any], spec_uuid: str, spec_type: str,
                 raid: RaidLayout = RaidLayout()) -> ServerOrder:
    """One role's server order: its specification, the subnet, and the disk fields its kind
    takes (a bare-metal order the RAID fields `raid` resolved)."""
    return ServerOrder(
        spec_uuid, spec_type, str(p["subnetID"]),
        system_disk=SystemDisk(str(p["systemDiskType"]), int(p["systemDiskSizeGb"])),
        bms_disks=BmsDisks(raid.system_uuid, raid.data_uuid,
                           str(p["cloudSystemDiskType"] or ""),
                           int(p["cloudSystemDiskSizeGb"] or 0)))


def raid_choice(p: Dict[str, Any]) -> RaidChoice:
    """The RAID the config asks for (ctyun:localSystemRaid, localDataRaid, bmsDeviceType)."""
    return RaidChoice(str(p["localSystemRaid"] or ""), str(p["localDataRaid"] or ""),
                      str(p["bmsDeviceType"] or ""))


def ordered(p: Dict[str, Any]) -> Ordered:
    """What the create order asks E-HPC for besides servers: an EIP (a bandwidth above 0) and
    a file system (unless `storageUid` names an existing one, which is not the stack's)."""
    own_fs = not p.get("storageUid")
    name = p.get("storageName") or f"{p['clusterName']}-fs"
    return Ordered(eip=bool(p.get("eipBandwidthMbps")), fs_name=name if own_fs else "",
                   fs_kind=str(p.get("storageType") or "sfs") if own_fs else "")


def billing(p: Dict[str, Any]) -> Billing:
    return Billing(bool(p["onDemand"]), str(p["cycleType"] or ""), int(p["cycleCount"] or 0))


def _int(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v == int(v) else v


class Failures:
    """Collects check failures; unknown (preview) values are never judged."""

    def __init__(self, news: Dict[str, Any]):
        self.n, self.items = news, []  # type: Dict[str, Any], List[CheckFailure]

    def bad(self, key: str, reason: str) -> None:
        self.items.append(CheckFailure(key, reason))

    def value(self, key: str, default: Any = None) -> Any:
        v = self.n.get(key, default)
        return _int(v) if rt.known(v) else None

    def required(self, *keys: str) -> None:
        for key in keys:
            v = self.n.get(key)
            if v is None or v == "":
                hint = CONFIG_HINT.get(key)
                self.bad(key, f"{key} is required" + (f": {hint}" if hint else ""))

    def rule(self, key: str, problem_of, optional: bool = False) -> None:
        v = self.value(key)
        if v is None or (optional and v == ""):
            return
        problem = problem_of(v)
        if problem:
            shown = "(value not shown)" if key == "rootPassword" else repr(v)
            where = CONFIG_KEY.get(key, key)
            self.bad(key, f"{where}={shown} {problem}" if key != "rootPassword"
                     else f"{where} {problem} {shown}")

    def int_range(self, key: str, lo: int, hi: int, allow_zero: bool = False) -> None:
        v = self.value(key)
        if v is None or (allow_zero and v == 0):
            return
        if not rules.int_in(v, lo, hi):
            self.bad(key, f"{CONFIG_KEY.get(key, key)}={v!r} must be an integer from {lo} to "
                          f"{hi}" + (" (or 0)" if allow_zero else ""))

    def choice(self, key: str, options) -> None:
        v = self.value(key)
        if v is not None and v not in options:
            self.bad(key, f"{key}={v!r} must be one of {', '.join(map(str, options))}")

    def boolean(self, key: str) -> None:
        v = self.n.get(key)
        if rt.known(v) and not isinstance(v, bool):
            self.bad(key, f"{key}={v!r} must be true or false")


def check_server_fields(f: Failures) -> None:
    f.boolean("onDemand")
    if f.value("onDemand") is False:
        cycle = f.value("cycleType")
        if cycle not in rules.CYCLE_COUNT:
            f.bad("cycleType", f"ctyun:cycleType={cycle!r} must be MONTH or YEAR for a "
                               "subscription (ctyun:onDemand=false)")
        else:
            f.int_range("cycleCount", *rules.CYCLE_COUNT[cycle])
    for key in ("localSystemRaid", "localDataRaid"):
        f.rule(key, choice_problem, optional=True)
    f.choice("systemDiskType", rules.SYSTEM_DISK_TYPES)
    f.int_range("systemDiskSizeGb", *rules.SYSTEM_DISK_GB)
    if f.value("cloudSystemDiskType") or f.value("cloudSystemDiskSizeGb"):
        f.choice("cloudSystemDiskType", rules.SYSTEM_DISK_TYPES)
        f.int_range("cloudSystemDiskSizeGb", *rules.SYSTEM_DISK_GB)


def check_deadlines(f: Failures) -> None:
    for key in DEADLINE_KEYS:
        v = f.value(key)
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool)
                                  and 0 < v <= 86400):
            f.bad(key, f"{key}={v!r} must be a number of seconds from 0 to 86400")
