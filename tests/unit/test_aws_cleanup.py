"""Destroy leaves nothing behind: the Service's load balancer is awaited before the network goes,
and anything still tagged for the cluster afterwards fails the destroy with its id.

ELBv2, ELB and EC2 are botocore Stubbers on the real service models (parameters validated).
"""

import boto3
import pytest
from botocore.stub import Stubber

from components.aws_eks import cleanup as cl

CLUSTER = "kimi-k3-aws-eks"
ARN = "arn:aws:elasticloadbalancing:us-east-2:000000000000:loadbalancer/net/a1b2c3/0123456789abcdef"
OTHER_ARN = "arn:aws:elasticloadbalancing:us-east-2:000000000000:loadbalancer/net/zz/fedcba9876543210"
OWNED = [{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"},
         {"Key": "kubernetes.io/service-name", "Value": "kimi-k3/kimi-k3-api"}]


def client(service):
    return boto3.client(service, region_name="us-east-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@pytest.fixture
def aws():
    c = {s: client(s) for s in ("ec2", "elbv2", "elb")}
    stubs = {s: Stubber(v) for s, v in c.items()}
    for st in stubs.values():
        st.activate()
    yield c, stubs
    for st in stubs.values():
        st.assert_no_pending_responses()
        st.deactivate()


def lb(arn, name):
    return {"LoadBalancerArn": arn, "LoadBalancerName": name, "Type": "network", "State": {"Code": "active"}}


def elb_round(stubs, present):
    if present:
        stubs["elbv2"].add_response("describe_load_balancers", {"LoadBalancers": [lb(ARN, "a1b2c3"), lb(OTHER_ARN, "zz")]}, {})
        stubs["elbv2"].add_response("describe_tags", {"TagDescriptions": [
            {"ResourceArn": ARN, "Tags": OWNED},
            {"ResourceArn": OTHER_ARN, "Tags": [{"Key": "kubernetes.io/cluster/someone-else", "Value": "owned"}]}]},
            {"ResourceArns": [ARN, OTHER_ARN]})
    else:
        stubs["elbv2"].add_response("describe_load_balancers", {"LoadBalancers": [lb(OTHER_ARN, "zz")]}, {})
        stubs["elbv2"].add_response("describe_tags", {"TagDescriptions": [
            {"ResourceArn": OTHER_ARN, "Tags": [{"Key": "kubernetes.io/cluster/someone-else", "Value": "owned"}]}]},
            {"ResourceArns": [OTHER_ARN]})
    stubs["elb"].add_response("describe_load_balancers", {"LoadBalancerDescriptions": []}, {})


def props(**kw):
    return {"clusterName": CLUSTER, "namespace": "kimi-k3", "serviceName": "kimi-k3-api", "region": "us-east-2",
            "aws": {"region": "us-east-2", "profile": None}, "waitS": 1.0, "pollS": 0.05, **kw}


def test_destroy_waits_until_the_services_load_balancer_is_gone(aws, monkeypatch):
    c, stubs = aws
    elb_round(stubs, present=True)
    elb_round(stubs, present=False)
    p = cl.LoadBalancerGoneProvider()
    monkeypatch.setattr(type(p), "clients", staticmethod(lambda props: c))  # a provider keeps nothing
    p.delete("x", props())


def test_a_load_balancer_that_stays_fails_the_destroy_by_name(aws, monkeypatch):
    c, stubs = aws
    p = cl.LoadBalancerGoneProvider()
    monkeypatch.setattr(type(p), "clients", staticmethod(lambda props: c))  # a provider keeps nothing
    for _ in range(3):
        elb_round(stubs, present=True)
    with pytest.raises(RuntimeError) as e:
        p.delete("x", props(waitS=0.12))
    msg = str(e.value)
    assert ARN in msg and "kimi-k3/kimi-k3-api" in msg and "run `pulumi destroy` again" in msg
    assert OTHER_ARN not in msg
    # the rounds not needed before the deadline are left: drain them for the fixture's check
    stubs["elbv2"]._queue.clear()
    stubs["elb"]._queue.clear()


def ec2_round(stubs, eni=None, vol=None, sg=None):
    filters = cl._ec2_tag_filters(CLUSTER)
    for i, f in enumerate(filters):
        stubs["ec2"].add_response("describe_network_interfaces",
                                  {"NetworkInterfaces": [eni] if (eni and i == 1) else []}, {"Filters": f})
        stubs["ec2"].add_response("describe_volumes", {"Volumes": [vol] if (vol and i == 0) else []}, {"Filters": f})
        stubs["ec2"].add_response("describe_security_groups",
                                  {"SecurityGroups": [sg] if (sg and i == 0) else []}, {"Filters": f})


def test_leftovers_are_listed_loudly_and_nothing_is_deleted(aws, monkeypatch):
    c, stubs = aws
    eni = {"NetworkInterfaceId": "eni-0123456789abcdef0", "Status": "available"}
    vol = {"VolumeId": "vol-0123456789abcdef0", "State": "available", "Size": 500}
    for _ in range(2):
        elb_round(stubs, present=False)
        ec2_round(stubs, eni=eni, vol=vol)
    p = cl.LeftoverCheckProvider()
    monkeypatch.setattr(type(p), "clients", staticmethod(lambda props: c))  # a provider keeps nothing
    with pytest.raises(RuntimeError) as e:
        p.delete("x", props(waitS=0.06))
    msg = str(e.value)
    assert "2 AWS resource(s) tagged for cluster kimi-k3-aws-eks remain after destroy and are billed" in msg
    assert "EBS volume vol-0123456789abcdef0 (available, 500 GiB)" in msg
    assert "network interface eni-0123456789abcdef0 (available)" in msg
    assert "\n" not in msg and "kimi-k3 does not delete them" in msg
    stubs["elbv2"]._queue.clear(), stubs["elb"]._queue.clear(), stubs["ec2"]._queue.clear()


def test_leftovers_that_go_away_while_waiting_pass(aws, monkeypatch):
    c, stubs = aws
    sg = {"GroupId": "sg-0123456789abcdef0", "GroupName": f"eks-cluster-sg-{CLUSTER}-1", "OwnerId": "0",
          "Description": "EKS created security group", "VpcId": "vpc-0"}
    elb_round(stubs, present=False)
    ec2_round(stubs, sg=sg)   # EKS deletes its cluster security group a little after the cluster
    elb_round(stubs, present=False)
    ec2_round(stubs)
    p = cl.LeftoverCheckProvider()
    monkeypatch.setattr(type(p), "clients", staticmethod(lambda props: c))  # a provider keeps nothing
    p.delete("x", props(waitS=5))


def test_tag_matching():
    assert cl.for_service({f"kubernetes.io/cluster/{CLUSTER}": "owned", "kubernetes.io/service-name": "kimi-k3/kimi-k3-api"},
                          CLUSTER, "kimi-k3", "kimi-k3-api")
    assert not cl.for_service({f"kubernetes.io/cluster/{CLUSTER}": "owned", "kubernetes.io/service-name": "a/b"},
                              CLUSTER, "kimi-k3", "kimi-k3-api")
    assert cl.for_service({"elbv2.k8s.aws/cluster": CLUSTER, "service.k8s.aws/stack": "kimi-k3/kimi-k3-api"},
                          CLUSTER, "kimi-k3", "kimi-k3-api")
    assert not cl.for_cluster({"kubernetes.io/cluster/kimi-k3-aws-eks-2": "owned"}, CLUSTER)
    assert cl.for_cluster({"cluster.k8s.amazonaws.com/name": CLUSTER}, CLUSTER)


def test_tags_are_read_in_batches_of_twenty(aws):
    c, stubs = aws
    arns = [f"arn:aws:elasticloadbalancing:us-east-2:0:loadbalancer/net/n{i}/{i:016x}" for i in range(25)]
    stubs["elbv2"].add_response("describe_load_balancers", {"LoadBalancers": [lb(a, f"n{i}") for i, a in enumerate(arns[:20])],
                                                            "NextMarker": "m"}, {})
    stubs["elbv2"].add_response("describe_load_balancers", {"LoadBalancers": [lb(a, f"n{i}") for i, a in enumerate(arns[20:])]},
                                {"Marker": "m"})
    stubs["elbv2"].add_response("describe_tags", {"TagDescriptions": []}, {"ResourceArns": arns[:20]})
    stubs["elbv2"].add_response("describe_tags", {"TagDescriptions": []}, {"ResourceArns": arns[20:]})
    stubs["elb"].add_response("describe_load_balancers", {"LoadBalancerDescriptions": []}, {})
    assert cl.load_balancers(c["elbv2"], c["elb"]) == []
