"""E-HPC (and the few VPC) operations the cluster provider is built from.

Each function is one step a person would take in CTyun's console, expressed with the API and
made safe to repeat: listing instead of assuming (the 910C bare-metal specification is found by
listing, never hard-coded), every ordering call carries a clientToken, every wait has a deadline
and says what it was waiting for when it gives up, and teardown verifies that nothing of the
cluster is listed any more.

Request and field names follow CTyun's OpenAPI (REFERENCE.md section 4). Where the public
documentation is silent (the body of expand-cluster, the answer of delete-cluster) the shapes
below are the closest documented analogue and are marked as such.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional

from .client import ApiError, CtyunClient, CtyunError

log = logging.getLogger("kimi_k3.ctyun")

HPC = "/v4/cthpc"
JOB_DONE = ("success", "force_completed")
JOB_FAILED = ("failed", "cancel", "console_failed")
SHRINK_BATCH = 10  # shrink-cluster takes 1-10 nodes per call


class JobFailed(CtyunError):
    def __init__(self, what: str, job_uuid: str, status: str, message: str):
        self.job_uuid, self.status = job_uuid, status
        super().__init__(f"{what}: E-HPC job {job_uuid} ended {status}"
                         + (f": {message}" if message else ""))


class DeadlineExceeded(CtyunError):
    def __init__(self, what: str, waited_s: float, setting: str):
        super().__init__(f"gave up waiting for {what} after {waited_s:.0f} s; the work may still "
                         f"finish on CTyun's side: run `pulumi up` again to resume, or raise "
                         f"{setting}")


class ResolveError(CtyunError):
    """A name in the config matches nothing (or too much) in the region's catalog."""


@dataclass(frozen=True)
class Resolved:
    """Catalog ids that create-cluster needs, found by listing."""

    clusterTypeUUID: str
    masterRoleUUID: str
    computeRoleUUID: str
    specificationUUID: str
    specificationName: str
    imageUUID: str
    imageName: str

    def to_dict(self) -> Dict[str, str]:
        return asdict(self)


def new_client_token() -> str:
    return uuid.uuid4().hex


class Ehpc:
    """Operations on one region. Holds a client (not pickled: built per provider call)."""

    def __init__(self, client: CtyunClient, region_id: str, poll_interval_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self.client, self.region_id = client, region_id
        self.poll_interval_s = poll_interval_s
        self.sleep, self.clock = sleep, clock

    # -- catalog ----------------------------------------------------------------------
    def _results(self, path: str, params: Dict[str, Any], deadline=None) -> List[Dict[str, Any]]:
        """All rows of a listing, following pageNo/pageSize when the answer is paged."""
        rows: List[Dict[str, Any]] = []
        page = 1
        while True:
            obj = self.client.get("hpc" if path.startswith(HPC) else "vpc", path,
                                  {"regionID": self.region_id, **params, "pageNo": page,
                                   "pageSize": 50}, deadline=deadline) or {}
            chunk = obj.get("results") if isinstance(obj, dict) else obj
            chunk = chunk or []
            rows.extend(chunk)
            total = obj.get("totalCount") if isinstance(obj, dict) else None
            if total is None or len(rows) >= int(total) or not chunk:
                return rows
            page += 1

    def resolve(self, cluster_type: str, az_name: str, specification: Optional[str] = None,
                image: Optional[str] = None, deadline=None) -> Resolved:
        """Find the cluster type, its roles, the 910C bare-metal spec and an image for it."""
        types = self._results(f"{HPC}/list-cluster-types", {}, deadline)
        matches = [t for t in types if cluster_type in (t.get("clusterTypeName"),
                                                        t.get("clusterTypeUUID"))]
        if not matches:
            names = ", ".join(str(t.get("clusterTypeName")) for t in types)
            raise ResolveError(f"ctyun:clusterType={cluster_type!r} is not offered in region "
                               f"{self.region_id}; use one of: {names}")
        ctype = matches[0]
        roles = {r.get("roleName"): r.get("clusterTypeRoleUUID") for r in ctype.get("roles", [])}
        if not roles.get("master") or not roles.get("compute"):
            raise ResolveError(f"cluster type {cluster_type!r} lists no master/compute roles")
        specs = self._results(f"{HPC}/list-specifications",
                              {"azName": az_name, "clusterTypeUUID": ctype["clusterTypeUUID"],
                               "clusterTypeRoleUUID": roles["compute"]}, deadline)
        spec = pick_specification(specs, specification)
        images = self._results(f"{HPC}/list-available-images",
                               {"clusterTypeUUID": ctype["clusterTypeUUID"],
                                "specificationUUID": spec["specificationUUID"]}, deadline)
        img = pick_image(images, image, spec["specificationName"])
        return Resolved(ctype["clusterTypeUUID"], roles["master"], roles["compute"],
                        spec["specificationUUID"], spec["specificationName"],
                        img["imageUUID"], img["imageName"])

    # -- jobs -------------------------------------------------------------------------
    def wait_job(self, job_uuid: str, what: str, deadline: float, setting: str) -> Dict[str, Any]:
        """Poll query-job-result until the job is done; JobFailed or DeadlineExceeded."""
        started = self.clock()
        while True:
            obj = self.client.get("hpc", f"{HPC}/query-job-result",
                                  {"regionID": self.region_id, "jobUUID": job_uuid},
                                  deadline=deadline) or {}
            status = str(obj.get("status") or "").lower()
            if status in JOB_DONE:
                return obj
            if status in JOB_FAILED:
                raise JobFailed(what, job_uuid, status, str(obj.get("message") or ""))
            self._pause(what, started, deadline, setting, f"job {job_uuid} is {status}")

    def _pause(self, what: str, started: float, deadline: float, setting: str, state: str):
        now = self.clock()
        if now >= deadline:
            raise DeadlineExceeded(what, now - started, setting)
        log.info("waiting for %s (%s, %.0f s so far)", what, state, now - started)
        self.sleep(min(self.poll_interval_s, max(0.0, deadline - now)))

    # -- clusters ---------------------------------------------------------------------
    def list_clusters(self, name: Optional[str] = None, deadline=None) -> List[Dict[str, Any]]:
        return self._results(f"{HPC}/hpc/list-clusters",
                             {"clusterName": name} if name else {}, deadline)

    def find_cluster(self, name: str, deadline=None) -> Optional[Dict[str, Any]]:
        """The cluster with exactly this name (the API filters by substring), or None."""
        exact = [c for c in self.list_clusters(name, deadline) if c.get("clusterName") == name]
        return exact[0] if exact else None

    def get_cluster(self, cluster_uuid: str, name: Optional[str] = None,
                    deadline=None) -> Optional[Dict[str, Any]]:
        """The cluster with this UUID, or None. `name` narrows the listing first; a cluster
        renamed in the console is still found (by a full listing), so refresh and destroy
        never mistake it for gone."""
        for c in self.list_clusters(name, deadline):
            if c.get("clusterUUID") == cluster_uuid:
                return c
        if name:
            return self.get_cluster(cluster_uuid, None, deadline)
        return None

    def list_nodes(self, cluster_uuid: str, deadline=None) -> List[Dict[str, Any]]:
        try:
            return self._results(f"{HPC}/hpc/list-nodes", {"clusterUUID": cluster_uuid},
                                 deadline)
        except ApiError as e:
            if "notfound" in e.code.replace(".", "").replace("_", "").lower():
                return []
            raise

    def create_cluster(self, body: Dict[str, Any], deadline: float) -> Dict[str, Any]:
        """Order a cluster; the body must carry a clientToken (the client then retries safely)."""
        assert body.get("clientToken"), "create-cluster without clientToken"
        return self.client.post("hpc", f"{HPC}/hpc/create-cluster", body, ordering=True,
                                deadline=deadline) or {}

    def wait_cluster(self, name: str, what: str, deadline: float, setting: str,
                     want=("available",), cluster_uuid: Optional[str] = None) -> Dict[str, Any]:
        """Poll list-clusters until the cluster is in one of `want` states. It is looked up by
        UUID when one is given (survives a rename), else by name (a create in progress)."""
        started = self.clock()
        while True:
            c = self.get_cluster(cluster_uuid, name, deadline) if cluster_uuid \
                else self.find_cluster(name, deadline)
            status = str((c or {}).get("clusterAvailableStatus") or "absent").lower()
            if c is not None and status in want:
                return c
            if status == "failed":
                raise JobFailed(what, "-", "failed", f"cluster {name} is in state failed")
            self._pause(what, started, deadline, setting, f"cluster is {status}")

    def expand(self, cluster_uuid: str, count: int, resolved: Resolved, subnet_id: str,
               queue_name: str, client_token: str, deadline: float) -> Dict[str, Any]:
        """Order `count` more compute nodes (body modelled on create-cluster's compute part)."""
        body = {
            "regionID": self.region_id, "clusterUUID": cluster_uuid, "clientToken": client_token,
            "computeNodeConfig": {
                "clusterTypeRoleUUID": resolved.computeRoleUUID, "nodeCreateMethod": "Create",
                "bmsComputeNodeOrders": [{
                    "orderCount": count, "imageUUID": resolved.imageUUID,
                    "queueName": queue_name, "specificationUUID": resolved.specificationUUID,
                    "subnetID": subnet_id}]},
        }
        return self.client.post("hpc", f"{HPC}/hpc/expand-cluster", body, ordering=True,
                                deadline=deadline) or {}

    def shrink(self, cluster_uuid: str, node_uuids: Iterable[str], deadline: float,
               setting: str) -> int:
        """Remove compute nodes, 1-10 per call, waiting for each job. Returns calls made.

        Safe to repeat: if a call is refused because its nodes are already gone (a retried call
        whose first answer was lost) or the cluster is busy, it waits for the cluster to be idle,
        lists the nodes again and carries on with those still there.
        """
        pending = list(node_uuids)
        calls = refusals = 0
        while pending:
            batch = pending[:SHRINK_BATCH]
            try:
                obj = self.client.post("hpc", f"{HPC}/hpc/shrink-cluster",
                                       {"regionID": self.region_id, "clusterUUID": cluster_uuid,
                                        "nodeUUIDList": batch}, deadline=deadline) or {}
            except ApiError as e:
                refusals += 1
                if not _code_has(e, "notfound", "busy") or refusals > 3:
                    raise
                self.wait_idle(cluster_uuid, "the cluster to be idle before removing nodes",
                               deadline, setting)
                listed = {n.get("nodeUUID") for n in self.list_nodes(cluster_uuid, deadline)
                          if str(n.get("nodeStatus", "")).lower() != "deleting"}
                pending = [i for i in pending if i in listed]
                continue
            calls += 1
            if obj.get("jobUUID"):
                self.wait_job(obj["jobUUID"], f"removal of {len(batch)} compute node(s)",
                              deadline, setting)
            pending = pending[SHRINK_BATCH:]
        return calls

    def wait_idle(self, cluster_uuid: str, what: str, deadline: float, setting: str) -> None:
        """Poll until the cluster is no longer creating/expanding/shrinking (or is gone)."""
        started = self.clock()
        while True:
            c = self.get_cluster(cluster_uuid, deadline=deadline)
            status = str((c or {}).get("clusterAvailableStatus") or "").lower()
            if c is None or status in ("available", "failed"):
                return
            self._pause(what, started, deadline, setting, f"cluster is {status}")

    def delete_cluster(self, cluster_uuid: str, deadline: float) -> Dict[str, Any]:
        """The older delete-cluster call (the only delete found); its answer may carry a job."""
        return self.client.post("hpc", f"{HPC}/delete-cluster",
                                {"regionID": self.region_id, "clusterUUID": cluster_uuid},
                                deadline=deadline) or {}

    def wait_gone(self, cluster_uuid: str, name: str, deadline: float, setting: str) -> None:
        """Poll until neither the cluster nor any node of it is listed."""
        started = self.clock()
        while True:
            still = self.get_cluster(cluster_uuid, name, deadline)
            nodes = self.list_nodes(cluster_uuid, deadline) if still else []
            if still is None:
                return
            self._pause(f"deletion of cluster {name}", started, deadline, setting,
                        f"cluster is {still.get('clusterAvailableStatus')}, {len(nodes)} node(s)")

    # -- VPCs and subnets (VPC API; paths as in CTyun's VPC OpenAPI v4) -------------------
    def find_vpc(self, name: str, deadline=None) -> Optional[Dict[str, Any]]:
        rows = self._results("/v4/vpc/new-list", {"queryContent": name}, deadline)
        exact = [v for v in rows if v.get("name") == name]
        return exact[0] if exact else None

    def get_vpc(self, vpc_id: str, deadline=None) -> Optional[Dict[str, Any]]:
        rows = self._results("/v4/vpc/new-list", {}, deadline)
        return next((v for v in rows if v.get("vpcID") == vpc_id), None)

    def create_vpc(self, name: str, cidr: str, client_token: str, deadline=None) -> str:
        obj = self.client.post("vpc", "/v4/vpc/create",
                               {"regionID": self.region_id, "name": name, "CIDR": cidr,
                                "clientToken": client_token}, ordering=True, deadline=deadline)
        return str((obj or {}).get("vpcID"))

    def delete_vpc(self, vpc_id: str, deadline=None) -> None:
        self._delete_tolerating_gone("/v4/vpc/delete", {"vpcID": vpc_id}, deadline)

    def list_subnets(self, vpc_id: str, deadline=None) -> List[Dict[str, Any]]:
        return self._results("/v4/vpc/new-list-subnet", {"vpcID": vpc_id}, deadline)

    def create_subnet(self, vpc_id: str, name: str, cidr: str, client_token: str,
                      deadline=None) -> str:
        obj = self.client.post("vpc", "/v4/vpc/create-subnet",
                               {"regionID": self.region_id, "vpcID": vpc_id, "name": name,
                                "CIDR": cidr, "clientToken": client_token}, ordering=True,
                               deadline=deadline)
        return str((obj or {}).get("subnetID"))

    def delete_subnet(self, subnet_id: str, deadline=None) -> None:
        self._delete_tolerating_gone("/v4/vpc/delete-subnet", {"subnetID": subnet_id}, deadline)

    def _delete_tolerating_gone(self, path: str, ids: Dict[str, str], deadline) -> None:
        try:
            self.client.post("vpc", path, {"regionID": self.region_id, **ids}, deadline=deadline)
        except ApiError as e:
            if not _code_has(e, "notfound"):
                raise

    # -- security groups (VPC API) ------------------------------------------------------
    def find_security_group(self, vpc_id: str, name: str, deadline=None) -> Optional[Dict]:
        rows = self._results("/v4/vpc/new-query-security-groups",
                             {"vpcID": vpc_id, "queryContent": name}, deadline)
        exact = [g for g in rows if g.get("name") == name]
        return exact[0] if exact else None

    def create_security_group(self, vpc_id: str, name: str, client_token: str,
                              deadline=None) -> str:
        obj = self.client.post("vpc", "/v4/vpc/create-security-group",
                               {"regionID": self.region_id, "vpcID": vpc_id, "name": name,
                                "description": "kimi-k3: SSH and the model port",
                                "clientToken": client_token}, ordering=True, deadline=deadline)
        return str((obj or {}).get("securityGroupID"))

    def describe_security_group(self, sg_id: str, deadline=None) -> Optional[Dict[str, Any]]:
        try:
            return self.client.get("vpc", "/v4/vpc/describe-security-group-attribute",
                                   {"regionID": self.region_id, "securityGroupID": sg_id},
                                   deadline=deadline)
        except ApiError as e:
            if "notfound" in e.code.replace(".", "").lower():
                return None
            raise

    def add_ingress(self, sg_id: str, rules: List[Dict[str, Any]], client_token: str,
                    deadline=None) -> List[str]:
        obj = self.client.post("vpc", "/v4/vpc/create-security-group-ingress",
                               {"regionID": self.region_id, "securityGroupID": sg_id,
                                "clientToken": client_token, "securityGroupRules": rules},
                               ordering=True, deadline=deadline)
        return list((obj or {}).get("sgRuleIDs") or [])

    def revoke_ingress(self, sg_id: str, rule_id: str, deadline=None) -> None:
        try:
            self.client.post("vpc", "/v4/vpc/revoke-security-group-ingress",
                             {"regionID": self.region_id, "securityGroupID": sg_id,
                              "securityGroupRuleID": rule_id}, deadline=deadline)
        except ApiError as e:
            if "notfound" not in e.code.replace(".", "").lower():
                raise

    def delete_security_group(self, sg_id: str, deadline=None) -> None:
        try:
            self.client.post("vpc", "/v4/vpc/delete-security-group",
                             {"regionID": self.region_id, "securityGroupID": sg_id},
                             deadline=deadline)
        except ApiError as e:
            if "notfound" not in e.code.replace(".", "").lower():
                raise


def _code_has(err: ApiError, *words: str) -> bool:
    code = err.code.replace(".", "").replace("_", "").lower()
    return any(w in code for w in words)


def pick_specification(specs: List[Dict[str, Any]], wanted: Optional[str]) -> Dict[str, Any]:
    """The configured spec (by name or UUID), else the Ascend 910C bare-metal one."""
    if wanted:
        for s in specs:
            if wanted in (s.get("specificationName"), s.get("specificationUUID")):
                return s
        raise ResolveError(f"ctyun:specification={wanted!r} is not listed; use one of: "
                           + ", ".join(str(s.get("specificationName")) for s in specs))
    cands = [s for s in specs if str(s.get("nodeType", "")).lower() in ("bms", "ebm", "")
             and "910c" in (str(s.get("npuType", "")) + str(s.get("specificationName", "")))
             .lower().replace(" ", "")]
    if not cands:
        raise ResolveError("no Ascend 910C bare-metal specification is listed in this AZ; set "
                           "ctyun:specification to one of: "
                           + ", ".join(str(s.get("specificationName")) for s in specs))
    cands.sort(key=lambda s: (-int(s.get("npuNum") or 0), str(s.get("specificationName"))))
    return cands[0]


def pick_image(images: List[Dict[str, Any]], wanted: Optional[str], spec_name: str) -> Dict:
    """The configured image (by name or UUID), else the last-named 910C image for the spec."""
    if wanted:
        for i in images:
            if wanted in (i.get("imageName"), i.get("imageUUID")):
                return i
        raise ResolveError(f"ctyun:image={wanted!r} is not available for {spec_name}; use one "
                           "of: " + ", ".join(str(i.get("imageName")) for i in images))
    if not images:
        raise ResolveError(f"no image is available for {spec_name}; set ctyun:image")
    preferred = [i for i in images if "910c" in str(i.get("imageName", "")).lower()] or images
    return sorted(preferred, key=lambda i: str(i.get("imageName")))[-1]
