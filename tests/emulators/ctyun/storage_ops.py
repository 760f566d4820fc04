"""The file services of the emulator (CTyun contract 8): SFS Turbo and OceanFS, read-only.

The file systems are those E-HPC orders with a cluster (ehpc_ops.create_cluster) and releases
with it (`Settings.delete_releases_storage`; CTyun contract 6.3). From the sources (ArvinZJC/
ctyun-cli @208ae793 openapi-catalogs/sfs|oceanfs/source.json, APIs 8012/8014/13429/13431):
`info-sfs` by `sfsUID` answers one file system, `list-sfs` pages the region's (pageSize 1-50)
under `returnObj.list`. What `info-sfs` answers for an id that no longer exists is not
documented (CTyun contract 6.19): this emulator refuses with its own code, `NOT_FOUND` below,
which no client should rely on.
"""

from __future__ import annotations

from typing import Any, Dict

from .catalog import REGION
from .state import Refusal, State

#: this emulator's own code (the real one is not documented: CTyun contract 6.19)
NOT_FOUND = "Sfs.Emulator.NoSuchFileSystem"


def _region(req: Dict[str, Any]) -> None:
    if req.get("regionID") != REGION:
        raise Refusal("Openapi.Parameter.Error", f"regionID {req.get('regionID')!r} not found")


def _row(kind: str, f: Dict[str, Any]) -> Dict[str, Any]:
    share = f"100.127.0.10:/mnt/{kind}/{f['id']}"
    row = {"sfsName": f["name"], "sfsUID": f["id"], "sfsSize": f["sizeGB"],
           "sfsType": f["type"], "sfsProtocol": "nfs", "sfsStatus": f["status"],
           "usedSize": 0, "createTime": 1767225600000, "updateTime": 1767225600000,
           "expireTime": 0, "projectID": "0", "onDemand": True, "regionID": REGION,
           "azName": f["az"], "protectSwitch": False, "sharePath": share, "sharePathV6": "",
           "windowsSharePath": "", "windowsSharePathV6": "", "mountCount": 0,
           "cephID": f["id"][:16],
           "vpceSharePath": [{"vpcID": f["vpc"], "vpcName": "", "sharePath": share,
                              "sharePathV6": "", "windowsSharePath": "",
                              "windowsSharePathV6": "", "endpointID": "endpoint-emu"}]}
    if kind == "sfs":
        row.update(isEncrypt=False, kmsUUID="", phySharePath=share)
    else:
        row.update(used_size_charge=False, usedSizeCharge=False)
    return row


def _info(kind: str):
    def info(st: State, req, api, path):
        _region(req)
        f = st.filesystems.get(req["sfsUID"])
        if f is None or f["kind"] != kind:
            raise Refusal(NOT_FOUND, f"no {kind} file system {req['sfsUID']!r}")
        return _row(kind, f)
    return info


def _list(kind: str):
    def list_(st: State, req, api, path):
        _region(req)
        rows = [_row(kind, f) for f in st.filesystems.values() if f["kind"] == kind
                and req.get("projectID", "0") == "0"]
        size, no = int(req.get("pageSize", 10)), int(req.get("pageNo", 1))
        part = rows[(no - 1) * size: no * size]
        return {"list": part, "total": len(rows), "totalCount": len(rows),
                "currentCount": len(part), "pageSize": size, "pageNo": no}
    return list_


HANDLERS = {"sfs/info-sfs": _info("sfs"), "sfs/list-sfs": _list("sfs"),
            "oceanfs/info-sfs": _info("oceanfs"), "oceanfs/list-sfs": _list("oceanfs")}
