"""`HccCluster`: a CTyun E-HPC cluster as a Pulumi dynamic resource.

Type token `pulumi-python:dynamic/ctyun:HccCluster`. What the engine sees:

- `check` validates every input before any API call (cluster name and root password rules,
  counts, storage size, region and AZ present, deadlines) and lets unknown values (preview)
  through untouched;
- `diff`: the node count (`computeNodeCount`) changes in place; everything that E-HPC cannot
  change on a live cluster replaces it, deleting first (cluster names are unique); the root
  password cannot be changed through the API, so changing it changes nothing (documented), and
  deadlines/endpoint alone cause no update (see IGNORED_KEYS);
- `create` is idempotent and resumable: a cluster with the same name left by an interrupted run
  is adopted and awaited instead of ordered twice (refused if it was made with other settings);
  the order carries a clientToken, so a lost answer is retried safely; a failed order is cleaned
  up before the error is raised, so nothing is left billing;
- `read` refreshes status, IPs and nodes and reports node-count drift as an input change;
- `update` expands or shrinks the compute nodes;
- `delete` shrinks the compute nodes, deletes the cluster, then waits until nothing of it is
  listed; a cluster that is already gone is success.

Each operation has its own deadline (inputs `createTimeoutS`, `updateTimeoutS`,
`deleteTimeoutS`) and fails with a message saying what it waited for. Outputs: `clusterUUID`,
`masterInnerIP`, `masterPublicIP`, `nodes` ([{name, innerIP, role, nodeUUID}]),
`schedulerVersion`, `resolved` (catalog ids found by listing) and `rootPassword` (secret).
The provider object holds no client and no credential (see provider_runtime.py).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

import pulumi
from pulumi.dynamic import (CheckFailure, CheckResult, ConfigureRequest, CreateResult,
                            DiffResult, ReadResult, ResourceProvider, UpdateResult)

from .client import ApiError, TransportError
from .config import (STORAGE_TYPES, cluster_name_problem, root_password_problem,
                     storage_size_problem)
from .ehpc import Ehpc, JobFailed, Resolved, new_client_token
from .provider_runtime import deadline_in, is_unknown, make_api, remember_config, strip

log = logging.getLogger("kimi_k3.ctyun")

#: inputs, with the default used when absent
INPUT_DEFAULTS: Dict[str, Any] = {
    "regionID": None, "azName": None, "clusterName": None, "clusterType": None,
    "vpcID": None, "subnetID": None, "securityGroupName": None, "onDemand": True,
    "publicIP": True, "storageType": "sfs", "storageSizeGB": 500, "storageName": "",
    "specification": "", "image": "", "queueName": "batch", "computeNodeCount": None,
    "rootPassword": None, "endpoint": "", "createTimeoutS": 7200, "updateTimeoutS": 5400,
    "deleteTimeoutS": 3600, "pollIntervalS": 30,
}
REQUIRED = ("regionID", "azName", "clusterName", "clusterType", "vpcID", "subnetID",
            "securityGroupName", "computeNodeCount", "rootPassword")
#: a live cluster cannot change these: a new value means a new cluster
REPLACE_KEYS = ("regionID", "azName", "clusterName", "clusterType", "vpcID", "subnetID",
                "securityGroupName", "onDemand", "publicIP", "storageType", "storageSizeGB",
                "storageName", "specification", "image", "queueName")
#: changed in place
IN_PLACE_KEYS = ("computeNodeCount",)
#: not diffed: no API changes the password (the output keeps the one the cluster has); the
#: others only steer the provider, and an update step just for them would make every output
#: unknown in preview (dynamic providers cannot preview), cascading into the bootstrap steps.
#: New values are recorded with the next real change.
IGNORED_KEYS = ("rootPassword", "endpoint", "createTimeoutS", "updateTimeoutS",
                "deleteTimeoutS", "pollIntervalS")
#: the stack config behind an input a user must set
CONFIG_HINT = {
    "regionID": "pulumi config set ctyun:regionId <region id>",
    "azName": "pulumi config set ctyun:azName <availability zone>",
    "rootPassword": "pulumi config set --secret ctyun:rootPassword <password>",
}
OUTPUT_KEYS = ("clusterUUID", "masterInnerIP", "masterPublicIP", "nodes", "schedulerVersion",
               "clusterStatus", "resolved")


def _known(value: Any) -> bool:
    return value is not None and not is_unknown(value)


def check_inputs(news: Dict[str, Any]) -> List[CheckFailure]:
    """Every problem with the inputs; unknown (preview) values are not judged."""
    f: List[CheckFailure] = []

    def bad(key: str, reason: str) -> None:
        f.append(CheckFailure(key, reason))

    for key in REQUIRED:
        if news.get(key) is None or news.get(key) == "":
            bad(key, f"{key} is required" + (f": {CONFIG_HINT[key]}" if key in CONFIG_HINT
                                             else ""))
    v = news.get("clusterName")
    if _known(v) and v != "" and cluster_name_problem(v):
        bad("clusterName", f"clusterName {v!r} {cluster_name_problem(v)}")
    v = news.get("rootPassword")
    if _known(v) and v != "" and root_password_problem(v):
        bad("rootPassword", f"rootPassword {root_password_problem(v)} (value not shown)")
    v = news.get("computeNodeCount")
    if _known(v) and not (isinstance(v, (int, float)) and not isinstance(v, bool)
                          and int(v) == v and 1 <= v <= 64):
        bad("computeNodeCount", f"computeNodeCount={v!r} must be an integer from 1 to 64")
    v = news.get("storageSizeGB", 500)
    if _known(v):
        size = int(v) if isinstance(v, float) and v == int(v) else v
        if storage_size_problem(size):
            bad("storageSizeGB", f"storageSizeGB={v!r} {storage_size_problem(size)}")
    v = news.get("storageType", "sfs")
    if _known(v) and v not in STORAGE_TYPES:
        bad("storageType", f"storageType={v!r} must be one of {', '.join(STORAGE_TYPES)}")
    for key in ("createTimeoutS", "updateTimeoutS", "deleteTimeoutS", "pollIntervalS"):
        v = news.get(key, INPUT_DEFAULTS[key])
        if _known(v) and not (isinstance(v, (int, float)) and not isinstance(v, bool)
                              and 0 < v <= 86400):
            bad(key, f"{key}={v!r} must be a number of seconds from 0 to 86400")
    for key in ("onDemand", "publicIP"):
        v = news.get(key, True)
        if _known(v) and not isinstance(v, bool):
            bad(key, f"{key}={v!r} must be true or false")
    return f


def inputs_of(props: Dict[str, Any]) -> Dict[str, Any]:
    """The input part of a property bag, defaults filled in."""
    return {k: props.get(k, d) if props.get(k) is not None else d
            for k, d in INPUT_DEFAULTS.items()}


def create_body(p: Dict[str, Any], r: Resolved, token: str) -> Dict[str, Any]:
    """The create-cluster request (field names from CTyun's API, REFERENCE section 4)."""
    order_key = "oceanFSOrder" if p["storageType"] == "oceanfs" else "sfsOrder"
    storage_name = p["storageName"] or f"{p['clusterName']}-fs"
    return {
        "clientToken": token,
        "regionID": p["regionID"], "azName": p["azName"], "clusterName": p["clusterName"],
        "clusterTypeUUID": r.clusterTypeUUID, "vpcID": p["vpcID"],
        "securityGroupName": p["securityGroupName"], "onDemand": bool(p["onDemand"]),
        "storageConfig": {
            "storageCreateMethod": "AutoCreate",
            order_key: {"sfsName": storage_name, "sfsSize": int(p["storageSizeGB"]),
                        "sfsType": "performance" if p["storageType"] == "sfs" else "oceanfs"},
        },
        "masterNodeConfig": {
            "clusterTypeRoleUUID": r.masterRoleUUID, "imageUUID": r.imageUUID,
            "rootPassword": p["rootPassword"], "nodeCreateMethod": "Create",
            "eipCreateMethod": "AutoCreate" if p["publicIP"] else "None",
            "bmsMasterNodeOrder": {"specificationUUID": r.specificationUUID,
                                   "subnetID": p["subnetID"], "orderCount": 1},
        },
        "computeNodeConfig": {
            "clusterTypeRoleUUID": r.computeRoleUUID, "nodeCreateMethod": "Create",
            "bmsComputeNodeOrders": [{
                "orderCount": int(p["computeNodeCount"]), "imageUUID": r.imageUUID,
                "queueName": p["queueName"], "specificationUUID": r.specificationUUID,
                "subnetID": p["subnetID"]}],
        },
    }


def _compute_nodes(nodes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [n for n in nodes if str(n.get("nodeRole")).lower() == "compute"
            and str(n.get("nodeStatus", "")).lower() not in ("deleting", "deleted")]


def _outputs(p: Dict[str, Any], cluster: Dict[str, Any], nodes: List[Dict[str, Any]],
             resolved: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(p)
    out.update({
        "clusterUUID": cluster.get("clusterUUID"),
        "masterInnerIP": cluster.get("innerIP") or "",
        "masterPublicIP": cluster.get("publicIP") or "",
        "clusterStatus": cluster.get("clusterAvailableStatus"),
        "schedulerVersion": cluster.get("schedulerVersion") or "",
        "nodes": sorted(({"name": n.get("nodeName"), "innerIP": n.get("innerIP"),
                          "role": n.get("nodeRole"), "nodeUUID": n.get("nodeUUID")}
                         for n in nodes), key=lambda n: (n["role"] != "master", n["name"])),
        "resolved": resolved,
    })
    out["computeNodeCount"] = len(_compute_nodes(nodes))
    return out


class HccClusterProvider(ResourceProvider):
    """CRUD of one E-HPC cluster. Stateless: everything comes from props and the environment."""

    serialize_as_secret_always = False

    def configure(self, req: ConfigureRequest) -> None:
        remember_config(req.config)

    def check(self, olds: Dict[str, Any], news: Dict[str, Any]) -> CheckResult:
        return CheckResult(news, check_inputs(strip(news)))

    def diff(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> DiffResult:
        old_in, new_in = inputs_of(strip(olds)), inputs_of(strip(news))
        changed = [k for k in INPUT_DEFAULTS if k not in IGNORED_KEYS
                   and (is_unknown(new_in[k]) or old_in[k] != new_in[k])]
        replaces = [k for k in changed if k in REPLACE_KEYS]
        return DiffResult(changes=bool(changed), replaces=replaces,
                          stables=["clusterUUID"] if not replaces else [],
                          delete_before_replace=True)

    # -- create ---------------------------------------------------------------------------
    def create(self, props: Dict[str, Any]) -> CreateResult:
        p = inputs_of(strip(props))
        api = make_api(p)
        deadline = deadline_in(p["createTimeoutS"])
        setting = "ctyun:createTimeoutS"
        name = p["clusterName"]
        resolved = api.resolve(p["clusterType"], p["azName"], p["specification"] or None,
                               p["image"] or None, deadline)
        existing = api.find_cluster(name, deadline)
        if existing is not None:
            self._check_adoptable(existing, p, resolved)
            log.info("found cluster %s from an earlier run; waiting for it instead of ordering "
                     "another", name)
        else:
            self._order(api, p, resolved, deadline, setting)
        try:
            cluster = api.wait_cluster(name, f"cluster {name} to become available", deadline,
                                       setting)
        except JobFailed:
            self._cleanup_failed(api, p)
            raise
        nodes = api.list_nodes(cluster["clusterUUID"], deadline)
        out = _outputs(p, cluster, nodes, resolved.to_dict())
        return CreateResult(cluster["clusterUUID"], out)

    def _order(self, api: Ehpc, p, resolved: Resolved, deadline, setting) -> None:
        token = new_client_token()
        try:
            job = api.create_cluster(create_body(p, resolved, token), deadline)
        except TransportError:
            # the answer was lost every time; the order may still exist: look for it by name
            if api.find_cluster(p["clusterName"], deadline) is None:
                raise
            return
        if job.get("jobUUID"):
            try:
                api.wait_job(job["jobUUID"], f"creation of cluster {p['clusterName']}",
                             deadline, setting)
            except JobFailed as e:
                self._cleanup_failed(api, p)
                raise JobFailed(f"creation of cluster {p['clusterName']} (what it had ordered "
                                "was deleted)", e.job_uuid, e.status, "") from None

    @staticmethod
    def _check_adoptable(c: Dict[str, Any], p: Dict[str, Any], r: Resolved) -> None:
        mismatched = [k for k, want in (("vpcID", p["vpcID"]), ("azName", p["azName"]),
                                        ("clusterTypeUUID", r.clusterTypeUUID))
                      if c.get(k) not in (None, want)]
        if mismatched:
            raise JobFailed(f"a cluster named {p['clusterName']} already exists with another "
                            f"{', '.join(mismatched)}; choose another ctyun:clusterName",
                            "-", "refused", "")

    def _cleanup_failed(self, api: Ehpc, p: Dict[str, Any]) -> None:
        """Delete whatever a failed order left, so nothing keeps billing."""
        c = api.find_cluster(p["clusterName"])
        if c is not None:
            log.info("order of %s failed; deleting what it left", p["clusterName"])
            self._teardown(api, p, c["clusterUUID"], deadline_in(p["deleteTimeoutS"]))

    # -- read -----------------------------------------------------------------------------
    def read(self, id_: str, props: Dict[str, Any]) -> ReadResult:
        p = inputs_of(strip(props))
        api = make_api(p)
        deadline = deadline_in(p["updateTimeoutS"])
        cluster = api.get_cluster(id_, p["clusterName"], deadline)
        if cluster is None:
            return ReadResult(None, {})
        nodes = api.list_nodes(id_, deadline)
        out = _outputs(p, cluster, nodes, strip(props).get("resolved") or {})
        out["rootPassword"] = p["rootPassword"]
        # no `inputs` in the answer: they would carry the root password outside the outputs
        # that additional_secret_outputs protects; the engine diffs against these outputs, so a
        # changed computeNodeCount still shows as drift
        return ReadResult(id_, out)

    # -- update ---------------------------------------------------------------------------
    def update(self, id_: str, olds: Dict[str, Any], news: Dict[str, Any]) -> UpdateResult:
        old, p = strip(olds), inputs_of(strip(news))
        p["rootPassword"] = old.get("rootPassword", p["rootPassword"])
        api = make_api(p)
        deadline = deadline_in(p["updateTimeoutS"])
        setting = "ctyun:updateTimeoutS"
        name = p["clusterName"]
        cluster = api.wait_cluster(name, f"cluster {name} to be idle", deadline, setting,
                                   cluster_uuid=id_)
        resolved = Resolved(**old["resolved"]) if old.get("resolved") else api.resolve(
            p["clusterType"], p["azName"], p["specification"] or None, p["image"] or None,
            deadline)
        compute = _compute_nodes(api.list_nodes(id_, deadline))
        want = int(p["computeNodeCount"])
        if want > len(compute):
            job = api.expand(id_, want - len(compute), resolved, p["subnetID"], p["queueName"],
                             new_client_token(), deadline)
            if job.get("jobUUID"):
                api.wait_job(job["jobUUID"], f"adding {want - len(compute)} node(s) to {name}",
                             deadline, setting)
        elif want < len(compute):
            drop = sorted(compute, key=lambda n: str(n.get("nodeName")))[want:]
            api.shrink(id_, [n["nodeUUID"] for n in drop], deadline, setting)
        cluster = api.wait_cluster(name, f"cluster {name} to be available", deadline, setting,
                                   cluster_uuid=id_)
        nodes = api.list_nodes(id_, deadline)
        return UpdateResult(_outputs(p, cluster, nodes, resolved.to_dict()))

    # -- delete ---------------------------------------------------------------------------
    def delete(self, id_: str, props: Dict[str, Any]) -> None:
        p = inputs_of(strip(props))
        api = make_api(p)
        self._teardown(api, p, id_, deadline_in(p["deleteTimeoutS"]))

    @staticmethod
    def _teardown(api: Ehpc, p: Dict[str, Any], id_: str, deadline: float) -> None:
        """Shrink compute nodes, delete the cluster, verify it is gone. Gone already: done."""
        setting = "ctyun:deleteTimeoutS"
        name = p["clusterName"]
        cluster = api.get_cluster(id_, name, deadline)
        if cluster is None:
            return
        if str(cluster.get("clusterAvailableStatus")).lower() != "deleting":
            cluster = api.wait_cluster(name, f"cluster {name} to be idle before deletion",
                                       deadline, setting, want=("available", "failed",
                                                                "deleting"), cluster_uuid=id_)
        if str(cluster.get("clusterAvailableStatus")).lower() != "deleting":
            compute = _compute_nodes(api.list_nodes(id_, deadline))
            if compute:
                api.shrink(id_, [n["nodeUUID"] for n in compute], deadline, setting)
            try:
                job = api.delete_cluster(id_, deadline)
            except TransportError:
                job = {}  # the answer was lost: the wait below tells whether it took effect
            except ApiError as e:
                # a repeated call (its first answer lost) finds our own deletion under way or
                # already done: the wait below confirms
                if not any(w in e.code.lower() for w in ("deleting", "notfound")):
                    raise
                job = {}
            if job.get("jobUUID"):
                api.wait_job(job["jobUUID"], f"deletion of cluster {name}", deadline, setting)
        api.wait_gone(id_, name, deadline, setting)


def _none_outputs() -> Dict[str, Any]:
    return {k: None for k in OUTPUT_KEYS}


class HccCluster(pulumi.dynamic.Resource, module="ctyun", name="HccCluster"):
    """One E-HPC cluster. Inputs use CTyun's API names; see the module docstring."""

    clusterUUID: pulumi.Output[str]
    masterInnerIP: pulumi.Output[str]
    masterPublicIP: pulumi.Output[str]
    nodes: pulumi.Output[list]
    schedulerVersion: pulumi.Output[str]
    clusterStatus: pulumi.Output[str]
    resolved: pulumi.Output[dict]
    rootPassword: pulumi.Output[str]
    computeNodeCount: pulumi.Output[int]

    def __init__(self, resource_name: str, inputs: Dict[str, Any],
                 opts: Optional[pulumi.ResourceOptions] = None):
        unknown = set(inputs) - set(INPUT_DEFAULTS)
        if unknown:
            raise TypeError(f"HccCluster: unknown inputs {sorted(unknown)}")
        props = {**{k: v for k, v in inputs.items() if v is not None}, **_none_outputs()}
        props.setdefault("rootPassword", None)
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=["rootPassword"]))
        super().__init__(HccClusterProvider(), resource_name, props, opts)
