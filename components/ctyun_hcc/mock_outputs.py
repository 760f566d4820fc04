"""Outputs CTyun would compute, for the offline plan command and tests under Pulumi's mock engine.

Only for the CTyun dynamic resources (owner token, network, security group, cluster order and
cluster), so that what the program reads back (master IPs, node list, ids) has the shapes the
providers return. Values are obviously fake (`mock` in ids, documentation address ranges for
IPs) so a plan is never mistaken for a deployment. Other modules' resources may add entries.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping


def hcc_owner(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    return {"ownerToken": "0" * 32}


def hcc_network(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    vpc = inputs.get("vpc")
    subnet = inputs.get("subnet")
    return {"vpcID": "vpc-mock" if vpc in (None, "create") else vpc,
            "subnetID": "subnet-mock" if subnet in (None, "create") else subnet,
            "createdVpc": vpc in (None, "create"), "createdSubnet": subnet in (None, "create")}


def hcc_security_group(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    sg = inputs.get("securityGroup")
    created = sg in (None, "create")
    wanted = [(inputs.get("sshPort") or 22, c) for c in inputs.get("sshCidrs") or []] + \
        [(inputs.get("endpointPort"), c) for c in inputs.get("endpointCidrs") or []]
    own = [{"id": f"sgr-mock-{i}", "port": str(port), "cidr": cidr}
           for i, (port, cidr) in enumerate(wanted) if created]
    if created:  # the nodes' rule: all traffic from the group itself (sg_rules.py)
        own.append({"id": "sgr-mock-cluster", "port": "", "cidr": "", "source": "group:self"})
    return {"securityGroupID": "sg-mock" if created else sg,
            "securityGroupName": inputs.get("groupName") or "mock-sg",
            "ruleIDs": [r["id"] for r in own], "ownRules": own, "created": created}


def hcc_cluster_order(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    return {"jobUUID": "job-mock", "clusterUUID": "", "orderedAt": "2026-01-01T00:00:00Z",
            "origin": "ordered", "masterOrderID": "", "masterOrderNO": "", "resolved": {}}


def hcc_cluster(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    count = int(inputs.get("computeNodeCount") or 0)
    nodes = [{"name": "a3master0001", "innerIP": "192.0.2.10", "role": "master",
              "nodeUUID": "nd-mock-0"}]
    nodes += [{"name": f"a3compute{i:04d}", "innerIP": f"192.0.2.{10 + i}",
               "role": "compute", "nodeUUID": f"nd-mock-{i}"} for i in range(1, count + 1)]
    return {"clusterUUID": "cl-mock", "masterInnerIP": "192.0.2.10",
            "masterPublicIP": "198.51.100.10", "nodes": nodes, "clusterStatus": "available",
            "clusterSecurityGroupID": "sg-mock", "computeNodeCount": count,
            "eipID": "eip-mock" if inputs.get("eipBandwidthMbps") else "",
            "eipAddress": "198.51.100.10" if inputs.get("eipBandwidthMbps") else "",
            "fileSystemID": "" if inputs.get("storageUid") else "fs-mock",
            "fileSystemName": "" if inputs.get("storageUid") else inputs.get("storageName") or "",
            "fileSystemType": "" if inputs.get("storageUid") else inputs.get("storageType") or ""}


def hcc_shrink(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """Offline nothing is removed: the cluster's node list as it is (shrink_step.py)."""
    return {"nodes": list(inputs.get("clusterNodes") or []), "removed": [], "stoppedJobs": []}


def cluster_check(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The names the nodes carry: offline, the API's (what a real check confirms or refuses)."""
    nodes = list(inputs.get("nodes") or [])
    return {"masterName": next((n.get("name") for n in nodes if n.get("role") == "master"), ""),
            "nodeNames": [n.get("name") for n in nodes if n.get("role") != "master"],
            "fallbacks": [], "tools": {}}


def slurm_service(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The job the service would run: endpoint on the master's public address (node 0)."""
    host = inputs.get("publicHost") or "198.51.100.10"
    count = int(inputs.get("nodeCount") or 1)
    # replica i (job `<name>-r<i>`, replicas.py) on the i-th group of nodes; replica 0's head
    # is the master when it serves
    tail = str(inputs.get("jobName") or "").rpartition("-r")[2]
    first = (int(tail) if tail.isdigit() else 0) * count
    head = (inputs.get("publicInnerIp") or "192.0.2.10") if not first else f"192.0.2.{10 + first}"
    return {"jobId": f"mock{first // count}" if first else "mock",
            # the names hcc_cluster gives (Slurm's: ClusterCheck), the master first
            "nodes": ["a3master0001" if not i else f"a3compute{i:04d}"
                      for i in range(first, first + count)],
            "node0Addr": head,
            "endpoint": f"http://{host}:{int(inputs.get('port') or 8000)}/v1"}


def router_service(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """The router on the master: systemd's units where it runs, else the restart loop."""
    return {"supervisor": "systemd (a restart loop where the master has none)",
            "readySeconds": None}


def tls_proxy(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """A self-signed certificate is made on the master at deploy: nothing to show offline."""
    given = bool(inputs.get("certificatePem"))
    return {"certificate": inputs.get("certificatePem") or "", "selfSigned": not given,
            "fingerprintSha256": "(read from the certificate at deploy)",
            "pinSha256": "sha256//(the certificate's public key, made at deploy)",
            "running": False, "how": "offline"}


MOCK_OUTPUTS: Dict[str, Callable[[Mapping[str, Any]], Dict[str, Any]]] = {
    "pulumi-python:dynamic/ctyun:HccStackOwner": hcc_owner,
    "pulumi-python:dynamic/ctyun:HccNetwork": hcc_network,
    "pulumi-python:dynamic/ctyun:HccSecurityGroup": hcc_security_group,
    "pulumi-python:dynamic/ctyun:HccClusterOrder": hcc_cluster_order,
    "pulumi-python:dynamic/ctyun:HccCluster": hcc_cluster,
    "pulumi-python:dynamic/ctyun:HccShrink": hcc_shrink,
    "pulumi-python:dynamic/ctyun:ClusterCheck": cluster_check,
    "pulumi-python:dynamic/ctyun:SlurmService": slurm_service,
    "pulumi-python:dynamic/ctyun:TlsProxy": tls_proxy,
    "pulumi-python:dynamic/ctyun:RouterService": router_service,
}
