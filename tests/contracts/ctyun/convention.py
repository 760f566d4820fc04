"""Section 1 of the CTyun contract: how every call is made (hosts, EOP signature, envelope,
error codes, paging, clientToken, identifier formats), as data with its upstream sources.

Tags in square brackets are explained in sources.py (URL and commit of each source). The
per-API facts are in ehpc.py (section 2) and vpc.py (section 3); the envelope families are
applied by validator.py, the signature by the emulator's gateway (tests/emulators/ctyun).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 1.1 hosts and methods
HOSTS = {
    "ehpc": "cthpc-global.ctapi.ctyun.cn",   # every path under /v4/cthpc/ [cli] plugin.json
    "vpc": "ctvpc-global.ctapi.ctyun.cn",    # [tf] internal/core/ctyun-sdk-endpoint/ctvpc/const.go
    #                                          (also /v4/eip/: [tf] eip_show.go uses it)
    "ebm": "ebm-global.ctapi.ctyun.cn",      # [catalog] plugins/dps/plugin.json endpoint_url
    "sfs": "sfs-global.ctapi.ctyun.cn",      # [catalog] plugins/sfs/plugin.json
    "oceanfs": "oceanfs-global.ctapi.ctyun.cn",  # [catalog] plugins/oceanfs/plugin.json
}
#: the test environment of the VPC API [tf] const.go
VPC_TEST_HOST = "ctvpc-global.ctapi-test.ctyun.cn:21443"
#: the general pattern [tf] internal/service/ctyun_provider.go
HOST_PATTERN = "https://<product>-global.ctapi.ctyun.cn"
#: GET takes its parameters in the query string; POST a JSON object body
#: (`Content-Type: application/json`) and no query string [cli, tf]
METHODS = {"GET": "query", "POST": "json-body"}

# ---------------------------------------------------------------- 1.2 EOP signature
# [tf] internal/core/core/request.go `GetSign`, `buildRequest`
SIGNATURE = {
    "headers": ("ctyun-eop-request-id", "Eop-date", "Eop-Authorization"),
    "request_id": "a fresh UUID per request",
    "date_format": "yyyyMMddTHHmmssZ",      # e.g. 20260924T101500Z
    "date_example": "20260924T101500Z",
    "authorization": "<AK> Headers=ctyun-eop-request-id;eop-date Signature=<base64>",
    "signed_headers": "Headers=ctyun-eop-request-id;eop-date",
    # 1. the query string exactly as sent: Go's url.Values.Encode() (pairs sorted by key, key
    #    and value escaped: A-Z a-z 0-9 - _ . ~ kept, space as '+', the rest %XX of the UTF-8
    #    bytes; joined by '&'; empty without parameters)
    "query": "url.Values.Encode()",
    # 2. lower-case hex SHA-256 of the exact body bytes (of "" for GET)
    "body_hash": "hex(sha256(body))",
    # 3.
    "string_to_sign": ("ctyun-eop-request-id:{id}\neop-date:{date}\n\n{query}\n{body_hash}"),
    # 4. ktime = HMAC(SK, date); kak = HMAC(ktime, AK); kdate = HMAC(kak, date[0:8])
    "key_chain": ("HMAC-SHA256(SK, date)", "HMAC-SHA256(ktime, AK)",
                  "HMAC-SHA256(kak, date[0:8])"),
    # 5.
    "signature": "base64(HMAC-SHA256(kdate, stringToSign))",
    # the Go clients format time.Now() in the machine's zone and append a literal Z: from
    # China that is UTC+8 labelled Z [tf]; what the gateway accepts: open question 6.1
    "date_zone": "local time with a literal Z",
}

# ---------------------------------------------------------------- 1.3 response envelope
# API-level failures are HTTP 200 with statusCode 900: CTyun's Go client rejects any non-2xx
# before parsing [tf internal/core/core/client.go] yet reads codes such as Openapi.Vpc.NotFound
# from the body [tf internal/service/vpc/resource_ctyun_vpc.go]. statusCode may be a number or a
# string [tf internal/core/ctyun-sdk-core/response.go].
ENVELOPES = {
    # [doc] every 239xx response table
    "ehpc": {"keys": ("statusCode", "error", "message", "returnObj"),
             "success": {"statusCode": 800, "error": "", "message": "成功"}},
    # [old] delete-cluster (5621), the old list-regions example
    "ehpc-old": {"keys": ("statusCode", "errorCode", "message", "description", "returnObj"),
                 "success": {"statusCode": 800, "errorCode": "", "message": "SUCCESS"}},
    # [catalog 4576, 4574, 8012, 13429] documented example answers of the bare-metal and file
    # services: errorCode "" (the SFS examples leave it out), message "SUCCESS", description
    # "成功"; [tf] ctebm/*.go and sfs/*.go structs also name `error`
    "classic": {"keys": ("statusCode", "errorCode", "message", "description", "returnObj"),
                "success": {"statusCode": 800, "errorCode": "", "message": "SUCCESS"}},
    # [tf] VPC structs; list/delete structs also carry `error` (same meaning as errorCode)
    "vpc": {"keys": ("statusCode", "errorCode", "message", "description", "returnObj"),
            "success": {"statusCode": 800, "errorCode": "SUCCESS", "message": "success"}},
}
SUCCESS, FAILURE = 800, 900
#: the client rule: success iff str(statusCode) == "800"; the code is `error` or `errorCode`
#: (ignoring SUCCESS); the text is `message`, then `description`
CLIENT_RULE = "success iff str(statusCode) == '800'"

# ---------------------------------------------------------------- 1.4 error codes in the sources
ERROR_CODES = {
    "Hpc.ParamCheck.NotBlank": ("E-HPC", "a required parameter is missing or blank",
                                "[doc] every 239xx response table"),
    "Openapi.Parameter.Error": ("VPC and others", "invalid parameter (also 'port not found')",
                                "[tf] internal/common/error_code.go"),
    "Openapi.Vpc.NotFound": ("VPC", "VPC does not exist", "[tf] error_code.go"),
    "Openapi.Subnet.NotFound": ("VPC", "subnet does not exist", "[tf] error_code.go"),
    "Openapi.SecurityGroup.NotFound": ("VPC", "security group does not exist", "[tf] error_code.go"),
    "Openapi.SecurityGroupRule.NotFound": ("VPC", "rule does not exist", "[tf] error_code.go"),
    "Openapi.Order.Inprogress": ("orders", "an order is still being processed",
                                 "[tf] error_code.go"),
    "Openapi.Eip.NotFound": ("EIP", "object does not exist", "[tf] error_code.go"),
    "Ecs.Instance.NotFound": ("ECS", "object does not exist", "[tf] error_code.go"),
    "CTIAM_0005": ("IAM", "no permission", "[tf] error_code.go"),
    "CTIAM_1044": ("IAM", "no privilege", "[tf] error_code.go"),
}
#: no code for these appears in the sources (open questions 6.2, 6.19); [tf] error_code.go at
#: 80651fd has no bare-metal or SFS code (an `Ebm.Instance.NotFound` /
#: `sfs.sfsInfo.resourceNotExists` once listed here is not in it)
UNDOCUMENTED_CODES = ("throttling", "quota", "signature", "stale date", "duplicate name",
                      "still in use", "file system not found", "RAID refused")

# ---------------------------------------------------------------- 1.5 pagination
PAGING = {
    # only hpc/list-clusters and hpc/list-nodes page [doc 23928, 23938]; the catalog lists
    # document no paging parameters and answer the whole list
    "ehpc": {"pageNo": (1, None, 1), "pageSize": (1, 50, 10),
             "returnObj": ("currentCount", "totalCount", "totalPage", "resultList")},
    # pageNo (recommended) or pageNumber (to be retired), pageSize max 50 [tf]
    "vpc": {"pageNo": (1, None, 1), "pageSize": (1, 50, 10),
            "returnObj": ("totalCount", "currentCount", "totalPage")},
}
#: loop until the rows collected reach totalCount (or the page number reaches totalPage)
PAGING_RULE = "until collected == totalCount or pageNo == totalPage"

# ---------------------------------------------------------------- 1.6 clientToken
CLIENT_TOKEN = {
    # no E-HPC table (create, expand, shrink, queues, delegate) has one [doc]: a repeated
    # create-cluster is deduplicated by nothing documented
    "ehpc": (),
    # "client stub ensuring the order is idempotent", 1-64 characters [tf, sdk]; optional on
    # delete VPC and delete-subnet (the hand-written client sends it anyway); the retention
    # window is not in the sources (open question 6.11)
    "vpc": ("vpc/create", "vpc/create-subnet", "vpc/create-security-group",
            "vpc/create-security-group-ingress", "vpc/create-security-group-egress",
            "vpc/revoke-security-group-ingress", "vpc/revoke-security-group-egress",
            "vpc/delete-security-group", "vpc/delete", "vpc/delete-subnet"),
    "length": (1, 64),
}

# ---------------------------------------------------------------- 1.7 identifier formats
# from the documented examples [ex], [tf]
ID_FORMATS = {
    "regionID": ("32 hex characters", "bb9fdb42056f11eda1610242ac110002", "or 12 digits",
                 "200000004062"),
    "azName": ("cn-huadong1-jsnj1A-public-ctcloud", "short names in some examples: az1, az3"),
    "cluster": "cl- + 28 characters", "node": "nd-", "job": "job- (20 or 28)",
    "clusterType": "ct-", "role": "ctr-", "specification": "dvt-", "image": "im-",
    "queue": "pt- (also pr- in one example: section 5)",
    "vpc": "vpc- + 10 lower-case characters", "subnet": "subnet- + 10", "securityGroup": "sg- + 10",
}
#: E-HPC times `YYYY-MM-DD HH:MM:SS`, zone not stated; security group rule createTime: UTC
EHPC_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
