"""CTyun bare metal (`/v4/ebm/`): the local disks of a device type and the RAID types it offers.

Contract: CTyun contract 7 (tests/contracts/ctyun/ebm.py): `device-type-list` (API 4574) and
`raid-type-list` (API 4576), both GET on `ebm-global.ctapi.ctyun.cn`, answering
`returnObj.results` with `totalCount`. Why kimi-k3 asks: E-HPC's bare-metal orders carry
`localSystemVolumeRaidUUID` / `localDataVolumeRaidUUID`, "required when the server has local
system / data disks", whose values are API 4576's `uuid`s (doc 23930, bmsMasterNodeOrder /
bmsComputeNodeOrders, https://eop.ctyun.cn/ebp/ctapiDocument/search?sid=8&api=23930&data=106).
CTyun's Terraform provider demands a RAID uuid exactly when `systemVolumeAmount` / `dataVolumeAmount`
is above 0 and counts NVMe volumes apart (github.com/ctyun-it/terraform-provider-ctyun @80651fd,
internal/service/ebm/resource_ctyun_ebm.go lines 767-771): the same rule is read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from .errors import ResponseError
from .parse import Obj, return_obj
from .transport import Operation, Transport

DEVICE_TYPES = Operation("ebm", "GET", "/v4/ebm/device-type-list", "4574", True)
RAID_TYPES = Operation("ebm", "GET", "/v4/ebm/raid-type-list", "4576", True)
OPERATIONS = (DEVICE_TYPES, RAID_TYPES)

#: what raid-type-list takes (`volumeType`) and answers (the answer spells it in upper case)
VOLUME_TYPES = ("system", "data")


@dataclass(frozen=True)
class DeviceType:
    """The disks of one bare-metal device type (counts of local disks by kind)."""

    device_type: str
    system_volumes: int
    system_description: str
    data_volumes: int
    data_description: str
    nvme_volumes: int
    nvme_size_gb: int
    cloud_boot: Optional[bool]
    project: str

    def needs_raid(self, volume_type: str) -> bool:
        """Does an order of this device type need a RAID uuid for `volume_type` disks?"""
        return (self.system_volumes if volume_type == "system" else self.data_volumes) > 0

    def disks(self) -> str:
        """The local disks in words, for messages."""
        parts = [f"{n} {what}" for n, what in ((self.system_volumes, "system"),
                                               (self.data_volumes, "data"),
                                               (self.nvme_volumes, "NVMe")) if n]
        return ", ".join(parts) or "no local disk"


@dataclass(frozen=True)
class RaidType:
    uuid: str
    name: str          # nameEn, e.g. RAID1
    name_zh: str
    volume_type: str   # system | data (lower case, as requested)
    detail: str        # volumeDetail, e.g. "2*480 SSD"
    device_type: str

    def label(self) -> str:
        return f"{self.name} ({self.uuid}{', ' + self.detail if self.detail else ''})"


def _text(o: Obj, key: str) -> str:
    return o.str(key, required=False, nullable=True) or ""


def parse_device_type(o: Obj) -> DeviceType:
    return DeviceType(
        o.str("deviceType", nonempty=True), o.int("systemVolumeAmount"),
        _text(o, "systemVolumeDescription"), o.int("dataVolumeAmount"),
        _text(o, "dataVolumeDescription"), o.int("nvmeVolumeAmount"),
        o.int("nvmeVolumeSize", required=False, nullable=True) or 0,
        o.bool("cloudBoot", required=False, nullable=True), _text(o, "project"))


def parse_raid_type(o: Obj) -> RaidType:
    volume = o.str("volumeType").lower()
    if volume not in VOLUME_TYPES:
        o.enum("volumeType", ("SYSTEM", "DATA"))  # raises, naming the field and the value
    return RaidType(o.str("uuid", nonempty=True), o.str("nameEn"), _text(o, "nameZh"), volume,
                    _text(o, "volumeDetail"), _text(o, "deviceType"))


def _results(api: str, value: Any) -> List[Obj]:
    ret = return_obj(api, value)
    rows = ret.objs("results")
    total = ret.int("totalCount")
    if total != len(rows):
        # the API documents no paging: a count that does not match is not a shorter list
        raise ResponseError(api, "returnObj.totalCount", f"is {total} for {len(rows)} results",
                            total)
    return rows


def read_device_types(value: Any) -> List[DeviceType]:
    return [parse_device_type(o) for o in _results(DEVICE_TYPES.name, value)]


def read_raid_types(value: Any) -> List[RaidType]:
    return [parse_raid_type(o) for o in _results(RAID_TYPES.name, value)]


ANSWERS = {DEVICE_TYPES.name: read_device_types, RAID_TYPES.name: read_raid_types}


class Ebm:
    """Bare-metal catalogue calls of one region (built per provider call, never pickled)."""

    def __init__(self, transport: Transport, region_id: str):
        self.t, self.region_id = transport, region_id

    def device_types(self, az_name: str, device_type: Optional[str] = None,
                     deadline=None) -> List[DeviceType]:
        """The AZ's device types (only `device_type`'s, when given: matched exactly here)."""
        value = self.t.call(DEVICE_TYPES, params={
            "regionID": self.region_id, "azName": az_name, "deviceType": device_type},
            deadline=deadline)
        rows = read_device_types(value)
        return [d for d in rows if device_type is None or d.device_type == device_type]

    def raid_types(self, az_name: str, device_type: str, volume_type: str,
                   deadline=None) -> List[RaidType]:
        """The RAID types `device_type` offers for its `volume_type` ("system"/"data") disks."""
        if volume_type not in VOLUME_TYPES:
            raise ValueError(f"volume_type must be one of {VOLUME_TYPES}, not {volume_type!r}")
        value = self.t.call(RAID_TYPES, params={
            "regionID": self.region_id, "azName": az_name, "deviceType": device_type,
            "volumeType": volume_type}, deadline=deadline)
        return [r for r in read_raid_types(value) if r.volume_type == volume_type]
