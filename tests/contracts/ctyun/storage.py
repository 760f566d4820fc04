"""The file-system APIs kimi-k3 reads to prove a cluster's file system was released, as data.

CTyun contract 8. E-HPC orders the cluster's file system itself (doc 23930 `sfsOrder` SFS Turbo,
`oceanFSOrder` OceanFS) and whether delete-cluster releases it is not documented (CTyun
contract 6.3), so the destroy asks the file services. Tags (sources.py): `[catalog NNNN]` =
CTyun API doc NNNN as catalogued in ArvinZJC/ctyun-cli `openapi-catalogs/sfs/source.json` and
`openapi-catalogs/oceanfs/source.json` (parameters, answer columns, documented example answers);
`[tf]` = CTyun's Terraform provider `internal/core/sfs/*.go`, `internal/core/oceanfs/*.go`
(method, path, parameters, answer structs; NB: `sfs_sfs_create_sfs_api.go` holds info-sfs and
`sfs_sfs_info_sfs_api.go` holds list-sfs) and `internal/service/sfs/resource_ctyun_sfs.go` line
270 (its "gone" test: an error containing `NotFound` or `未找到`; the code itself is not in the
sources, CTyun contract 6.19). Hosts: `sfs-global.ctapi.ctyun.cn`, `oceanfs-global.ctapi.ctyun.cn`
([catalog] `plugins/sfs/plugin.json`, `plugins/oceanfs/plugin.json` endpoint_url).
"""

from __future__ import annotations

from .spec import Api, Field as F

HOSTS = {"sfs": "sfs-global.ctapi.ctyun.cn", "oceanfs": "oceanfs-global.ctapi.ctyun.cn"}
#: documented four ([catalog 8012/13429] "共4种"), plus the two [tf]'s info struct names
FS_STATUSES = ("creating", "available", "expired", "unusable", "deleting", "delete_error")
SFS_TYPES = ("capacity", "performance")
OCEANFS_TYPES = ("massive", "massive_perf")


def _q(name, type_="str", required="Y", **kw):
    return F(name, type_, required, "q", **kw)


def _r(name, type_="str", **kw):
    return F(name, type_, "-", "r", **kw)


SHARE = _r("vpceSharePath", "[obj]", fields=(
    _r("vpcID"), _r("vpcName"), _r("sharePath"), _r("sharePathV6"), _r("windowsSharePath"),
    _r("windowsSharePathV6"), _r("endpointID")))


def _fs_row(kind: str):
    common = (
        _r("sfsName"), _r("sfsUID"), _r("sfsSize", "int", note="GB"),
        _r("sfsType", enum=SFS_TYPES if kind == "sfs" else OCEANFS_TYPES),
        _r("sfsProtocol", enum=("nfs", "cifs")), _r("sfsStatus", enum=FS_STATUSES),
        _r("usedSize", "int", note="MB"), _r("createTime", "int", note="epoch ms"),
        _r("updateTime", "int"), _r("expireTime", "int"), _r("projectID"),
        _r("onDemand", "bool"), _r("regionID"), _r("azName"), _r("protectSwitch", "bool"),
        _r("sharePath"), _r("sharePathV6"), _r("windowsSharePath"), _r("windowsSharePathV6"),
        _r("mountCount", "int"), _r("cephID"), SHARE)
    if kind == "sfs":
        return common + (_r("isEncrypt", "bool"), _r("kmsUUID"), _r("phySharePath"))
    return common + (_r("used_size_charge", "bool"), _r("usedSizeCharge", "bool"))


def _info(kind: str, doc: str) -> Api:
    return Api(
        f"{kind}/info-sfs", kind, HOSTS[kind], "GET", f"/v4/{kind}/info-sfs", doc,
        f"[catalog {doc}] [tf]", "classic", answer="object",
        request=(_q("sfsUID", note="the file system's id"), _q("regionID")),
        response=_r("returnObj", "obj", source=f"[catalog {doc}]", fields=_fs_row(kind)),
        notes=("the answer for an id that no longer exists is not documented "
               "(CTyun contract 6.19): read a refusal as 'not proven', and list",))


def _list(kind: str, doc: str) -> Api:
    return Api(
        f"{kind}/list-sfs", kind, HOSTS[kind], "GET", f"/v4/{kind}/list-sfs", doc,
        f"[catalog {doc}] [tf]", "classic", answer="paged",
        request=(_q("regionID"), _q("projectID", required="-", note='default "0"'),
                 _q("pageSize", "int", "-", range=(1, 50), note="default 10"),
                 _q("pageNo", "int", "-", range=(1, 2 ** 31 - 1), note="default 1")),
        response=_r("returnObj", "obj", source=f"[catalog {doc}]", fields=(
            _r("list", "[obj]", fields=_fs_row(kind)), _r("total", "int"),
            _r("totalCount", "int"), _r("currentCount", "int"), _r("pageSize", "int"),
            _r("pageNo", "int"))),
        notes=("the count is `totalCount` and `total` ([tf] struct); OceanFS's documented "
               "example carries only `total` (contradiction 5.fs-list-total)",))


SFS_INFO = _info("sfs", "8012")
SFS_LIST = _list("sfs", "8014")
OCEANFS_INFO = _info("oceanfs", "13429")
OCEANFS_LIST = _list("oceanfs", "13431")

APIS = (SFS_INFO, SFS_LIST, OCEANFS_INFO, OCEANFS_LIST)
