"""The bare-metal side of the emulator (CTyun contract 7): device types, RAID types, and the
local-disk and subnet rules E-HPC's bare-metal orders must meet.

From the sources: doc 23930/23931 (bms order tables, as captured in ArvinZJC/ctyun-cli
@6dcc2310b657 public-doc-evidence.json): `localSystemVolumeRaidUUID` / `localDataVolumeRaidUUID`
"如果有本地系统盘/数据盘则必填，没有…时此参数无效" (required with local system / data disks,
ignored without), values from API 4576; `subnetID` "弹性裸金属需为普通子网ID，标准裸金属需为标准
裸金属ID" (elastic bare metal: an ordinary subnet; standard: a bare-metal one). API 4574 counts
system, data and NVMe volumes apart and CTyun's Terraform provider asks for a RAID uuid exactly
for the first two (github.com/ctyun-it/terraform-provider-ctyun @80651fd,
internal/service/ebm/resource_ctyun_ebm.go lines 767-771). The answer shapes are the contract's.

Undocumented, chosen here: a RAID uuid not listed for that device type and kind is refused
(`Hpc.ParamCheck.Invalid`, this emulator's code: CTyun's is not documented); one sent for a kind of
disk the server lacks is ignored, as the doc says. How the 910C reports its NVMe disks and
whether it is elastic or standard bare metal are open (6.16, 6.18): `Settings.bms_910c_disks`
(`nvme`: NVMe volumes, no data RAID; `data`: data volumes, a data RAID required) and
`bms_910c_kind` play each reading; `device_type_is_spec_name=False` lists the device types under
other names than E-HPC's specifications (6.15).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List

from . import catalog
from .catalog import REGION, Spec
from .state import Refusal, State

FIELD = {"system": "localSystemVolumeRaidUUID", "data": "localDataVolumeRaidUUID"}


def effective(st: State, spec: Spec) -> Spec:
    """`spec` as the settings make it (the 910C's disks and kind are open questions)."""
    if spec.name != catalog.SPEC_910C:
        return spec
    s = st.settings
    nvme = s.bms_910c_disks == "nvme"
    return replace(spec, data_volumes=0 if nvme else 2, nvme_volumes=2 if nvme else 0,
                   bare_metal=s.bms_910c_kind)


def device_type_name(st: State, spec: Spec) -> str:
    return spec.name if st.settings.device_type_is_spec_name else f"ebm.{spec.name}"


def volumes(spec: Spec, volume_type: str) -> int:
    return spec.system_volumes if volume_type == "system" else spec.data_volumes


def raid_rows(st: State, spec: Spec, volume_type: str) -> List[Dict[str, Any]]:
    if not volumes(spec, volume_type):
        return []
    name = device_type_name(st, spec)
    return [{"deviceType": name, "volumeType": volume_type.upper(),
             "uuid": catalog.raid_uuid(name, volume_type, raid), "nameEn": raid, "nameZh": raid,
             "volumeDetail": catalog.VOLUME_DETAIL[volume_type],
             "descriptionEn": f"{raid} of the local {volume_type} disks",
             "descriptionZh": f"本地{'系统' if volume_type == 'system' else '数据'}盘{raid}"}
            for raid in catalog.RAID_NAMES]


def _device_row(st: State, spec: Spec, az: str) -> Dict[str, Any]:
    ints = {k: 0 for k in ("cpuSockets", "numaNodeAmount", "cpuThreadAmount", "memAmount",
                           "memFrequency", "nicAmount", "nicRate", "systemVolumeSize",
                           "dataVolumeSize", "nvmeVolumeSize", "gpuAmount", "gpuSize",
                           "computeIBAmount", "computeIBRate", "storageIBAmount",
                           "storageIBRate", "computeRoCEAmount", "computeRoCERate",
                           "storageRoCEAmount", "storageRoCERate", "cloudVolumeAmount")}
    texts = {k: "" for k in ("cpuManufacturer", "cpuModel", "cpuFrequency", "systemVolumeType",
                             "systemVolumeInterface", "dataVolumeInterface", "dataVolumeType",
                             "nvmeVolumeType", "nvmeVolumeInterface", "gpuManufacturer",
                             "gpuModel", "deviceModel")}
    return {**ints, **texts,
            "id": 1 + [x.name for x in catalog.SPECS].index(spec.name), "region": REGION,
            "azName": az, "deviceType": device_type_name(st, spec), "nameZh": spec.name,
            "nameEn": spec.name, "cpuAmount": spec.cores, "memSize": spec.memory_mb // 1024,
            "systemVolumeAmount": spec.system_volumes, "dataVolumeAmount": spec.data_volumes,
            "nvmeVolumeAmount": spec.nvme_volumes,
            "systemVolumeSize": 480 if spec.system_volumes else 0,
            "dataVolumeSize": 3200 if spec.data_volumes else 0,
            "nvmeVolumeSize": 3200 if spec.nvme_volumes else 0,
            "systemVolumeDescription": (f"{spec.system_volumes}*480GB(SSD)"
                                        if spec.system_volumes else ""),
            "dataVolumeDescription": (f"{spec.data_volumes}*3200GB(NVMe)"
                                      if spec.data_volumes else ""),
            "smartNicExist": False, "supportCloud": spec.cloud_boot, "cloudBoot": spec.cloud_boot,
            "enableShadowVpc": False, "supportLava": False, "isSuperPod": False,
            "project": "standard" if spec.bare_metal == "standard" else "elastic",
            "createTime": "2026-01-01 00:00:00", "updateTime": "2026-01-01 00:00:00"}


def _bms_specs(st: State) -> List[Spec]:
    return [effective(st, s) for s in catalog.SPECS if s.type == "BMS"]


def _region(req: Dict[str, Any]) -> None:
    if req.get("regionID") != REGION:
        raise Refusal("Openapi.Parameter.Error", f"regionID {req.get('regionID')!r} not found")


def device_type_list(st: State, req, api, path):
    _region(req)
    rows = [_device_row(st, s, req["azName"]) for s in _bms_specs(st)
            if req.get("deviceType") in (None, device_type_name(st, s))]
    return {"totalCount": len(rows), "results": rows}


def raid_type_list(st: State, req, api, path):
    _region(req)
    rows = [r for s in _bms_specs(st) if device_type_name(st, s) == req["deviceType"]
            for r in raid_rows(st, s, req["volumeType"])]
    return {"totalCount": len(rows), "results": rows}


def check_bms_order(st: State, order: Dict[str, Any], spec: Spec, field: str) -> None:
    """The local-disk rule of one bms order entry (doc 23930/23931)."""
    spec = effective(st, spec)
    for volume_type, key in FIELD.items():
        if not volumes(spec, volume_type):
            continue  # "没有…时此参数无效": ignored without such disks
        sent = order.get(key)
        if not sent:
            raise Refusal("Hpc.ParamCheck.NotBlank", f"{field}.{key} is required: {spec.name} "
                                                     f"has local {volume_type} disks")
        listed = {r["uuid"] for r in raid_rows(st, spec, volume_type)}
        if sent not in listed:
            raise Refusal("Hpc.ParamCheck.Invalid", f"{field}.{key} {sent!r} is not a RAID type "
                                                    f"of {spec.name}'s {volume_type} disks "
                                                    "(raid-type-list)")


def raid_names(st: State, order: Dict[str, Any], spec: Spec) -> Dict[str, str]:
    """The RAID each kind of local disk got (for the inventory), by name."""
    spec = effective(st, spec)
    out = {}
    for volume_type, key in FIELD.items():
        for r in raid_rows(st, spec, volume_type):
            if r["uuid"] == order.get(key):
                out[volume_type] = r["nameEn"]
    return out


def subnet_kind_for(st: State, spec: Spec) -> int:
    """The subnet type (0 ordinary, 1 bare metal) an order of `spec` needs (doc 23930)."""
    if spec.type == "VM":
        return 0
    return 1 if effective(st, spec).bare_metal == "standard" else 0


HANDLERS = {"ebm/device-type-list": device_type_list, "ebm/raid-type-list": raid_type_list}
