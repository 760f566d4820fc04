"""The EKS cluster (pulumi-eks), its node IAM role, a small system node group, and the add-ons
the GPU nodes need: NVIDIA device plugin, EFA device plugin, and the LeaderWorkerSet controller
when a replica spans nodes.

API authentication mode (no aws-auth ConfigMap), no default node group, secrets encrypted with
KMS, a private API endpoint unless public CIDRs are configured. Add-ons are Helm releases with
pinned chart versions, tolerating the GPU taint and pinned to the GPU nodes where they belong.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from . import addons
from .config import AwsEksConfig

NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")


def cluster_args(cfg: AwsEksConfig, cluster_name: str, kms_arn: Any, network,
                 profile: Optional[str] = None) -> Dict[str, Any]:
    """pulumi-eks Cluster inputs (pure apart from the Outputs passed in).

    `provider_credential_opts` carries the stack's `aws:profile` (pulumi-eks 4.4.0's docstring:
    required when a named profile is configured); pulumi-eks then uses it for its own internal
    Kubernetes provider. Its exported `kubeconfig`/`kubeconfigJson` never carry the profile
    (pulumi/pulumi-eks nodejs/eks/cluster/cluster.ts: `kubeconfig: kubeconfigWithoutProfile`,
    v4.3.0 through 2026-08 HEAD), so our own provider uses `exec_kubeconfig` instead.
    """
    public = bool(cfg.api_access_cidrs)
    args: Dict[str, Any] = {
        "name": cluster_name,
        "version": cfg.cluster_version,
        "vpc_id": network.vpc_id,
        "private_subnet_ids": network.private_subnet_ids,
        "public_subnet_ids": network.public_subnet_ids,
        "skip_default_node_group": True,
        "authentication_mode": eks.AuthenticationMode.API,
        "endpoint_private_access": True,
        "endpoint_public_access": public,
        "public_access_cidrs": list(cfg.api_access_cidrs) if public else None,
        "encryption_config_key_arn": kms_arn,
        "node_associate_public_ip_address": False,
        "create_oidc_provider": False,
        "enabled_cluster_log_types": ["api", "audit", "authenticator"],
    }
    if profile:
        args["provider_credential_opts"] = {"profile_name": profile}
    return args


#: the add-on's configuration schema accepts tolerations (aws/containers-roadmap#2261); builds
#: from v1.2.0-eksbuild.1 also tolerate every taint by default (aws/amazon-vpc-cni-k8s#2780)
POD_IDENTITY_AGENT = {"addon_name": "eks-pod-identity-agent",
                      "configuration_values": json.dumps({"tolerations": [{"operator": "Exists"}]})}


class Cluster:
    """EKS control plane, node role, system nodes, kubeconfig and a Kubernetes provider."""

    def __init__(self, name: str, cluster_name: str, cfg: AwsEksConfig, network, parent: pulumi.Resource,
                 depends_on: List[pulumi.Resource], region: str, profile: Optional[str] = None):
        opts = pulumi.ResourceOptions(parent=parent, depends_on=depends_on)
        kms_arn: Any = cfg.kms_key_arn
        if kms_arn is None:
            key = aws.kms.Key(f"{name}-secrets-key", description=f"{cluster_name} Kubernetes secrets",
                              enable_key_rotation=True, deletion_window_in_days=7, opts=opts)
            kms_arn = key.arn
        self.eks = eks.Cluster(f"{name}-eks", **cluster_args(cfg, cluster_name, kms_arn, network, profile),
                               opts=opts)
        self._pod_identity_agent: Optional[pulumi.Resource] = None
        self.name = cluster_name
        # the EKS-managed cluster security group (node interfaces must carry it explicitly)
        self.info = aws.eks.get_cluster_output(
            name=self.eks.kubeconfig_json.apply(lambda _: cluster_name),
            opts=pulumi.InvokeOutputOptions(parent=parent))
        self.security_group_id = self.info.vpc_config.cluster_security_group_id
        #: the API endpoint and CA the readiness gate talks to (as the deployer)
        self.endpoint = self.info.endpoint
        self.ca_data = self.info.certificate_authorities[0].data
        # the identity that created the cluster is its only admin (API authentication mode), so
        # the Kubernetes side must get its tokens as the same identity: `--profile` when
        # aws:profile is set (static aws:accessKey keys are refused at preview: aws_api.py)
        # (credential-free by construction, so the provider's input is plain, as pulumi-eks passes
        # its own; the stack output stays secret)
        self.exec_kubeconfig = pulumi.Output.all(self.endpoint, self.ca_data).apply(
            lambda a: exec_kubeconfig(cluster_name, a[0], a[1], region, profile))
        self.kubeconfig = pulumi.Output.secret(self.exec_kubeconfig)

        self.node_role = aws.iam.Role(f"{name}-node-role", assume_role_policy=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "ec2.amazonaws.com"}}]}),
            opts=opts)
        self.node_role_attachments = [aws.iam.RolePolicyAttachment(
            f"{name}-node-{p}", role=self.node_role.name, policy_arn=f"arn:aws:iam::aws:policy/{p}",
            opts=pulumi.ResourceOptions(parent=self.node_role)) for p in NODE_POLICIES]
        # no S3 access on the node role: pods that read weights get EKS Pod Identity roles
        # (components/aws_eks/weights/resources.py), and IMDS hop limit 1 keeps them off this role
        # CoreDNS, the LWS controller and the device-plugin controllers run here, not on GPUs
        self.system_nodes = aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster_name,
            node_role_arn=self.node_role.arn,
            subnet_ids=network.private_subnet_ids,
            capacity_type="ON_DEMAND",
            ami_type="AL2023_x86_64_STANDARD",
            instance_types=[cfg.system_instance_type],
            scaling_config={"min_size": cfg.system_node_count, "max_size": cfg.system_node_count + 1,
                            "desired_size": cfg.system_node_count},
            labels={"kimi-k3/system-node": "true"},
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[self.eks, *self.node_role_attachments]))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.exec_kubeconfig,
                                     enable_server_side_apply=True,
                                     opts=pulumi.ResourceOptions(parent=parent))

    def pod_identity_agent(self, name: str, parent: pulumi.Resource) -> pulumi.Resource:
        """The EKS Pod Identity agent add-on, declared once by whoever needs it first (the weights'
        roles, Prometheus's AMP remote-write role): without the agent a Pod Identity association
        gives the pod no credentials. Same name and parent from either caller: its URN stays."""
        if self._pod_identity_agent is None:
            self._pod_identity_agent = aws.eks.Addon(
                f"{name}-pod-identity-agent", cluster_name=self.name, **POD_IDENTITY_AGENT,
                opts=pulumi.ResourceOptions(parent=parent, depends_on=[self.eks]))
        return self._pod_identity_agent

    def add_ons(self, name: str, parent: pulumi.Resource, multi_node: bool) -> List[pulumi.Resource]:
        """Device plugins (EFA and LWS only for multi-node replicas), after the system nodes exist.

        The device plugins are not awaited (their DaemonSets have no pod until a block's GPU nodes
        join, maybe days later); the LWS controller is, because its webhook must answer before
        the LeaderWorkerSet is applied.
        """
        opts = pulumi.ResourceOptions(parent=parent, provider=self.provider, depends_on=[self.system_nodes])
        out: List[pulumi.Resource] = []
        for c in addons.charts(multi_node):
            args: Dict[str, Any] = {"chart": c.chart, "version": c.version, "namespace": c.namespace,
                                    "values": c.values, "skip_await": not c.await_ready}
            if c.repo:
                args["repository_opts"] = {"repo": c.repo}
            if c.create_namespace:
                args["create_namespace"] = True
            out.append(k8s.helm.v3.Release(f"{name}-{c.release}", **args, opts=opts))
        return out


def exec_kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str,
                    profile: Optional[str] = None) -> str:
    """A kubeconfig for an EKS cluster that gets tokens from `aws eks get-token` (no credentials
    inside it), as the stack's `aws:profile` when one is set.

    `--profile`, not `AWS_PROFILE`: the AWS CLI lets ambient `AWS_ACCESS_KEY_ID`/... in the
    environment win over `AWS_PROFILE`, while a command-line `--profile` wins over both (AWS CLI
    "Configuration and credential file settings", precedence; pulumi-eks does the same in
    nodejs/eks/cluster/cluster.ts generateKubeconfig for the same reason).
    """
    args = ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"]
    if profile:
        args += ["--profile", profile]
    user_exec: Dict[str, Any] = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
                                 "args": args}
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster_name,
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint,
                                                        "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "users": [{"name": cluster_name, "user": {"exec": user_exec}}],
    })


def existing_cluster_provider(name: str, cluster_name: str, region: str, parent: pulumi.Resource,
                              profile: Optional[str] = None):
    """(kubeconfig secret Output, Kubernetes provider, (API endpoint, CA data) Outputs) for a
    cluster kimi-k3 does not manage."""
    c = aws.eks.get_cluster_output(name=cluster_name, opts=pulumi.InvokeOutputOptions(parent=parent))
    ca = c.certificate_authorities[0].data
    plain = pulumi.Output.all(c.endpoint, ca).apply(
        lambda a: exec_kubeconfig(cluster_name, a[0], a[1], region, profile))
    provider = k8s.Provider(f"{name}-k8s", kubeconfig=plain, opts=pulumi.ResourceOptions(parent=parent))
    return pulumi.Output.secret(plain), provider, (c.endpoint, ca)
