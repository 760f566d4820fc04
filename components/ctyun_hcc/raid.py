"""Which RAID the bare-metal orders ask for, per local-disk kind, found by listing.

E-HPC's create and expand orders carry `localSystemVolumeRaidUUID` / `localDataVolumeRaidUUID`,
"required when the server has local system / data disks", with a uuid from API 4576
`raid-type-list` (doc 23930/23931 bms order tables; CTyun contract 7). Which kinds of local disk a
server has is what API 4574 `device-type-list` counts: `systemVolumeAmount`, `dataVolumeAmount`
and, apart, `nvmeVolumeAmount`; CTyun's Terraform provider asks for a RAID uuid exactly when the
first two are above 0 (github.com/ctyun-it/terraform-provider-ctyun @80651fd,
internal/service/ebm/resource_ctyun_ebm.go lines 767-771), and so does this module.

The layout, per kind (`ctyun:localSystemRaid`, `ctyun:localDataRaid`): "" (the default below),
`none` (send nothing), a RAID name as listed (`RAID1`, any case) or a uuid (`r-...`, sent as
given when nothing needs looking up). Defaults, from what the sources settle:
- system disks: RAID1, the type of doc 23930's example uuid (r-wtzluqacgzzxgunnabdkpnpjew3d is
  RAID1 in API 4576's documented answer); the OS boots from the one volume either way;
- data disks: none needed when the device type reports its disks as NVMe volumes: then no RAID
  field applies and the OS sees each NVMe disk (the seed's console-made A3 shows /dev/nvme0n1
  and /dev/nvme1n1, mounted apart). When it reports data volumes, a RAID must be chosen and no
  listed type is known to keep the disks apart (only RAID0 and RAID1 are evidenced; which block
  device the OS then shows is undocumented): no default, the order stops before anything is
  sent, naming the field, the device type and what it offers (docs/ctyun-hcc.md, "Local disks").
Whether E-HPC's specification name is the bare-metal device type is not documented (CTyun
contract 6.15): it is tried, `ctyun:bmsDeviceType` replaces it, and an unlisted one stops here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .api.ebm import VOLUME_TYPES, DeviceType, Ebm, RaidType
from .api.errors import ApiError, CtyunError

NONE = "none"
DEFAULT_SYSTEM = "RAID1"
#: doc 23930's field per kind of local disk, and the config key that chooses it
FIELD = {"system": "localSystemVolumeRaidUUID", "data": "localDataVolumeRaidUUID"}
KEY = {"system": "ctyun:localSystemRaid", "data": "ctyun:localDataRaid"}
#: API 4576's uuids: `r-` and 28 characters (its documented example)
UUID_RE = re.compile(r"^r-[0-9a-z]{28}$")
#: a RAID name as API 4576 lists it (`nameEn`: RAID0, RAID1, ...), or `none`
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_+.-]{0,31}$")
DOCS = "docs/ctyun-hcc.md, 'Local disks'"


class RaidError(CtyunError):
    """The RAID of a bare-metal order cannot be chosen as configured (named in the message)."""


def is_uuid(value: str) -> bool:
    return bool(UUID_RE.match(value or ""))


def choice_problem(value: str) -> Optional[str]:
    """Why `value` is not a RAID choice (config grammar), or None."""
    if value == "" or value.lower() == NONE or is_uuid(value) or NAME_RE.match(value):
        return None
    return "is not none, a RAID name as raid-type-list lists it (RAID1) or its uuid (r-...)"


@dataclass(frozen=True)
class RaidChoice:
    """What the config asks for: per kind of local disk, and the device type to ask about."""

    system: str = ""
    data: str = ""
    device_type: str = ""  # "" = the specification name

    def of(self, volume_type: str) -> str:
        value = self.system if volume_type == "system" else self.data
        return NONE if value.lower() == NONE else value

    def explicit(self) -> bool:
        """Nothing to look up: every kind is `none` or a uuid."""
        return all(self.of(v) == NONE or is_uuid(self.of(v)) for v in VOLUME_TYPES)


@dataclass(frozen=True)
class RaidLayout:
    """The RAID fields one specification's orders carry ("" = not sent), and why."""

    system_uuid: str = ""
    data_uuid: str = ""
    device_type: str = ""
    disks: str = ""
    system_name: str = ""
    data_name: str = ""

    def uuid(self, volume_type: str) -> str:
        return self.system_uuid if volume_type == "system" else self.data_uuid

    def to_dict(self) -> Dict[str, str]:
        return {"systemUuid": self.system_uuid, "dataUuid": self.data_uuid,
                "deviceType": self.device_type, "disks": self.disks,
                "systemName": self.system_name, "dataName": self.data_name}

    @classmethod
    def from_dict(cls, d: Optional[Dict[str, Any]]) -> "RaidLayout":
        d = d or {}
        return cls(str(d.get("systemUuid") or ""), str(d.get("dataUuid") or ""),
                   str(d.get("deviceType") or ""), str(d.get("disks") or ""),
                   str(d.get("systemName") or ""), str(d.get("dataName") or ""))

    def describe(self) -> str:
        parts = [f"{FIELD[v]}={self.uuid(v)}" + (f" ({n})" if n else "")
                 for v, n in (("system", self.system_name), ("data", self.data_name))
                 if self.uuid(v)]
        sent = "; ".join(parts) or "no RAID field"
        return f"{sent} (device type {self.device_type or '-'}: {self.disks or 'not asked'})"


def _listed(offered: List[RaidType]) -> str:
    return ", ".join(r.label() for r in offered) or "none listed"


def _explicit_layout(choice: RaidChoice) -> RaidLayout:
    def one(v: str) -> str:
        return "" if choice.of(v) == NONE else choice.of(v)
    return RaidLayout(one("system"), one("data"), choice.device_type, "not asked: set by uuid")


def _device(ebm: Ebm, az_name: str, spec_name: str, choice: RaidChoice, deadline) -> DeviceType:
    device_type = choice.device_type or spec_name
    where = "ctyun:bmsDeviceType" if choice.device_type else \
        "ctyun:bmsDeviceType (unset: the specification name)"
    try:
        found = ebm.device_types(az_name, device_type, deadline)
    except ApiError as e:
        raise RaidError(f"{where}={device_type!r}: /v4/ebm/device-type-list (API 4574) was "
                        f"refused ({e.code}: {e.message}), so the local disks of {spec_name} "
                        "cannot be read; give the RAID fields directly (ctyun:localSystemRaid, "
                        f"ctyun:localDataRaid = r-... from API 4576, or none): {DOCS}") from None
    if len(found) != 1:
        raise RaidError(
            f"{where}={device_type!r} is listed {len(found)} times by /v4/ebm/device-type-list "
            f"in AZ {az_name}: whether an E-HPC specification name is a bare-metal device type "
            "is not documented (open question 15), so the local disks of "
            f"{spec_name} are unknown; set ctyun:bmsDeviceType to the device type CTyun's "
            "bare-metal console shows for it, or give the RAID fields directly "
            f"(ctyun:localSystemRaid, ctyun:localDataRaid = r-... or none): {DOCS}")
    return found[0]


def _pick(dev: DeviceType, volume_type: str, want: str, offered: List[RaidType]) -> RaidType:
    """The listed type `want` names, or the default; RaidError naming field, value, offer."""
    field, key = FIELD[volume_type], KEY[volume_type]
    need = (f"{field} is required: device type {dev.device_type} has local {volume_type} "
            f"disks ({dev.disks()}; doc 23930)")
    if is_uuid(want) or (want and want != NONE):
        hit = [r for r in offered if r.uuid == want or r.name.lower() == want.lower()]
        if len(hit) == 1:
            return hit[0]
        raise RaidError(f"{key}={want!r}: {need}, and raid-type-list (API 4576) offers "
                        f"{_listed(offered)}; choose one of them")
    if want == NONE:
        raise RaidError(f"{key}='none': {need}; choose one of {_listed(offered)}")
    if volume_type == "system":
        hit = [r for r in offered if r.name.upper() == DEFAULT_SYSTEM]
        if len(hit) == 1:
            return hit[0]
        raise RaidError(f"{key} unset: {need}, the default {DEFAULT_SYSTEM} is not offered "
                        f"(raid-type-list: {_listed(offered)}); choose one with {key}")
    raise RaidError(
        f"{key} unset: {need}, and it has no default: the types offered ({_listed(offered)}) "
        "make one volume of the disks, whose block device is not documented (open question 16), "
        "while the mount step expects the NVMe disks apart (/dev/nvme0n1, /dev/nvme1n1); "
        f"choose one with {key}, mount that volume yourself and set kimi-k3:mountDisks=false "
        f"({DOCS})")


def layout_for(ebm: Ebm, az_name: str, spec_name: str, choice: RaidChoice,
               deadline=None) -> RaidLayout:
    """The RAID fields of a bare-metal specification's orders (one device-type-list call, one
    raid-type-list call per kind of local disk that needs a RAID; none when both kinds are
    given as `none` or a uuid), or RaidError naming the field, the value and the fix."""
    if choice.explicit():
        return _explicit_layout(choice)
    dev = _device(ebm, az_name, spec_name, choice, deadline)
    for volume_type in VOLUME_TYPES:
        want = choice.of(volume_type)
        if not dev.needs_raid(volume_type) and want and want != NONE:
            raise RaidError(
                f"{KEY[volume_type]}={want!r}, but device type {dev.device_type} has no local "
                f"{volume_type} disks ({dev.disks()}): doc 23930 ignores {FIELD[volume_type]} "
                f"then (NVMe disks are counted apart and take no RAID field); unset "
                f"{KEY[volume_type]}")
    picked: Dict[str, Optional[RaidType]] = {}
    for volume_type in VOLUME_TYPES:
        picked[volume_type] = None
        if dev.needs_raid(volume_type):
            offered = ebm.raid_types(az_name, dev.device_type, volume_type, deadline)
            picked[volume_type] = _pick(dev, volume_type, choice.of(volume_type), offered)
    system, data = picked["system"], picked["data"]
    return RaidLayout(system.uuid if system else "", data.uuid if data else "",
                      dev.device_type, dev.disks(), system.name if system else "",
                      data.name if data else "")


#: words in a refusal that point at the RAID fields or the subnet (CTyun's codes for either are
#: not documented: CTyun contract 1.4)
_RAID_WORDS = re.compile(r"raid|localSystemVolume|localDataVolume|本地(系统|数据)盘", re.I)
_SUBNET_WORDS = re.compile(r"subnet|子网", re.I)


def explain_refusal(err: ApiError, layouts: Dict[str, RaidLayout],
                    subnet_type: str = "") -> Optional[str]:
    """A one-line account of an order CTyun refused over a RAID field or the subnet, naming the
    field, what was sent and the config key that changes it; None for any other refusal."""
    said = f"{err.code}: {err.message}"
    if _RAID_WORDS.search(said):
        sent = "; ".join(f"{role}: {lay.describe()}" for role, lay in layouts.items())
        return (f"CTyun refused the order on a RAID field of the local disks ({said}); sent "
                f"{sent}. Choose another with ctyun:localSystemRaid / ctyun:localDataRaid "
                f"(a name or uuid from raid-type-list, API 4576), or ctyun:bmsDeviceType if "
                f"the device type is not the specification's name: {DOCS}")
    if _SUBNET_WORDS.search(said) and subnet_type:
        other = "cbm" if subnet_type == "common" else "common"
        return (f"CTyun refused the order on its subnet ({said}); the subnet is "
                f"ctyun:subnetType={subnet_type}: doc 23930 wants an ordinary subnet for elastic "
                "bare metal and a bare-metal (cbm) subnet for standard bare metal, and which "
                f"the 910C is is not documented (open question 18); try ctyun:subnetType="
                f"{other} (docs/ctyun-hcc.md, 'Subnet type')")
    return None
