"""`AwsEksCluster` (`kimi-k3:aws:EksCluster`): the aws-eks stack's component at the top.

Its children are the infrastructure, declared in order: the Capacity Block (adopted or bought),
the network pinned to its zone, the leftover check, EKS with its system node group, the GPU node
group on the block with its scheduled scaling, the add-ons, and the weights path's bucket and
identities. With `kimi-k3:serving=hyperpod` and `hyperpodClusterName` it only reaches the user's
HyperPod cluster (a Kubernetes provider); without the name it builds the HyperPod cluster on a
training plan, with the inference operator (components/aws_eks/hyperpod/resources.py). K3Inference is attached to it (components/program/pipeline.py); the serving
objects and the readiness gate are K3Inference's children (target.py).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pulumi

from ..inference.catalog import MODELS, NODE_SHAPES
from ..program.contract import Deployment

TYPE = "kimi-k3:aws:EksCluster"


class AwsEksCluster(pulumi.ComponentResource):
    """An EKS cluster with a GPU node group on an EC2 Capacity Block (or the user's HyperPod
    cluster), ready for the serving objects."""

    def __init__(self, name: str, deployment: Deployment, opts: Optional[pulumi.ResourceOptions] = None):
        shared, config = deployment.shared, deployment.config
        cfg = config.eks
        super().__init__(TYPE, name, {"serving": cfg.serving, "nodeShape": shared.node_shape,
                                      "region": config.region}, opts)
        #: "<organization>/<project>/<stack>": names the stack on its bucket and its purchases
        #: (for people; ownership is the StackOwner token, owner.py)
        self.stack_identity = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
        #: the stack's region/profile/credentials for kimi-k3's own AWS calls (aws_api.py)
        self.aws_inputs: Dict[str, Any] = dict(config.aws_inputs)
        self.region = config.region
        #: Prometheus, Grafana, dcgm-exporter (monitoring_resources.py); None when off or HyperPod
        self.monitoring = None
        if cfg.hyperpod_end_to_end:  # the HyperPod cluster on a training plan (hyperpod/resources.py)
            from .hyperpod.resources import build

            build(self, name, deployment)
        elif cfg.serving == "hyperpod":
            self._hyperpod(name, cfg)
        else:
            self._eks(name, deployment)

    def _hyperpod(self, name: str, cfg) -> None:
        from .cluster import existing_cluster_provider

        profile = (self.aws_inputs.get("aws") or {}).get("profile")
        self.kubeconfig, self.provider, self.existing_api = existing_cluster_provider(
            name, cfg.hyperpod_cluster_name, self.region, self, profile=profile)

    def _eks(self, name: str, deployment: Deployment) -> None:
        from . import capacity as cap
        from ..progress.program import progress_inputs
        from .cleanup import LeftoverCheck
        from .cluster import Cluster
        from .network import Network
        from .nodegroup import GpuNodes

        shared, cfg = deployment.shared, deployment.config.eks
        shape = NODE_SHAPES[shared.node_shape]
        region, aws_inputs = self.region, self.aws_inputs
        c = cfg.capacity
        if not c.adopt:
            pulumi.log.warn(c.buying_notice(), resource=self)
        from .owner import StackOwner

        # state only (no API call): the only thing made before the block decides
        owner = StackOwner(f"{name}-owner", opts=pulumi.ResourceOptions(parent=self))
        block = cap.CapacityBlock(f"{name}-capacity", {
            "region": region, "instanceType": shape.key, "instanceCount": c.instance_count,
            "reservationId": c.reservation_id, "durationHours": None if c.adopt else c.duration_hours,
            "earliestStart": c.earliest_start, "latestStart": c.latest_start,
            "maxUpfrontFeeUsd": None if c.adopt else c.max_upfront_fee_usd,
            # Local/Wavelength Zone offerings are bought only when asked for (capacity.choose_offering)
            **({"allowLocalZones": True} if c.allow_local_zones else {}),
            # purchases are tagged with the stack's own token (a record in its state, owner.py),
            # and a block tagged with it is adopted before buying again; never names, which two
            # users of the same stack name share
            "stackIdentity": None if c.adopt else owner.ownerToken,
            "stackName": None if c.adopt else self.stack_identity,
            **aws_inputs,
        }, opts=pulumi.ResourceOptions(parent=self))
        pulumi.Output.all(block.reservation_id, block.start_date, block.end_date, block.instances_stop_at).apply(
            lambda b: pulumi.log.warn(
                f"Capacity Block {b[0]}: {b[1]} to {b[2]}; AWS stops its instances at {b[3]}. The GPU "
                "node group scales up at its start and back to 0 an hour before its end; after extending "
                "the block (EC2 keeps its id) run `pulumi up --refresh` at least an hour before the old "
                "end, or the group still goes to 0 then", resource=self)
            if b[0] else None)
        # nothing else is created before the block has decided (a refused purchase, or a plain
        # listing of the offers without a fee cap, stops everything): every resource below waits
        # for it, directly or through what it waits for (tests/integration/test_aws_order.py)
        self.cluster_name = f"{name}-{shared.stack}"[:100]
        network = Network(name, cfg, block.availability_zone, self, depends_on=[block], region=region,
                          public_endpoint=bool(shared.allowed_cidrs))
        # destroy: deleted after the cluster (which depends on it) and before the VPC, its
        # subnets and NAT gateway (it depends on them): lists what is still tagged for the
        # cluster by name, before a leftover ENI could only show as a subnet's DependencyViolation
        leftovers = LeftoverCheck(f"{name}-leftovers", {
            "clusterName": self.cluster_name, "region": region, **aws_inputs, **progress_inputs()},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[block, *network.resources]))
        cluster = Cluster(name, self.cluster_name, cfg, network, self, depends_on=[block, leftovers],
                          region=region, profile=(aws_inputs.get("aws") or {}).get("profile"))
        self.gpu = GpuNodes(name, shape=shape, block=block, cluster_name=self.cluster_name,
                            role_arn=cluster.node_role.arn, subnet_id=network.gpu_subnet_id,
                            security_group_id=cluster.security_group_id, instance_count=c.instance_count,
                            root_volume_gib=cfg.root_volume_gib, parent=self, aws_inputs=aws_inputs,
                            nodes_per_replica=shared.nodes, kubernetes_version=cfg.cluster_version,
                            depends_on=[cluster.eks, *cluster.node_role_attachments])
        self.add_ons: List[pulumi.Resource] = cluster.add_ons(name, self,
                                                              multi_node=deployment.spec.nodes > 1)
        self.weights = _weights(name, deployment, cluster, region, self.stack_identity, self,
                                block.start_date, after=[block])
        if cfg.monitoring:
            from .monitoring_resources import Monitoring

            self.monitoring = Monitoring(name, cluster, cluster.provider, self,
                                         deployment.plan.platform, region, cfg.amp_workspace_id,
                                         depends_on=[cluster.system_nodes])
        self.block, self.network, self.cluster = block, network, cluster
        from ..progress.program import BILLING_BLOCK, record_billing_start

        record_billing_start(block.start_date, BILLING_BLOCK, block.end_date)  # `status`'s spend: from, to
        self.kubeconfig, self.provider = cluster.kubeconfig, cluster.provider


def _weights(name, deployment: Deployment, cluster, region, stack_identity, parent, block_start, after=()):
    """The weights path's bucket, identities and (objects rendered once) cluster objects
    (components/aws_eks/weights/)."""
    from .weights.resources import Weights

    plan, rendered = deployment.plan, deployment.rendered
    return Weights(name, deployment.config.eks.weights, rendered.layout, rendered.weights,
                   cluster=cluster, region=region, stack_identity=stack_identity,
                   checkpoint_gb=MODELS[plan.model].download_bytes / 1e9, parent=parent,
                   block_start=block_start, mirror_fill_s=plan.cold_start.mirror_fill_s, after=after)
