"""Where every fact of the CTyun contract comes from: the upstream sources behind its tags.

The contract's data (ehpc.py, vpc.py, examples.py, checks.py, convention.py, gaps.py) tags each
fact with its source in square brackets, e.g. `[doc 23930]`, `[ex]`, `[tf]`; this table says
what each tag is: a URL and the commit or date it was read at. Code elsewhere in the repository
cites the same tags and the contract's section numbers (`CTyun contract 2.6`; README.md here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

CTYUN_CLI = "https://github.com/ArvinZJC/ctyun-cli"
CTYUN_CLI_COMMIT = "6dcc2310b657f6a00017559c9930eb7ae7f07125"
TERRAFORM = "https://github.com/ctyun-it/terraform-provider-ctyun"
TERRAFORM_COMMIT = "80651fddcdcba0feaac09c4b559958344a8fd567"   # v1.2.0, 2025-09-26
#: the same repository later: its catalogues of the bare-metal (dps), SFS and OceanFS APIs
CTYUN_CLI_CATALOG_COMMIT = "208ae793f89fe54607487b0805ca20dfc758a9f9"   # 2026-07-22
GO_SDK = "https://github.com/ctyun-it/ctyun-sdk-go"
GO_SDK_COMMIT = "ffde8493f9270becddf655a3d918e22c4c88e464"       # 2025-01-03


@dataclass(frozen=True)
class Source:
    tag: str
    what: str
    url: str
    commit: str = ""       # a git commit, when the source is a repository
    date: str = ""         # when it was read or captured
    paths: Tuple[str, ...] = ()


def ehpc_doc_url(doc_id: str) -> str:
    """CTyun's API documentation page of an E-HPC API (the link CTyun's own tables use)."""
    return f"https://eop.ctyun.cn/ebp/ctapiDocument/search?sid=8&api={doc_id}&data=106"


def vpc_doc_url(doc_id: str) -> str:
    """CTyun's documentation page of a VPC API (as linked from the Terraform provider's clients)."""
    return f"https://www.ctyun.cn/document/10026755/{doc_id}"


SOURCES = {s.tag: s for s in (
    Source("doc", "CTyun API doc NNNNN (E-HPC 239xx/13086: the official parameter tables), as "
           "captured on 2026-09-24 in ArvinZJC/ctyun-cli; page: ehpc_doc_url(NNNNN). Tables "
           "exist for 23926, 23927, 23928, 23930, 23931, 23932, 23934, 23936, 23938, 23940, "
           "23941, 23943, 23944, 23947 and (response only) 23951",
           CTYUN_CLI, CTYUN_CLI_COMMIT, "2026-09-24",
           ("openapi-catalogs/ehpc/public-doc-evidence.json",)),
    Source("ex", "a documented example request or answer of CTyun's API docs, as captured in "
           "ArvinZJC/ctyun-cli (request_example, example_response; the CLI's fixtures)",
           CTYUN_CLI, CTYUN_CLI_COMMIT, "2026-09-24",
           ("openapi-catalogs/ehpc/source.json", "plugins/ehpc/fixtures/*.json")),
    Source("cli", "ArvinZJC/ctyun-cli's E-HPC plugin: method and path of every operation, the "
           "host, the job waiters", CTYUN_CLI, CTYUN_CLI_COMMIT, "2026-09-24",
           ("plugins/ehpc/apis.json", "plugins/ehpc/plugin.json", "plugins/ehpc/waiters.json")),
    Source("old", "the older E-HPC API family (doc ids 5620-13103; e.g. 5621 delete-cluster, "
           "5624 cluster detail, 13086 list-regions) as catalogued in ArvinZJC/ctyun-cli",
           CTYUN_CLI, CTYUN_CLI_COMMIT, "2026-09-24", ("openapi-catalogs/ehpc/source.json",)),
    Source("tf", "CTyun's official Terraform provider: generated VPC request/response structs, "
           "the hand-written client (each file links its doc page vpc_doc_url(id)), EOP signing, "
           "error codes",
           TERRAFORM, TERRAFORM_COMMIT, "2025-09-26",
           ("internal/core/ctvpc/*.go", "internal/core/ctyun-sdk-endpoint/ctvpc/*.go",
            "internal/core/core/request.go", "internal/core/core/client.go",
            "internal/core/ctyun-sdk-core/response.go", "internal/common/error_code.go",
            "internal/service/vpc/resource_ctyun_vpc.go", "internal/service/ctyun_provider.go",
            "internal/core/ctebm/ebm_raid_type_list_api.go",
            "internal/core/ctebm/ebm_device_type_list_api.go",
            "internal/service/ebm/resource_ctyun_ebm.go", "internal/core/sfs/*.go",
            "internal/core/oceanfs/*.go", "internal/service/sfs/resource_ctyun_sfs.go",
            "internal/core/ctvpc/ctvpc_new_eip_list_api.go",
            "internal/core/ctyun-sdk-endpoint/ctvpc/eip_show.go",
            "internal/business/eip_const.go", "internal/service/vpc/resource_ctyun_eip.go",
            "internal/core/ctvpc/ctvpc_create_sg_ingress_rule_api.go",
            "internal/core/ctvpc/ctvpc_modify_sg_ingress_rule_api.go",
            "internal/core/ctvpc/ctvpc_vpc_create_subnet_api.go")),
    Source("sdk", "CTyun's official Go SDK, VPC endpoint clients", GO_SDK, GO_SDK_COMMIT,
           "2025-01-03", ("ctyun-sdk-endpoint/ctvpc/*.go",)),
    Source("vpc-doc", "CTyun VPC API doc page NNNNNNNN, as linked from the Terraform provider's "
           "hand-written clients; page: vpc_doc_url(NNNNNNNN)",
           "https://www.ctyun.cn/document/10026755/", date="2025-09-26"),
    Source("catalog", "CTyun API doc NNNN of the bare-metal (4574 device-type-list, 4576 "
           "raid-type-list), SFS Turbo (8012 info-sfs, 8014 list-sfs) and OceanFS (13429, "
           "13431) services as catalogued in ArvinZJC/ctyun-cli: parameters, answer columns, "
           "the documented example answer, the endpoint; page: "
           "https://eop.ctyun.cn/ebp/ctapiDocument/search?api=NNNN (the catalogue's docs_url)",
           CTYUN_CLI, CTYUN_CLI_CATALOG_COMMIT, "2026-07-22",
           ("openapi-catalogs/dps/source.json", "openapi-catalogs/sfs/source.json",
            "openapi-catalogs/oceanfs/source.json", "plugins/dps/plugin.json",
            "plugins/sfs/plugin.json", "plugins/oceanfs/plugin.json",
            "plugins/dps/fixtures/dps-raid-type-list.json",
            "plugins/dps/fixtures/dps-flavor-list.json")),
    Source("ctdoc", "CTyun's VPC user guide, page NNNNNNNN: 10002094 安全组规则 (\"安全组默认拒绝"
           "所有来自外部的请求，即本安全组内的实例网络互通\"), 10105035 创建安全组 (console presets: "
           "ingress \"全部 | 当前安全组 | 针对全部协议，允许安全组内实例通过内网网络相互通信\"); read "
           "from stored copies on 2026-12-01",
           "https://www.ctyun.cn/document/10000023/", date="2026-12-01",
           paths=("10002094", "10105035")),
)}

#: tags a `source` string may carry (the first word inside square brackets)
TAGS = tuple(SOURCES)
