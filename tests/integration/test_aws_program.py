"""The real `__main__.py` of the aws-eks stack under Pulumi's mock engine: the inputs that matter.

Capacity type, market type, reservation target, AZ pinning, NIC layout and security groups,
IMDSv2, taints/tolerations, GPU/EFA requests, probe timings, source ranges, secrets marked secret.
AWS-computed values come from components/aws_eks/mock_outputs.py (a block starting tomorrow).
"""

import base64
import json

import pytest
import yaml

from components.aws_eks import mock_outputs as mo
from components.offline.runner import SECRET, run_program

CR = "cr-0123456789abcdef0"


@pytest.fixture(scope="module")
def adopt():
    return run_program("aws-eks", {"kimi-k3:capacityReservationId": CR,
                                   "kimi-k3:allowedCidrs": "203.0.113.0/24",
                                   "kimi-k3:allowPlaintext": "true",
                                   "kimi-k3:apiAccessCidrs": "198.51.100.7/32",
                                   "kimi-k3:apiKey": "sk-do-not-leak-1-0123456789abcdefgh", "kimi-k3:hfToken": "hf_do_not_leak"})


@pytest.fixture(scope="module")
def two_nodes():
    return run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:capacityReservationId": CR})
#: the monitoring releases (components/aws_eks/monitoring_resources.py; tests/integration/test_plan_ops.py)
MONITORING = {"kimi-k3-kube-prometheus-stack", "kimi-k3-dcgm-exporter"}


def one(run, type_token, name=None):
    found = [r for r in run.of_type(type_token) if name is None or r["name"] == name]
    assert len(found) == 1, (type_token, name, [r["name"] for r in run.of_type(type_token)])
    return found[0]["inputs"]


def test_capacity_block_is_adopted(adopt):
    block = one(adopt, "pulumi-python:dynamic/aws:CapacityBlock")
    assert block["reservationId"] == CR and block["instanceType"] == "p6-b300.48xlarge"
    assert block["instanceCount"] == 1 and block["region"] == "us-east-2"
    assert "maxUpfrontFeeUsd" not in block  # adopting never buys
    assert adopt.outputs["capacityReservationId"] == CR


def test_the_stack_is_named_as_a_self_managed_backend_names_it():
    """The offline engine answers `pulumi.get_organization()` as a DIY backend does
    ("organization"; it answered None and plans read `None/kimi-k3/aws-eks`), so the purchase's
    stack name and the tags are the ones a `pulumi login --local` user's `up` writes."""
    run = run_program("aws-eks")
    block = one(run, "pulumi-python:dynamic/aws:CapacityBlock")
    assert block["stackName"] == "organization/kimi-k3/aws-eks"
    assert "None/" not in json.dumps([r["inputs"] for r in run.resources], default=str)


def test_launch_template(adopt):
    lt = one(adopt, "aws:ec2/launchTemplate:LaunchTemplate")
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["capacityReservationSpecification"] == {"capacityReservationTarget": {"capacityReservationId": CR}}
    assert lt["metadataOptions"]["httpTokens"] == "required"
    ebs = lt["blockDeviceMappings"][0]["ebs"]
    assert ebs["encrypted"] == "true"
    assert "subnetId" not in json.dumps(lt)
    nics = lt["networkInterfaces"]
    assert len(nics) == 17
    assert [n["networkCardIndex"] for n in nics] == list(range(17))
    assert nics[0]["interfaceType"] == "interface" and nics[0]["deviceIndex"] == 0
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    sg = "sg-0mock00000000000"  # the EKS cluster security group (mock_outputs get_cluster)
    assert all(n["securityGroups"] == [sg] for n in nics)
    user_data = base64.b64decode(lt["userData"]).decode()
    assert "application/node.eks.aws" in user_data and "strategy: RAID0" in user_data


def test_gpu_node_group(adopt):
    ng = one(adopt, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-gpu")
    assert ng["capacityType"] == "CAPACITY_BLOCK"
    assert ng["amiType"] == "AL2023_x86_64_NVIDIA"
    assert "instanceTypes" not in ng and "diskSize" not in ng
    assert ng["launchTemplate"] == {"id": "kimi-k3-gpu-lt-id", "version": "1"}
    assert ng["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    assert ng["labels"]["kimi-k3/gpu-node"] == "true"
    assert ng["subnetIds"] == [f"kimi-k3-gpu-{mo.MOCK_BLOCK_ZONE}-id"]
    # the block starts tomorrow: no nodes until then
    assert ng["scalingConfig"] == {"minSize": 0, "maxSize": 1, "desiredSize": 0}


def test_gpu_subnet_is_pinned_to_the_blocks_zone(adopt):
    subnet = one(adopt, "aws:ec2/subnet:Subnet", f"kimi-k3-gpu-{mo.MOCK_BLOCK_ZONE}")
    assert subnet["availabilityZone"] == mo.MOCK_BLOCK_ZONE


def test_scheduled_scaling_follows_the_block(adopt):
    window = adopt.outputs["reservationWindow"]
    scaling = one(adopt, "pulumi-python:dynamic/aws:BlockScaling")
    assert scaling["reservationId"] == CR and scaling["instanceCount"] == 1
    assert scaling["startDate"] == window["start"] and scaling["endDate"] == window["end"]
    assert scaling["asgName"] == "eks-mock-gpu-asg" and scaling["actionPrefix"] == "kimi-k3"
    assert scaling["aws"] == {"region": "us-east-2", "profile": None} and "awsSecrets" not in scaling
    assert not adopt.of_type("aws:autoscaling/schedule:Schedule")  # they cannot follow the next block
    ng = one(adopt, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-gpu")
    assert ng["updateConfig"] == {"updateStrategy": "MINIMAL", "maxUnavailable": 1}


def test_eks_cluster(adopt):
    c = one(adopt, "eks:index:Cluster")
    assert c["skipDefaultNodeGroup"] is True and c["authenticationMode"] == "API"
    assert c["endpointPublicAccess"] is True and c["publicAccessCidrs"] == ["198.51.100.7/32"]
    assert c["encryptionConfigKeyArn"].startswith("arn:aws:kms:")  # KMS key created by the program
    ng = one(adopt, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-gpu")
    assert ng["nodeRoleArn"].startswith("arn:aws:iam::")
    names = {r["name"] for r in adopt.of_type("kubernetes:helm.sh/v3:Release")} - MONITORING
    assert names == {"kimi-k3-nvidia-device-plugin"}  # one node per replica: no EFA, no LWS


def test_private_api_endpoint_without_cidrs(two_nodes):
    c = one(two_nodes, "eks:index:Cluster")
    assert c["endpointPublicAccess"] is False and "publicAccessCidrs" not in c


def test_workload_and_service(adopt):
    dep = one(adopt, "kubernetes:apps/v1:Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8}  # TP8 inside one node: no EFA
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    timeout = adopt.inference.plan.cold_start.startup_timeout_s
    sp = c["startupProbe"]
    assert sp["periodSeconds"] * sp["failureThreshold"] >= timeout
    assert dep["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    svc = one(adopt, "kubernetes:core/v1:Service")
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24"]
    assert adopt.outputs["endpoint"].startswith("http://mock-nlb")
    # what is applied is what the plan command writes, with the uid of the Secret its pods read
    # where the plan has its placeholder (components/inference/secret_roll.py)
    from components.aws_eks.mock_outputs import k8s_secret
    from components.inference import secret_roll

    rendered = yaml.safe_load(adopt.inference.artifacts["manifests/deployment-kimi-k3.yaml"])
    assert secret_roll.marked(rendered)
    uid = k8s_secret(one(adopt, "kubernetes:core/v1:Secret"))["metadata"]["uid"]
    assert secret_roll.with_uid(rendered, uid)["spec"] == dep["spec"]


def test_secrets_marked_secret_and_never_in_plain_text(adopt):
    secret = one(adopt, "kubernetes:core/v1:Secret")
    assert secret["stringData"] == SECRET
    assert adopt.outputs["kubeconfig"] == SECRET
    text = json.dumps({"r": adopt.resources, "o": adopt.outputs, "a": adopt.inference.artifacts})
    assert "sk-do-not-leak-1" not in text and "hf_do_not_leak" not in text
    c = one(adopt, "kubernetes:apps/v1:Deployment")["spec"]["template"]["spec"]["containers"][0]
    refs = {e["name"] for e in c["env"] if "secretKeyRef" in e.get("valueFrom", {})}
    assert refs == {"VLLM_API_KEY", "HF_TOKEN"}
    assert "printf 'Authorization: Bearer %s\\n' \"$VLLM_API_KEY\" | curl -H @- " \
        in adopt.outputs["curl"]


def test_two_nodes_use_a_leader_worker_set_and_the_lws_controller(two_nodes):
    lws = one(two_nodes, "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    releases = {r["name"] for r in two_nodes.of_type("kubernetes:helm.sh/v3:Release")} - MONITORING
    assert releases == {"kimi-k3-nvidia-device-plugin", "kimi-k3-efa-device-plugin", "kimi-k3-lws"}
    ng = one(two_nodes, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-gpu")
    assert ng["scalingConfig"]["maxSize"] == 2
    svc = one(two_nodes, "kubernetes:core/v1:Service")
    assert svc["spec"]["type"] == "ClusterIP"  # no allowed CIDRs: nothing public
    assert two_nodes.outputs["curl"].startswith("kubectl -n kimi-k3 port-forward")


def test_default_stack_only_quotes_a_block():
    run = run_program("aws-eks")
    block = one(run, "pulumi-python:dynamic/aws:CapacityBlock")
    assert block["maxUpfrontFeeUsd"] == 0 and block["durationHours"] == 24
    # neither a block nor a fee cap: said as what `pulumi up` does (lists, stops), not as a $0 cap
    assert run.outputs["capacityCost"].startswith("not bought: no block adopted and no fee cap")
    assert "lists the matching offerings" in " ".join(run.warnings)
    assert not any("at most $0.00" in w for w in run.warnings)


def test_a_fee_cap_is_said_as_a_purchase_limit():
    run = run_program("aws-eks", {"kimi-k3:maxUpfrontFeeUsd": "25000"})
    assert run.outputs["capacityCost"].startswith("not bought yet: a 24 h block of 1 instances is "
                                                  "bought only if its upfront fee is at most $25,000.00")
    assert any("buy the cheapest one only if its upfront fee is at most $25,000.00" in w
               for w in run.warnings)


def test_hyperpod_option_applies_the_endpoint_config():
    run = run_program("aws-eks", {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp-eks"})
    iec = one(run, "kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig")
    assert iec["spec"]["instanceType"] == "ml.p6-b300.48xlarge"
    names = [e["name"] for e in iec["spec"]["worker"]["environmentVariables"]]
    assert "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION" not in names
    assert not run.of_type("eks:index:Cluster") and not run.of_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert list(run.inference.artifacts) == ["manifests/inferenceendpointconfig-kimik3.yaml"]
    assert run.outputs["kubeconfig"] == SECRET


def test_existing_vpc_gpu_nodes_use_the_subnet_in_the_blocks_zone():
    run = run_program("aws-eks", {
        "kimi-k3:capacityReservationId": CR, "kimi-k3:vpcId": "vpc-0123456789abcdef0",
        "kimi-k3:privateSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1",
        "kimi-k3:publicSubnetIds": "subnet-0123456789abcdef2"})
    assert not run.of_type("aws:ec2/vpc:Vpc") and not run.of_type("aws:ec2/subnet:Subnet")
    ng = one(run, "aws:eks/nodeGroup:NodeGroup", "kimi-k3-gpu")
    assert ng["subnetIds"] == ["subnet-0123456789abcdef1"]  # the one in us-east-2b (mock block zone)
    c = one(run, "eks:index:Cluster")
    assert c["vpcId"] == "vpc-0123456789abcdef0"


def test_bad_target_key_stops_the_plan_command_with_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-m", "components", "plan", "--stack", "aws-eks", "--set",
                          "kimi-k3:serving=sagemaker", "--out", str(tmp_path)],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "kimi-k3:serving='sagemaker' is not a serving mode" in lines[0]
    assert not (tmp_path / "plan.json").exists()


def test_missing_region_is_a_one_line_config_error(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-m", "components", "plan", "--stack", "aws-eks", "--set",
                          "aws:region=", "--out", str(tmp_path)],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "aws:region (not set) is needed" in res.stderr and "Traceback" not in res.stderr


def test_every_written_manifest_validates_strictly(adopt, two_nodes):
    import kubernetes_validate

    for run in (adopt, two_nodes):
        assert run.inference.artifacts
        for path, text in run.inference.artifacts.items():
            obj = yaml.safe_load(text)
            assert path == f"manifests/{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
            if obj["kind"] == "LeaderWorkerSet":
                t = obj["spec"]["leaderWorkerTemplate"]
                for tpl in (t["leaderTemplate"], t["workerTemplate"]):
                    kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                                                  "metadata": {"name": "t"}, "template": tpl},
                                                 "1.35.0", strict=True)
            else:
                kubernetes_validate.validate(obj, "1.35.0", strict=True)


# ---------------------------------------------------------------- API reachability (issue 9, item 1)

def test_unreachable_api_stops_a_real_preview_before_anything_is_created():
    import pulumi

    with pytest.raises(pulumi.RunError) as e:
        run_program("aws-eks", {"kimi-k3:capacityReservationId": CR}, as_deployed=True)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("kimi-k3:apiAccessCidrs (not set) ")
    assert "/32" in msg and "kimi-k3:privateApi" in msg


def test_reachable_api_deploys():
    run = run_program("aws-eks", {"kimi-k3:capacityReservationId": CR,
                                  "kimi-k3:apiAccessCidrs": "198.51.100.7/32"}, as_deployed=True)
    assert one(run, "eks:index:Cluster")["publicAccessCidrs"] == ["198.51.100.7/32"]
    assert run.deployment.requirements == ()


def test_offline_plan_of_the_shipped_stack_warns_and_records_the_requirement(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-m", "components", "plan", "--stack", "aws-eks", "--out", str(tmp_path)],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "warning: a real `pulumi up` would stop: kimi-k3:apiAccessCidrs" in res.stdout
    doc = json.loads((tmp_path / "plan.json").read_text())
    reqs = doc["deploy_requirements"]
    assert [r["key"] for r in reqs] == ["kimi-k3:apiAccessCidrs"] and "privateApi" in reqs[0]["fix"]


# ---------------------------------------------------------------- readiness gate (issue 9, item 4)

def test_the_readiness_gate_follows_the_workload_with_the_plans_budget(adopt):
    from components.aws_eks.gate_budget import NODE_JOIN_S

    gate = one(adopt, "pulumi-python:dynamic/aws:EndpointReadiness")
    c = adopt.inference.plan.cold_start
    assert gate["budgetS"] == NODE_JOIN_S + c.stage_s + c.startup_timeout_s
    assert gate["expectedS"] == c.first_token_s
    assert gate["servedModelName"] == "Kimi-K3" and gate["serviceName"] == "kimi-k3-api"
    assert gate["podSelector"] == one(adopt, "kubernetes:core/v1:Service")["spec"]["selector"]
    assert gate["apiKey"] == SECRET  # the key reaches the gate only as a secret
    assert gate["blockStart"] == adopt.outputs["reservationWindow"]["start"]
    assert gate["blockEnd"] == adopt.outputs["reservationWindow"]["end"]  # nothing serves after it
    assert gate["progressFile"].endswith(".kimi-k3/progress/aws-eks.jsonl")
    assert gate["caData"] and gate["apiEndpoint"].startswith("https://")
    # neither the workload nor the Service is awaited by the Kubernetes provider
    svc = one(adopt, "kubernetes:core/v1:Service")
    assert svc["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    # the mocked block starts tomorrow: `pulumi up` returns at once and says when serving starts
    r = adopt.outputs["readiness"]
    assert r["ready"] is False and r["state"] == "waiting-for-block"
    assert r["servingExpectedBy"] > adopt.outputs["reservationWindow"]["start"]
    assert "run `pulumi up` (or `pulumi refresh`) after that" in r["lastSeen"]



# ---------------------------------------------------------------- destroy leaves nothing behind (item 8)

def test_destroy_checks_are_declared(adopt, two_nodes):
    check = one(adopt, "pulumi-python:dynamic/aws:LeftoverCheck")
    assert check["clusterName"] == "kimi-k3-aws-eks" and check["aws"]["region"] == "us-east-2"
    gone = one(adopt, "pulumi-python:dynamic/aws:LoadBalancerGone")
    assert (gone["namespace"], gone["serviceName"]) == ("kimi-k3", "kimi-k3-api")
    # no LoadBalancer Service (no allowedCidrs): nothing to wait for, the leftover check stays
    assert not two_nodes.of_type("pulumi-python:dynamic/aws:LoadBalancerGone")
    assert two_nodes.of_type("pulumi-python:dynamic/aws:LeftoverCheck")
    # registered after the network (it depends on it) and before the cluster (which depends on
    # it): destroy runs it between the two (tests/integration/test_aws_destroy_order.py)
    order = [r["type"] for r in adopt.resources]
    assert order.index("aws:ec2/vpc:Vpc") < order.index("pulumi-python:dynamic/aws:LeftoverCheck") \
        < order.index("eks:index:Cluster")


def test_destroy_order_service_before_its_load_balancer_wait_before_the_network(adopt):
    deps = {r["name"]: r["dependencies"] for r in adopt.resources}
    assert "kimi-k3-lb-gone" in deps["kimi-k3-svc"]  # the Service is deleted before the wait runs
    assert "kimi-k3-eks" in deps["kimi-k3-lb-gone"]  # the wait runs before the cluster goes
    assert "kimi-k3-vpc" in deps["kimi-k3-leftovers"] and "kimi-k3-leftovers" in deps["kimi-k3-eks"]


# ---------------------------------------------------------------- the API-key guard (issue 10, item 3)

def test_the_api_key_guard_is_declared_before_the_workload_and_validates(adopt):
    """With kimi-k3:apiKey the program creates the guard's ConfigMap, the workload waits for it,
    and a guarded two-node LeaderWorkerSet validates strictly too."""
    import kubernetes_validate

    from components.inference import api_guard

    (cm,) = [r for r in adopt.of_type("kubernetes:core/v1:ConfigMap")
             if r["inputs"]["metadata"]["name"] == "kimi-k3-api-guard"]
    assert cm["inputs"]["data"] == {api_guard.FILE_NAME: api_guard.source()}
    deps = {r["name"]: r["dependencies"] for r in adopt.resources}
    assert cm["name"] in deps["kimi-k3-vllm"]
    guarded = run_program("aws-eks", {"kimi-k3:nodes": "2", "kimi-k3:capacityReservationId": CR,
                                      "kimi-k3:apiKey": "sk-do-not-leak-2"})
    lws = yaml.safe_load(guarded.inference.artifacts["manifests/leaderworkerset-kimi-k3.yaml"])
    t = lws["spec"]["leaderWorkerTemplate"]
    for tpl in (t["leaderTemplate"], t["workerTemplate"]):
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                                      "template": tpl}, "1.35.0", strict=True)
    assert "api-guard" in json.dumps(t["leaderTemplate"]) and "api-guard" not in json.dumps(t["workerTemplate"])
    kubernetes_validate.validate(yaml.safe_load(
        guarded.inference.artifacts["manifests/configmap-kimi-k3-api-guard.yaml"]), "1.35.0", strict=True)


@pytest.mark.parametrize("extra", [{}, {"kimi-k3:serving": "hyperpod", "kimi-k3:apiKey": "kk3-Strong-Api-Key-0123456789abcdef"}])
def test_a_cluster_version_eks_no_longer_creates_is_refused_before_the_capacity_is_bought(extra):
    """1.31 left EKS extended support on 2026-11-26 (components/aws_eks/eks_versions.py): CreateCluster
    would refuse it only after the block or the training plan (neither can be cancelled) was bought."""
    from pulumi import RunError

    with pytest.raises(RunError) as e:
        run_program("aws-eks", {"kimi-k3:clusterVersion": "1.31", "kimi-k3:maxUpfrontFeeUsd": "150000", **extra})
    assert str(e.value).startswith("kimi-k3:clusterVersion=1.31 left EKS extended support on 2026-11-26")


def test_a_kms_key_of_another_region_is_refused_before_the_capacity_is_bought():
    """EKS takes a secrets-encryption key of the cluster's region only (botocore's EKS model,
    Provider.keyArn); the stack's region is aws:region (us-east-2 in the offline runner)."""
    from pulumi import RunError

    arn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    with pytest.raises(RunError) as e:
        run_program("aws-eks", {"kimi-k3:kmsKeyArn": arn, "kimi-k3:maxUpfrontFeeUsd": "150000"})
    assert str(e.value).startswith(f"kimi-k3:kmsKeyArn={arn!r} is in eu-west-1, not in aws:region (us-east-2)")
    run = run_program("aws-eks", {"kimi-k3:kmsKeyArn": arn.replace("eu-west-1", "us-east-2"),
                                  "kimi-k3:maxUpfrontFeeUsd": "150000"})
    assert not run.of_type("aws:kms/key:Key")  # the key given is used, none is made
