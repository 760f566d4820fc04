"""Sections 5 and 6 of the CTyun contract: where CTyun's sources contradict each other, and what
they leave open, as data. Each entry names the sources it was read in (tags: sources.py).

Nothing here is filled in by guessing. What kimi-k3 assumes for each open question, how it
reacts when reality differs and what a first real user should check is in docs/ctyun-hcc.md
("Open questions"); the emulator's `Settings` (tests/emulators/ctyun/state.py) can play each
reading. Code cites these as `CTyun contract 5` / `CTyun contract 6.N` (open question N).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Gap:
    number: str
    text: str
    sources: Tuple[str, ...]


# ---------------------------------------------------------------- 5 contradictions
CONTRADICTIONS = (
    Gap("5.queue-list", "list-queues: the schema puts the queues in returnObj.resultList, the "
        "documented example (and the CLI fixture) has returnObj itself as the array",
        ("[doc 23947]", "[ex] 23947", "[ex] plugins/ehpc/fixtures/ehpc-hpc-queue-list.json")),
    Gap("5.queue-prefix", "queue UUID prefix pt- (expand docs, fixtures) vs pr- (list-queues "
        "example)", ("[doc 23931]", "[ex] 23947")),
    Gap("5.on-demand", "list-nodes onDemand: a string in the table, a boolean in the example; the "
        "node-list URL example says `az` where the table requires azName",
        ("[doc 23938]", "[doc] public-doc-evidence.json upstream_inconsistencies")),
    Gap("5.oceanfs-type", "oceanFSType: enum `capacity`, but the price example shows `massive`",
        ("[doc 23934]",)),
    Gap("5.order-count", "orderCount 1-49 on create, 1-50 on expand; the master imageUUID is "
        "required on create, 'required when AutoCreate' on the price query",
        ("[doc 23930]", "[doc 23931]", "[doc 23934]")),
    Gap("5.vm-num", "security group vmNum: an int in the list, a string in describe; rule "
        "spelling: lower case in the client comments, upper case sent by the Terraform resource",
        ("[tf] internal/core/ctvpc/*.go", "[tf] internal/service/vpc/*.go")),
    Gap("5.password-bar", "the root password's special characters list a full-width '｜' "
        "(U+FF5C) and no ASCII '|' (every CTyun password text seen writes it so, e.g. the ECS "
        "ones in the Terraform provider: likely a table-escaping habit, but the ASCII '|' is not "
        "listed)", ("[doc 23930]", "[tf] internal/core/ctecs/*.go")),
    Gap("5.fs-list-total", "list-sfs counts in `totalCount` and `total` ([tf] struct, SFS "
        "example); the OceanFS example carries `total` only", ("[catalog 13431]", "[tf]")),
    Gap("5.vpc-id", "create-cluster's table shows a UUID as vpcID example, its request example "
        "and every listing use vpc-... ids: pass what the VPC API returns",
        ("[doc 23930]", "[ex] 23930")),
)

# ---------------------------------------------------------------- 6 open questions
OPEN_QUESTIONS = (
    Gap("6.1", "Eop-date: must it be UTC, China time, or either; how much clock skew is "
        "tolerated?", ("[tf] internal/core/core/request.go",)),
    Gap("6.2", "the envelope and codes of gateway-level refusals (bad signature, stale date, "
        "unknown AK, missing headers), throttling (code, HTTP status, limits per API) and quota "
        "errors", ("[tf] internal/common/error_code.go", "[doc]")),
    Gap("6.3", "delete-cluster (5621) on hpc/ clusters: accepted? asynchronous (no job id)? does "
        "it release the master, compute nodes, EIP, file system and the auto-created security "
        "group? Is there an unpublished hpc/ delete?", ("[old 5621]",)),
    Gap("6.4", "does a cluster appear in hpc/list-clusters before its create job ends, and with "
        "which clusterAvailableStatus during create, expand, shrink and delete? Is a cluster busy "
        "(refusing other changes) while a job runs?", ("[doc 23928]", "[doc 23926]")),
    Gap("6.5", "securityGroupName in create-cluster: does E-HPC create a group of that name or "
        "adopt an existing one in the VPC? Duplicates? Is the group deleted with the cluster? Does "
        "E-HPC add its own rules? Known: traffic between members of one group needs an ingress "
        "rule whose source is that group (remoteType 1, remoteSecurityGroupID), so a stack that "
        "builds its own group must add that rule",
        ("[doc 23930]", "[tf] internal/core/ctvpc/ctvpc_create_sg_ingress_rule_api.go")),
    Gap("6.6", "create-delegate: required before the first cluster? idempotent? what does the "
        "linked but unpublished API 23949 return?", ("[doc 23951]", "[cli]")),
    Gap("6.7", "fields the docs do not list (e.g. a clientToken on E-HPC calls, extra query "
        "parameters): ignored or refused?", ("[doc]",)),
    Gap("6.8", "can shrink-cluster remove the last compute node (the console needs at least one "
        "at creation)?", ("[doc 23932]",)),
    Gap("6.9", "does list-cluster-types list the console editions ('large model lite')? What are "
        "the 910C bare-metal specification and image names (not public)?",
        ("[doc 23927]", "[doc 23940]", "[doc 23941]")),
    Gap("6.10", "which list-queues shape is live (section 5)?", ("[doc 23947]", "[ex] 23947")),
    Gap("6.11", "VPC: deleting a VPC with subnets or groups, a subnet with servers, a group in "
        "use: which codes? Is vpcName matched exactly or by substring? How long is a clientToken "
        "remembered? Are creates synchronous?", ("[tf]", "[sdk]")),
    Gap("6.12", "which AZ spellings the APIs accept (full names vs az1) and the zone of "
        "createTime", ("[ex]", "[tf]")),
    Gap("6.13", "pay-as-you-go billing granularity; whether a deleted cluster's subscription "
        "items keep billing", ("[doc 23930]",)),
    Gap("6.14", "what a group made by the API create-security-group contains (the console's "
        "presets and the default group hold an ingress rule from the group itself: 'members of "
        "one group can talk'), and what destCidrIp a rule whose source is a group shows in "
        "listings (listings have no remoteType: such a rule is known by remoteSecurityGroupID)",
        ("[ctdoc 10002094]", "[ctdoc 10105035]",
         "[tf] internal/core/ctvpc/ctvpc_new_query_security_groups_api.go")),
    Gap("6.15", "is E-HPC's specificationName the bare-metal deviceType that device-type-list "
        "and raid-type-list take?", ("[doc 23940]", "[catalog 4574]", "[catalog 4576]")),
    Gap("6.16", "how the 910C (A3) node reports its 2 x 3.2 TB NVMe (data volumes, needing "
        "localDataVolumeRaidUUID, or NVMe volumes, needing none), which RAID types it offers "
        "(only RAID0 and RAID1 are evidenced, no enumeration is published) and which block "
        "devices the OS shows under each", ("[catalog 4574]", "[catalog 4576]", "[doc 23930]",
                                           "[tf] internal/service/ebm/resource_ctyun_ebm.go")),
    Gap("6.17", "root password rule 4 ('no 3 or more consecutive characters, such as abc, "
        "123'): are falling runs (cba) or repeats (aaa) refused? Is the ASCII '|' accepted "
        "(the list shows a full-width one, section 5)?", ("[doc 23930]",)),
    Gap("6.18", "is the 910C specification elastic bare metal (its orders want an ordinary "
        "subnet) or standard bare metal (a bare-metal 'cbm' subnet)? No API field says which",
        ("[doc 23930]", "[doc 23931]",
         "[tf] internal/core/ctvpc/ctvpc_vpc_create_subnet_api.go")),
    Gap("6.19", "info-sfs for a file system that no longer exists: which code? Does "
        "delete-cluster release the file system and the EIP it ordered (question 3)?",
        ("[catalog 8012]", "[catalog 13429]", "[tf] internal/service/sfs/resource_ctyun_sfs.go",
         "[old 5621]")),
)

BY_NUMBER = {g.number: g for g in CONTRADICTIONS + OPEN_QUESTIONS}
