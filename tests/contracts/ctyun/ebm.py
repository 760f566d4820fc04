"""The bare-metal (EBM, "DPS") APIs kimi-k3 uses to order local disks as documented, as data.

CTyun contract 7. The E-HPC create and expand orders (doc 23930/23931, bms orders) carry
`localSystemVolumeRaidUUID` / `localDataVolumeRaidUUID`, "required when the server has local
system / data disks", whose values come from API 4576 (the link in doc 23930's table). Tags
(sources.py): `[catalog NNNN]` = CTyun API doc NNNN as catalogued in ArvinZJC/ctyun-cli
`openapi-catalogs/dps/source.json` (parameters, answer columns, documented example answer);
`[tf]` = CTyun's Terraform provider, `internal/core/ctebm/ebm_raid_type_list_api.go` and
`ebm_device_type_list_api.go` (method, path, query parameters, answer structs), and
`internal/service/ebm/resource_ctyun_ebm.go` lines 767-771 (a RAID uuid is demanded exactly when
`systemVolumeAmount` / `dataVolumeAmount` > 0; NVMe volumes are counted apart).
Host: `ebm-global.ctapi.ctyun.cn` ([tf] `ctyun_provider.go` `https://%s-global.ctapi.ctyun.cn`
with the endpoint name `ebm`; [catalog] `plugins/dps/plugin.json` endpoint_url).
"""

from __future__ import annotations

from .spec import Api, Field as F

HOST = "ebm-global.ctapi.ctyun.cn"
BASE = "/v4/ebm"
SRC = "[catalog 4574] [tf]"


def _q(name, type_="str", required="Y", **kw):
    return F(name, type_, required, "q", **kw)


def _r(name, type_="str", **kw):
    return F(name, type_, "-", "r", **kw)


AZ_NOTE = ("a multi-AZ region: the AZ's name; a single-AZ region (zoneList empty): the word "
           "default")
VOLUME_TYPES = ("system", "data")
#: the answer spells the volume type in upper case ([catalog 4576] example, columns)
ANSWER_VOLUME_TYPES = ("SYSTEM", "DATA")

# ---------------------------------------------------------------- 7.1 device-type-list (4574)
_INTS = ("id", "cpuSockets", "numaNodeAmount", "cpuAmount", "cpuThreadAmount", "memAmount",
         "memSize", "memFrequency", "nicAmount", "nicRate", "systemVolumeAmount",
         "systemVolumeSize", "dataVolumeAmount", "dataVolumeSize", "nvmeVolumeAmount",
         "nvmeVolumeSize", "gpuAmount", "gpuSize", "computeIBAmount", "computeIBRate",
         "storageIBAmount", "storageIBRate", "computeRoCEAmount", "computeRoCERate",
         "storageRoCEAmount", "storageRoCERate", "cloudVolumeAmount")
_TEXTS = ("region", "azName", "deviceType", "nameZh", "nameEn", "cpuManufacturer", "cpuModel",
          "cpuFrequency", "systemVolumeType", "systemVolumeInterface",
          "systemVolumeDescription", "dataVolumeInterface", "dataVolumeType",
          "dataVolumeDescription", "nvmeVolumeType", "nvmeVolumeInterface", "gpuManufacturer",
          "gpuModel", "deviceModel", "project", "createTime", "updateTime")
_BOOLS = ("smartNicExist", "supportCloud", "cloudBoot", "enableShadowVpc", "supportLava",
          "isSuperPod")
DEVICE_ROW = tuple(_r(n, "int") for n in _INTS) + tuple(_r(n) for n in _TEXTS) + \
    tuple(_r(n, "bool") for n in _BOOLS)
DEVICE_TYPE_LIST = Api(
    "ebm/device-type-list", "ebm", HOST, "GET", f"{BASE}/device-type-list", "4574", SRC,
    "classic", answer="list",
    request=(_q("regionID"), _q("azName", note=AZ_NOTE),
             _q("deviceType", required="-", note="one device type (物理机套餐类型) only")),
    response=_r("returnObj", "obj", source=SRC, fields=(
        _r("totalCount", "int"),
        _r("results", "[obj]", fields=DEVICE_ROW,
           note="system*, data* and nvme* volume counts apart (a RAID uuid belongs to the "
                "system and data volumes only: [tf] resource_ctyun_ebm.go 767-771)"))),
    notes=("whether E-HPC's specificationName is a deviceType here is not documented "
           "(CTyun contract 6.15)",))

# ---------------------------------------------------------------- 7.2 raid-type-list (4576)
RAID_ROW = (_r("deviceType"), _r("volumeType", enum=ANSWER_VOLUME_TYPES), _r("uuid"),
            _r("nameEn"), _r("nameZh"), _r("volumeDetail"), _r("descriptionEn"),
            _r("descriptionZh"))
RAID_TYPE_LIST = Api(
    "ebm/raid-type-list", "ebm", HOST, "GET", f"{BASE}/raid-type-list", "4576",
    "[catalog 4576] [tf]", "classic", answer="list",
    request=(_q("regionID"), _q("azName", note=AZ_NOTE),
             _q("deviceType", note="the bare-metal device type (物理机套餐类型)"),
             _q("volumeType", enum=VOLUME_TYPES, note="system (系统盘) or data (数据盘)")),
    response=_r("returnObj", "obj", source="[catalog 4576]", fields=(
        _r("totalCount", "int"), _r("results", "[obj]", fields=RAID_ROW))),
    notes=("the documented example lists RAID0 and RAID1 only; no enumeration is published "
           "(CTyun contract 6.16)",
           "uuid: r- and 28 characters; the value to send as local*VolumeRaidUUID (doc 23930)"))

APIS = (DEVICE_TYPE_LIST, RAID_TYPE_LIST)
