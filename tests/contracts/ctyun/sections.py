"""The numbered sections of the CTyun contract and where each lives in this folder.

Code, docs and tests across the repository cite CTyun facts as `CTyun contract N.N` (with the
upstream tag, e.g. `[doc 23930]`); this index is what such a number means.
tests/unit/test_ctyun_contract.py checks that every number cited in the repository is here.
"""

from __future__ import annotations

SECTIONS = {
    "1": ("calling convention", "convention.py"),
    "1.1": ("hosts and methods", "convention.py HOSTS, METHODS"),
    "1.2": ("EOP signature", "convention.py SIGNATURE"),
    "1.3": ("response envelope", "convention.py ENVELOPES; validator.validate_envelope"),
    "1.4": ("error codes found in the sources", "convention.py ERROR_CODES"),
    "1.5": ("pagination", "convention.py PAGING"),
    "1.6": ("clientToken", "convention.py CLIENT_TOKEN"),
    "1.7": ("identifier and value formats", "convention.py ID_FORMATS"),
    "2": ("E-HPC APIs", "ehpc.py"),
    "2.1": ("create-delegate (23951)", "ehpc.py CREATE_DELEGATE"),
    "2.2": ("list-regions (13086)", "ehpc.py LIST_REGIONS"),
    "2.3": ("list-cluster-types (23927)", "ehpc.py"),
    "2.4": ("list-specifications (23940)", "ehpc.py"),
    "2.5": ("list-available-images (23941)", "ehpc.py"),
    "2.6": ("hpc/create-cluster (23930)", "ehpc.py CREATE_CLUSTER"),
    "2.7": ("query-job-result (23926)", "ehpc.py"),
    "2.8": ("hpc/list-clusters (23928)", "ehpc.py"),
    "2.9": ("hpc/list-nodes (23938)", "ehpc.py"),
    "2.10": ("hpc/list-queues, create-queue, delete-queue (23947, 23943, 23944)", "ehpc.py"),
    "2.11": ("hpc/expand-cluster (23931)", "ehpc.py"),
    "2.12": ("hpc/shrink-cluster (23932)", "ehpc.py"),
    "2.13": ("delete-cluster (older family, 5621)", "ehpc.py"),
    "2.14": ("price queries (23934, 23936)", "ehpc.py"),
    "3": ("VPC APIs", "vpc.py"),
    "3.1": ("create VPC (10040800)", "vpc.py"),
    "3.2": ("list VPCs (10040788)", "vpc.py"),
    "3.3": ("delete VPC (10040805)", "vpc.py"),
    "3.4": ("create subnet (10040804)", "vpc.py"),
    "3.5": ("list subnets, one subnet (10040797, 10040792)", "vpc.py"),
    "3.6": ("delete subnet (10040807)", "vpc.py"),
    "3.7": ("create security group (10040938)", "vpc.py"),
    "3.8": ("list security groups (10040907)", "vpc.py"),
    "3.9": ("one security group (10040946)", "vpc.py"),
    "3.10": ("delete security group (10040966)", "vpc.py"),
    "3.11": ("add rules (10040961)", "vpc.py; checks.py port_range"),
    "3.12": ("revoke a rule (10040977, 10040970)", "vpc.py"),
    "4": ("enums and rules in one place", "ehpc.py enums; checks.py"),
    "4.1": ("statuses", "ehpc.py JOB_STATUSES, NODE_STATUSES, SCHEDULER_STATUSES, QUEUE_STATUSES"),
    "4.2": ("names", "checks.py"),
    "4.3": ("root password", "checks.py root_password"),
    "4.4": ("sizes and counts", "ehpc.py ranges"),
    "5": ("contradictions inside the sources", "gaps.py CONTRADICTIONS"),
    **{f"6.{n}": (f"open question {n}", "gaps.py OPEN_QUESTIONS") for n in range(1, 14)},
    "6": ("open questions", "gaps.py OPEN_QUESTIONS"),
}
