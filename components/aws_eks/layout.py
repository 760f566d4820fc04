"""From settings and the plan to the K8sLayout and Runtime the aws-eks target uses. Pure.

Kept apart from target.py so the plan command, serving.py and the tests all build the same
layout from the same inputs (what is rendered is what is applied).
"""

from __future__ import annotations

from ..inference.catalog import MODELS, NODE_SHAPES
from ..inference.launch import Runtime
from ..inference.render_k8s import K8sLayout, WeightsStaging
from ..config.shared import SharedSettings
from .config import AwsEksConfig
from .efa.render import INTERCONNECT
from .weights.render import STAGER
from .tls import tls_annotations

GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GPU_NODE_LABEL = "kimi-k3/gpu-node"
HYPERPOD_MODEL_PATH = "/opt/ml/model"
MODELS_MOUNT = "/models"


def weights_staging(shared: SharedSettings, cfg: AwsEksConfig) -> WeightsStaging:
    """The weights path (components/aws_eks/weights/): hub, your bucket, or the stack's mirror."""
    from .weights.layout import weights_staging as staging
    from .weights.plan import stream_wait_s
    from .weights.settings import WeightsConfig

    w = cfg.weights or WeightsConfig("hub", False, MODELS[shared.model].repo_id,
                                     revision=shared.revision() or "main")
    return staging(w, stream_wait_s(shared, cfg))


def model_path(shared: SharedSettings, cfg: AwsEksConfig) -> str:
    """Where vLLM finds the weights: the node's NVMe cache, S3 (streamed) or HyperPod's volume."""
    from .weights.layout import STREAM_MODEL_REF

    if cfg.serving == "hyperpod":
        return HYPERPOD_MODEL_PATH
    if shared.stream_weights:
        return STREAM_MODEL_REF
    return f"{MODELS_MOUNT}/{MODELS[shared.model].local_dir_name}"


def runtime(shared: SharedSettings, cfg: AwsEksConfig) -> Runtime:
    return Runtime(
        image=shared.image,
        port=shared.port,
        served_model_name=shared.served_model_name,
        model_path=model_path(shared, cfg),
        vision_chunks_per_prompt=shared.vision_chunks_per_prompt,
        api_key=shared.has_api_key,
        hf_token=shared.has_hf_token,
        behind_router=behind_router(shared, cfg),
    )


def behind_router(shared: SharedSettings, cfg: AwsEksConfig) -> bool:
    """Several replicas on EKS serve behind vllm-router (HyperPod's operator balances its own)."""
    return cfg.serving == "eks" and cfg.replicas > 1


def k8s_layout(shared: SharedSettings, cfg: AwsEksConfig) -> K8sLayout:
    from .efa.transport import needs_userspace

    shape = NODE_SHAPES[shared.node_shape]
    efa = shared.nodes > 1 and cfg.inter_node_transport == "efa"
    return K8sLayout(
        namespace=cfg.namespace,
        name="kimi-k3",
        replicas=cfg.replicas,
        gpus_per_node=shape.devices,
        # EFA only when the replica crosses nodes (TP8 inside one node never uses it, and a request
        # the EFA device plugin does not advertise would keep the pod Pending), and not over TCP
        efa_per_node=shape.efa_network_cards if efa else 0,
        inter_node_transport=cfg.inter_node_transport if shared.nodes > 1 else "",
        efa_install=efa and needs_userspace(shared.image),
        efa_installer_sha256=cfg.efa_installer_sha256,
        node_selector={GPU_NODE_LABEL: "true", "node.kubernetes.io/instance-type": shape.key},
        tolerations=(GPU_TAINT,),
        weights=weights_staging(shared, cfg),
        models_mount=MODELS_MOUNT,
        allowed_cidrs=shared.allowed_cidrs,
        instance_type=shape.key,
        stager=STAGER,
        interconnect=INTERCONNECT,
        service_annotations=tls_annotations(cfg.tls, shared.port),
        router=behind_router(shared, cfg),
    )
