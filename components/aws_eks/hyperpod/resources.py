"""The end-to-end HyperPod path's resources (Pulumi), declared by the stack's cluster component.

Order (every resource waits for the training plan, directly or through what it waits for, so a
refused purchase or a plain listing of the offers leaves nothing behind):

    kimi-k3 (AwsEksCluster)
      kimi-k3-owner            the stack's token (state only; owner.py)
      kimi-k3-training-plan    adopted or bought (training_plan.py)
      network (pinned to the plan's zone), leftover check, EKS with its system nodes, the NVIDIA
      device plugin (the HyperPod nodes carry the label it selects), monitoring
      kimi-k3-hyperpod (HyperPodCluster)
        OIDC provider (IRSA for the operator's roles)
        execution role of the nodes + policies; the nodes-gone proof; aws-native provider;
        kimi-k3-hyperpod-cluster (aws-native:sagemaker:Cluster) on the plan
        TLS bucket (private, encrypted, TLS-only) for the operator's certificates
        operator roles (execution, ALB controller, KEDA), the dependency add-ons, the operator's
        namespace, the operator add-on, the load-balancers-gone proof

Destroy runs it backwards: the endpoint config (K3Inference), then the wait for the operator's
load balancers, the operator add-on and its roles, the HyperPod cluster, then the proof that
SageMaker lists it no more (and no node), EKS, the leftover check, the network; the training
plan is forgotten, loudly.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import pulumi

from . import catalog
from . import cluster as hpc
from . import operator as op

TYPE = "kimi-k3:aws:HyperPodCluster"
#: where the operator writes its certificate in the stack's TLS bucket (IEC tlsConfig)
TLS_PREFIX = "kimi-k3/certificates/"
#: the rendered manifest's stand-in for the TLS bucket's name (known once AWS names it)
TLS_BUCKET_PLACEHOLDER = "${TLS_CERTIFICATE_BUCKET}"


def tls_output_uri(bucket: str) -> str:
    return f"s3://{bucket}/{TLS_PREFIX}"


def with_tls(iec: dict, tls) -> dict:
    """The endpoint config with your certificate (and the zone the operator writes the name in),
    or as it is (the operator's self-signed certificate). Pure."""
    if tls is None:
        return iec
    spec = dict(iec["spec"])
    spec["tlsConfig"] = {**spec.get("tlsConfig", {}),
                         "customCertificateConfig": {"acmArn": tls.acm_arn, "domainName": tls.domain}}
    if tls.hosted_zone_id:
        spec["dnsConfig"] = {"hostedZoneId": tls.hosted_zone_id}
    return {**iec, "spec": spec}


def stack_zones(cfg) -> Any:
    """The zones where the stack has a subnet for the HyperPod nodes: every Availability Zone of
    the region for the VPC it creates (network.py makes a GPU subnet in each), the zones of
    `privateSubnetIds` for yours."""
    import pulumi_aws as aws

    from ..network import region_zones

    if not cfg.vpc_id:
        return region_zones()
    return pulumi.Output.all(*[aws.ec2.get_subnet_output(id=i).availability_zone for i in cfg.private_subnet_ids])


def build(infra, name: str, deployment) -> None:
    """Declare the path under `infra` (the AwsEksCluster) and set what the target reads on it:
    `cluster`, `network`, `provider`, `kubeconfig`, `add_ons`, `monitoring`, `plan`, `hyperpod`,
    `cluster_name`, `block` (None)."""
    from ...progress.program import progress_inputs
    from ..cleanup import LeftoverCheck
    from ..cluster import Cluster
    from ..network import Network
    from ..owner import StackOwner
    from .training_plan import TrainingPlanResource

    shared, cfg = deployment.shared, deployment.config.eks
    req = cfg.hyperpod.plan
    region, aws_inputs = infra.region, infra.aws_inputs
    profile = (aws_inputs.get("aws") or {}).get("profile")
    if not req.adopt:
        pulumi.log.warn(req.buying_notice(), resource=infra)
    if cfg.cluster_version == catalog.DEFAULT_K8S_VERSION:
        pulumi.log.warn(
            f"EKS {cfg.cluster_version}: the newest Kubernetes version SageMaker HyperPod documents "
            f"({catalog.K8S_VERSIONS_SOURCE}); its EKS standard support ends {catalog.DEFAULT_STANDARD_SUPPORT_ENDS}, "
            "after which the control plane bills extended support ($0.60 per hour instead of $0.10)", resource=infra)
    owner = StackOwner(f"{name}-owner", opts=pulumi.ResourceOptions(parent=infra))
    plan = TrainingPlanResource(f"{name}-training-plan", {
        "region": region, "instanceType": req.instance_type, "instanceCount": req.instance_count,
        "zones": stack_zones(cfg), "trainingPlanArn": req.arn,
        "durationHours": None if req.adopt else req.duration_hours,
        "earliestStart": None if req.adopt else req.earliest_start,
        "latestStart": None if req.adopt else req.latest_start,
        "maxUpfrontFeeUsd": None if req.adopt else req.max_upfront_fee_usd,
        "stackToken": None if req.adopt else owner.ownerToken,
        "stackName": None if req.adopt else infra.stack_identity,
        "clusterVersion": cfg.cluster_version, "addons": dict(catalog.ADDON_VERSIONS),
        **aws_inputs,
    }, opts=pulumi.ResourceOptions(parent=infra))
    pulumi.Output.all(plan.trainingPlanName, plan.startTime, plan.endTime, plan.availabilityZone).apply(
        lambda t: pulumi.log.warn(f"training plan {t[0]}: {t[1]} to {t[2]} in {t[3]}; the HyperPod nodes run "
                                  "from its start", resource=infra) if t[0] else None)
    infra.cluster_name = f"{name}-{shared.stack}"[:100]
    network = Network(name, cfg, plan.availabilityZone, infra, depends_on=[plan], region=region,
                      public_endpoint=False)
    leftovers = LeftoverCheck(f"{name}-leftovers", {
        "clusterName": infra.cluster_name, "region": region, **aws_inputs, **progress_inputs()},
        opts=pulumi.ResourceOptions(parent=infra, depends_on=[plan, *network.resources]))
    cluster = Cluster(name, infra.cluster_name, cfg, network, infra, depends_on=[plan, leftovers],
                      region=region, profile=profile)
    add_ons = cluster.add_ons(name, infra, multi_node=False)
    hyperpod = HyperPodCluster(f"{name}-hyperpod", deployment, cluster, network, plan, region, profile,
                               aws_inputs, infra.stack_identity, opts=pulumi.ResourceOptions(parent=infra))
    infra.monitoring = None
    if cfg.monitoring:
        from ..monitoring_resources import Monitoring

        infra.monitoring = Monitoring(name, cluster, cluster.provider, infra, deployment.plan.platform, region,
                                      cfg.amp_workspace_id, depends_on=[cluster.system_nodes])
    infra.plan, infra.hyperpod, infra.block = plan, hyperpod, None
    from ...progress.program import BILLING_TRAINING_PLAN, record_billing_start

    record_billing_start(plan.startTime, BILLING_TRAINING_PLAN, plan.endTime)  # `status`'s spend: from, to
    infra.network, infra.cluster = network, cluster
    infra.add_ons = [*add_ons, hyperpod.operator]
    infra.kubeconfig, infra.provider = cluster.kubeconfig, cluster.provider


class HyperPodCluster(pulumi.ComponentResource):
    """The HyperPod cluster on the stack's EKS cluster and the inference operator (module docstring)."""

    def __init__(self, name: str, deployment, cluster, network, plan, region: str, profile: Optional[str],
                 aws_inputs: Dict[str, Any], stack_identity: str, opts: Optional[pulumi.ResourceOptions] = None):
        import pulumi_aws as aws
        import pulumi_aws_native as aws_native

        from ...progress.program import progress_inputs
        from ..addons import GPU_NODE_LABELS
        from .proof import HyperPodGone, OperatorLoadBalancersGone

        shared, cfg = deployment.shared, deployment.config.eks
        req = cfg.hyperpod.plan
        super().__init__(TYPE, name, {"instanceType": req.instance_type, "instanceCount": req.instance_count}, opts)
        self.name = hpc.cluster_name(shared.stack)
        # the nodes' identity
        self.node_role = aws.iam.Role(f"{name}-node-role", assume_role_policy=hpc.trust_policy(),
                                      opts=pulumi.ResourceOptions(parent=self, depends_on=[plan]))
        role_child = pulumi.ResourceOptions(parent=self.node_role)
        attachments: List[pulumi.Resource] = [
            aws.iam.RolePolicyAttachment(f"{name}-node-{arn.rsplit('/', 1)[-1]}", role=self.node_role.name,
                                         policy_arn=arn, opts=role_child) for arn in hpc.managed_policies()]
        attachments.append(aws.iam.RolePolicy(f"{name}-node-vpc", role=self.node_role.name,
                                              policy=hpc.vpc_policy(), opts=role_child))
        # destroy: runs after the cluster is deleted (the cluster depends on it) and proves it gone
        gone = HyperPodGone(f"{name}-gone", {"clusterName": self.name, "region": region, **aws_inputs,
                                            **progress_inputs()},
                            opts=pulumi.ResourceOptions(parent=self, depends_on=[plan]))
        # waits for the plan like everything here (a provider creates nothing, but the order check
        # of tests/integration/test_hyperpod_program.py holds for every registration)
        self.native = aws_native.Provider(f"{name}-aws-native", region=region, profile=profile,
                                          opts=pulumi.ResourceOptions(parent=self, depends_on=[plan]))
        group = hpc.instance_group(req.instance_type, req.instance_count, self.node_role.arn,
                                   plan.trainingPlanArn, GPU_NODE_LABELS)
        # replaced (cluster.py's docstring: e.g. the next training plan in another zone moves the
        # subnet) only by deleting first: its name is fixed, and the plan holds one set of nodes
        self.cluster = aws_native.sagemaker.Cluster(
            f"{name}-cluster", **hpc.cluster_args(self.name, cluster.info.arn, network.gpu_subnet_id,
                                                  cluster.security_group_id, group,
                                                  {"kimi-k3:stack-name": stack_identity}),
            opts=pulumi.ResourceOptions(parent=self, provider=self.native, delete_before_replace=True,
                                        depends_on=[gone, *attachments, cluster.system_nodes]))
        self.arn = self.cluster.cluster_arn
        self._operator(name, cluster, region, aws_inputs, stack_identity, plan)
        self.lbs_gone = OperatorLoadBalancersGone(
            f"{name}-lbs-gone", {"clusterName": cluster.name, "region": region, **aws_inputs, **progress_inputs()},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.operator]))
        self.register_outputs({"clusterArn": self.arn, "clusterName": self.name})

    def _operator(self, name: str, cluster, region: str, aws_inputs, stack_identity: str, plan) -> None:
        import pulumi_aws as aws
        import pulumi_kubernetes as k8s

        from ..weights import iam as wiam

        after_plan = pulumi.ResourceOptions(parent=self, depends_on=[plan])
        issuer = cluster.info.identities[0].oidcs[0].issuer
        self.oidc = aws.iam.OpenIdConnectProvider(f"{name}-oidc", url=issuer, client_id_lists=["sts.amazonaws.com"],
                                                  opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.eks]))
        # the operator's certificates: private, encrypted, TLS only; emptied on destroy (regenerable)
        self.tls_bucket = aws.s3.Bucket(f"{name}-tls", bucket_prefix="kimi-k3-tls-", force_destroy=True,
                                        tags={"kimi-k3:stack-name": stack_identity, "kimi-k3:purpose": "operator-tls"},
                                        opts=after_plan)
        bchild = pulumi.ResourceOptions(parent=self.tls_bucket)
        private = aws.s3.BucketPublicAccessBlock(f"{name}-tls-private", bucket=self.tls_bucket.id,
                                                 block_public_acls=True, block_public_policy=True,
                                                 ignore_public_acls=True, restrict_public_buckets=True, opts=bchild)
        bucket_settings = [
            private,
            aws.s3.BucketOwnershipControls(f"{name}-tls-ownership", bucket=self.tls_bucket.id,
                                           rule={"object_ownership": "BucketOwnerEnforced"}, opts=bchild),
            aws.s3.BucketServerSideEncryptionConfiguration(
                f"{name}-tls-encryption", bucket=self.tls_bucket.id,
                rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}}], opts=bchild),
            aws.s3.BucketPolicy(f"{name}-tls-only", bucket=self.tls_bucket.id,
                                policy=self.tls_bucket.bucket.apply(lambda b: json.dumps(wiam.tls_only_bucket_policy(b))),
                                opts=pulumi.ResourceOptions(parent=self.tls_bucket, depends_on=[private]))]
        self.tls_bucket_name = self.tls_bucket.bucket

        def irsa(key: str, account: str, service: Optional[str] = None, **kw):
            trust = pulumi.Output.all(self.oidc.arn, issuer).apply(
                lambda a: op.irsa_trust(a[0], a[1], catalog.OPERATOR_NAMESPACE, account, service))
            return aws.iam.Role(f"{name}-{key}-role", assume_role_policy=trust,
                                opts=pulumi.ResourceOptions(parent=self), **kw)

        subjects = op.role_subjects()
        self.execution_role = irsa("operator", subjects["execution"], op.TRUSTED_SERVICES["execution"],
                                   name_prefix=f"{catalog.EXECUTION_ROLE_PREFIX}-")
        ex_child = pulumi.ResourceOptions(parent=self.execution_role)
        roles_ready: List[pulumi.Resource] = [
            aws.iam.RolePolicyAttachment(f"{name}-operator-access", role=self.execution_role.name,
                                         policy_arn=catalog.OPERATOR_POLICY, opts=ex_child),
            aws.iam.RolePolicy(f"{name}-operator-tls", role=self.execution_role.name,
                               policy=self.tls_bucket.bucket.apply(op.tls_bucket_policy), opts=ex_child)]
        self.alb_role = irsa("alb", subjects["alb"], op.TRUSTED_SERVICES["alb"])
        alb_policy = aws.iam.Policy(f"{name}-alb-policy", policy=op.alb_policy(),
                                    description=f"AWS Load Balancer Controller ({op.ALB_POLICY_SOURCE})",
                                    opts=pulumi.ResourceOptions(parent=self.alb_role, depends_on=[plan]))
        roles_ready.append(aws.iam.RolePolicyAttachment(f"{name}-alb-attach", role=self.alb_role.name,
                                                        policy_arn=alb_policy.arn,
                                                        opts=pulumi.ResourceOptions(parent=self.alb_role)))
        self.keda_role = irsa("keda", subjects["keda"], op.TRUSTED_SERVICES["keda"])
        addon_opts = pulumi.ResourceOptions(parent=self, depends_on=[cluster.system_nodes])
        # the operator's namespace, made before the add-on as AWS's setup page does ("Create a
        # namespace for inference operator resources", catalog.py's page, read 2026-12-02)
        self.operator_namespace = k8s.core.v1.Namespace(
            f"{name}-operator-ns", metadata={"name": catalog.OPERATOR_NAMESPACE},
            opts=pulumi.ResourceOptions(parent=self, provider=cluster.provider, depends_on=[cluster.system_nodes]))
        self.dependencies = [aws.eks.Addon(f"{name}-{dep}", cluster_name=cluster.name, **op.addon_args(dep),
                                           opts=addon_opts) for dep in catalog.DEPENDENCY_ADDONS]
        config = pulumi.Output.all(self.execution_role.arn, self.tls_bucket.bucket, self.arn, self.alb_role.arn,
                                   self.keda_role.arn).apply(lambda a: op.addon_configuration(*a))
        self.operator = aws.eks.Addon(
            f"{name}-operator", cluster_name=cluster.name, configuration_values=config,
            **op.addon_args(catalog.OPERATOR_ADDON),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*self.dependencies, *roles_ready,
                                                                 *bucket_settings, self.cluster,
                                                                 self.operator_namespace]))
