"""Nothing is created before the Capacity Block has decided: the dependency graph of the real
__main__.py under Pulumi's mock engine, as the engine receives it.

With neither `kimi-k3:capacityReservationId` nor `kimi-k3:maxUpfrontFeeUsd` (the shipped stack
file), `pulumi up` lists the offers and stops in the Capacity Block's create; the engine creates a
resource only after everything it waits for (explicit dependencies, those through its inputs, its
provider), so every resource that creates something must wait for the block, directly or through
what it waits for. Before issue 20, the weights bucket with its five settings, the serving and
mirror IAM roles with their policies, the mirror notice and the NAT gateway's Elastic IP did not.
"""

import json

import pytest

from components.cli.plan import plan_document
from components.offline import order
from components.offline.runner import run_program

BLOCK = "kimi-k3-capacity"
CR = "cr-0123456789abcdef0"
VPC = {"kimi-k3:vpcId": "vpc-0123456789abcdef0",
       "kimi-k3:privateSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1",
       "kimi-k3:publicSubnetIds": "subnet-0123456789abcdef2"}
VARIANTS = {
    "shipped stack (lists offers, buys nothing)": {},
    "adopted, two nodes over EFA, public plain endpoint": {"kimi-k3:capacityReservationId": CR, "kimi-k3:nodes": "2",
                                                           "kimi-k3:allowedCidrs": "203.0.113.0/24",
                                                           "kimi-k3:allowPlaintext": "true"},
    "public endpoint with a certificate from ACM": {"kimi-k3:allowedCidrs": "203.0.113.0/24",
                                                    "kimi-k3:tlsDomain": "k3.example.com",
                                                    "kimi-k3:tlsHostedZoneId": "Z0123456789ABCDEFGHIJ"},
    "bought under a cap, two replicas, streamed": {"kimi-k3:maxUpfrontFeeUsd": "90000", "kimi-k3:replicas": "2",
                                                   "kimi-k3:streamWeights": "true"},
    "your VPC, your bucket, your KMS key": {**VPC, "kimi-k3:capacityReservationId": CR,
                                            "kimi-k3:weightsSource": "s3", "kimi-k3:weightsS3Uri": "s3://my-weights/k3",
                                            "kimi-k3:kmsKeyArn": "arn:aws:kms:us-east-2:111122223333:key/x",
                                            "kimi-k3:privateApi": "true"},
    "hub, API key, remote write to AMP": {"kimi-k3:weightsSource": "hub", "kimi-k3:apiKey": "sk-order-test",
                                           "kimi-k3:ampWorkspaceId": "ws-12345678-abcd-1234-abcd-123456789012"},
}


@pytest.fixture(scope="module", params=sorted(VARIANTS), ids=sorted(VARIANTS))
def run(request):
    return run_program("aws-eks", VARIANTS[request.param])


def block_urn(run):
    (block,) = run.of_type("pulumi-python:dynamic/aws:CapacityBlock")
    assert block["name"] == BLOCK
    return block["urn"]


def urn_of(run, type_token, name):
    (r,) = [r for r in run.of_type(type_token) if r["name"] == name]
    return r["urn"]


#: records of the stack's state with nothing in AWS or Kubernetes (type -> why they may come first)
STATE_ONLY = {"pulumi-python:dynamic/aws:StackOwner": "the stack's ownership token (owner.py): the block's input"}


def test_every_resource_waits_for_the_capacity_blocks_decision(run):
    early = order.not_waiting_for(run.resources, block_urn(run), exempt_types=STATE_ONLY)
    assert early == [], f"created before the Capacity Block decides: {early}"
    # the block is the first step that reaches AWS: only state records come with or before it
    first = {r["urn"]: r["type"] for r in run.resources if r["urn"] in order.waves(run.resources)[0]}
    assert block_urn(run) in first or block_urn(run) in order.waves(run.resources)[1]
    assert set(first.values()) - {"pulumi-python:dynamic/aws:CapacityBlock"} <= set(STATE_ONLY)


def test_plan_json_records_what_each_resource_waits_for(run):
    doc = plan_document(run)
    urns = [r["urn"] for r in doc["resources"]]
    assert len(urns) == len(set(urns))  # URNs identify resources in dependsOn (names do not)
    by = {r["urn"]: r for r in doc["resources"]}
    for r in doc["resources"]:
        assert isinstance(r["dependsOn"], list) and r["urn"] not in r["dependsOn"]
        assert set(r["dependsOn"]) <= set(by), (r["name"], r["dependsOn"])
    names = {(r["type"], r["name"]): r for r in doc["resources"]}
    # through inputs (the policy reads the role's name and the bucket's), explicit (the VPC), provider
    role, bucket = ("aws:iam/role:Role", "kimi-k3-serving-role"), ("aws:s3/bucket:Bucket", "kimi-k3-weights")
    if bucket in names:
        assert names[("aws:iam/rolePolicy:RolePolicy", "kimi-k3-serving-s3")]["dependsOn"] == sorted(
            [names[role]["urn"], names[bucket]["urn"]])
    if ("aws:ec2/vpc:Vpc", "kimi-k3-vpc") in names:
        assert names[("aws:ec2/vpc:Vpc", "kimi-k3-vpc")]["dependsOn"] == [block_urn(run)]
    k8s = names[("pulumi:providers:kubernetes", "kimi-k3-k8s")]["urn"]
    assert k8s in names[("kubernetes:core/v1:Namespace", "kimi-k3-ns")]["dependsOn"]
    json.dumps(doc)


def test_the_summary_shows_the_order(run):
    from components.cli.plan import order_lines

    lines = order_lines(run)
    owner = f"    {'pulumi-python:dynamic/aws:StackOwner':<46} kimi-k3-owner"
    block = f"    {'pulumi-python:dynamic/aws:CapacityBlock':<46} {BLOCK}"
    wave0 = lines[1:lines.index("  wave 1:")]  # registration order inside a wave may vary
    if "kimi-k3:capacityReservationId" in run.config:  # adopting needs no token
        assert lines[0] == "  wave 0:" and sorted(wave0) == sorted([owner, block])
    else:  # buying tags the purchase with it
        assert lines[0] == "  wave 0:" and wave0 == [owner]
        assert lines[2:4] == ["  wave 1:", block + "  (waits for kimi-k3-owner)"]
    assert "  wave 1:" in lines and lines[-1].startswith("  components (create nothing): kimi-k3")
    eks = next(line for line in lines if line.strip().startswith("eks:index:Cluster"))
    assert "(waits for " in eks and BLOCK in eks  # pulumi-eks's remote component is a step


def test_a_purchase_is_owned_by_the_stacks_token_not_its_names():
    run = run_program("aws-eks", {"kimi-k3:maxUpfrontFeeUsd": "90000"})
    (owner,) = run.of_type("pulumi-python:dynamic/aws:StackOwner")
    (block,) = run.of_type("pulumi-python:dynamic/aws:CapacityBlock")
    assert block["inputs"]["stackIdentity"] == "0" * 32  # the owner record's token (mocked)
    assert block["inputs"]["stackName"].endswith("/kimi-k3/aws-eks")  # the Name tag only
    assert owner["urn"] in order.waits_for(block)
    adopted = run_program("aws-eks", {"kimi-k3:capacityReservationId": CR})
    (block,) = adopted.of_type("pulumi-python:dynamic/aws:CapacityBlock")
    assert "stackIdentity" not in block["inputs"] or block["inputs"]["stackIdentity"] is None
    assert adopted.of_type("pulumi-python:dynamic/aws:StackOwner")  # kept: switching back keeps the token


def test_the_gpu_node_group_rolls_only_after_the_roll_guard(run):
    """EKS's Capacity Block rule (roll_guard.py): the guard, which scales the group to 0 while the
    block runs, comes before the node group; the schedule after it sets the size back."""
    guard = urn_of(run, "pulumi-python:dynamic/aws:GpuRollGuard", "kimi-k3-gpu-roll-guard")
    group = next(r for r in run.of_type("aws:eks/nodeGroup:NodeGroup") if r["name"] == "kimi-k3-gpu")
    scaling = next(r for r in run.of_type("pulumi-python:dynamic/aws:BlockScaling"))
    assert guard in order.waits_for(group) and order.reaches(run.resources, scaling["urn"], guard)
    (g,) = [r["inputs"] for r in run.of_type("pulumi-python:dynamic/aws:GpuRollGuard")]
    assert g["rollKey"]["kubernetesVersion"] == group["inputs"]["version"] == "1.35"
    assert g["rollKey"]["launchTemplateVersion"] == group["inputs"]["launchTemplate"]["version"]
    assert scaling["inputs"]["rollKey"] == g["rollKey"]


def test_the_summary_lists_resources_in_plan_order_whatever_the_registration(run, tmp_path):
    """The engine registers resources as their inputs resolve (it varies from run to run); the
    summary's list is the stable order plan.json has, so two plans of one config print alike."""
    import dataclasses

    from components.cli.plan import summary

    def listed(r):
        text = summary(r, [])
        return text[text.index("resources ("):text.index("follow a real")].splitlines()[1:]

    shuffled = dataclasses.replace(run, resources=list(reversed(run.resources)))
    assert listed(shuffled) == listed(run)
    assert [line.split()[1] for line in listed(run)] == [r["name"] for r in order.stable(run.resources)]


def test_every_pod_identity_association_has_the_agent_it_needs(run):
    """An association gives a pod credentials only through the eks-pod-identity-agent add-on:
    with weights from the hub and AMP remote write, the weights path (which used to install it)
    is absent, and Prometheus's remote write had no credentials. One agent per cluster."""
    associations = run.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    agents = [r for r in run.of_type("aws:eks/addon:Addon") if r["inputs"].get("addonName") == "eks-pod-identity-agent"]
    assert len(agents) == (1 if associations else 0)
    if associations:
        assert agents[0]["name"] == "kimi-k3-pod-identity-agent" and agents[0]["parent"] == "kimi-k3"
