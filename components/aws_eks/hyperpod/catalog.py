"""What kimi-k3 relies on about SageMaker HyperPod, as data with its upstream source. Pure.

- Instance types: botocore 1.44.8 (the pinned SDK), SageMaker model 2017-07-24, enums
  `ClusterInstanceType` (CreateCluster's instance groups) and `ReservedCapacityInstanceType`
  (SearchTrainingPlanOfferings): a HyperPod node is `ml.<EC2 type>`; an accelerator is offered on
  HyperPod only when both enums list its type (tests/unit/test_hyperpod_catalog.py reads the
  model and checks this table).
- Kubernetes versions: the HyperPod EKS prerequisites page. The English copies read on
  2026-12-01 (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html,
  and docs.amazonaws.cn/en_us) list "1.28, 1.29, 1.30, 1.31, 1.32, and 1.33"; the newest copy
  found, the Chinese one (https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md,
  machine translated from the English), lists "1.28、1.29、1.30、1.31、1.32、1.33 和 1.34". No copy
  lists 1.35 (the aws-eks default), and CreateCluster would only say so after a training plan
  was bought (it cannot be cancelled), so the end-to-end path defaults to the newest listed
  version and refuses the others before anything is created. When AWS lists a newer one, add it
  here. 1.34 leaves EKS standard support on 2026-12-02 (components/aws_eks/config.py cites the
  dates): from then a 1.34 cluster bills extended support ($0.60 per cluster-hour, not $0.10).
- The inference operator as an EKS add-on and its dependencies, as AWS's own migration script
  installs them: aws/sagemaker-hyperpod-cli at a00b22d17ea928a6e39a43bd2efdafe01b1005ea
  (2026-06-19), helm_chart/HyperPodHelmChart/charts/inference-operator/migration/helm_to_addon.sh
  (`aws eks create-addon ... --addon-version ...` for each, L905-941, L1031-1036, L1093-1097).
  EKS validates a version against DescribeAddonVersions for the cluster's Kubernetes version.
  The same versions are the minimum ones AWS's setup page requires ("Install the dependency EKS
  Add-Ons" and "Install the inference operator add-on (minimum version: v1.0.0-eksbuild.1)",
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html,
  read 2026-12-02); addon_check.py asks EKS whether it still offers each pin for the cluster's
  version before the training plan is bought or adopted. The same page creates the operator's
  namespace (`hyperpod-inference-system`) before the add-on; resources.py does too.
- The operator's service accounts (the IRSA subjects its roles trust), same script: execution
  role L434 (`hyperpod-inference-system:hyperpod-inference-controller-manager`), ALB controller
  L692 (`hyperpod-inference-system:aws-load-balancer-controller`), KEDA L726
  (`hyperpod-inference-system:keda-operator`); the execution role's name must start with
  `SageMakerHyperPodInference` when the operator runs as an add-on
  (templates/_validateRequiredValues.tpl L13-18 at the same commit).
"""

from __future__ import annotations

from typing import Dict, Tuple

#: SageMaker's source, for messages
SAGEMAKER_MODEL = "botocore 1.44.8 SageMaker model"
#: EC2 instance type -> HyperPod instance type, where both enums (see above) list it
INSTANCE_TYPES: Dict[str, str] = {
    "p6-b300.48xlarge": "ml.p6-b300.48xlarge",
    "p6-b200.48xlarge": "ml.p6-b200.48xlarge",
    "p5en.48xlarge": "ml.p5en.48xlarge",
    "p5.48xlarge": "ml.p5.48xlarge",
}
#: Kubernetes versions HyperPod documents (newest last) and the end-to-end default
K8S_VERSIONS: Tuple[str, ...] = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
DEFAULT_K8S_VERSION = K8S_VERSIONS[-1]
K8S_VERSIONS_SOURCE = "https://docs.amazonaws.cn/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md"
#: the end of EKS standard support of the default (extended support bills $0.60/h from then)
DEFAULT_STANDARD_SUPPORT_ENDS = "2026-12-02"

OPERATOR_ADDON = "amazon-sagemaker-hyperpod-inference"
#: add-on name -> version, as helm_to_addon.sh installs them (the operator's dependencies first)
ADDON_VERSIONS: Dict[str, str] = {
    "aws-mountpoint-s3-csi-driver": "v1.14.1-eksbuild.1",
    "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
    "cert-manager": "v1.18.2-eksbuild.2",
    "metrics-server": "v0.7.2-eksbuild.4",
    OPERATOR_ADDON: "v1.0.0-eksbuild.1",
}
DEPENDENCY_ADDONS: Tuple[str, ...] = ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "cert-manager",
                                      "metrics-server")
SCRIPT_SOURCE = ("aws/sagemaker-hyperpod-cli@a00b22d17ea928a6e39a43bd2efdafe01b1005ea "
                 "helm_chart/HyperPodHelmChart/charts/inference-operator/migration/helm_to_addon.sh")

OPERATOR_NAMESPACE = "hyperpod-inference-system"
EXECUTION_ROLE_PREFIX = "SageMakerHyperPodInference"
OPERATOR_SERVICE_ACCOUNT = "hyperpod-inference-controller-manager"
ALB_SERVICE_ACCOUNT = "aws-load-balancer-controller"
KEDA_SERVICE_ACCOUNT = "keda-operator"

#: the managed policies the migration script attaches: execution role (L445)
OPERATOR_POLICY = "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess"
#: HyperPod's cluster instance role policy: botocore's ClusterLifeCycleConfig.SourceS3Uri doc
#: ("The IAM role for SageMaker HyperPod has the managed AmazonSageMakerClusterInstanceRolePolicy
#: attached")
INSTANCE_ROLE_POLICY = "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"

#: the one instance group kimi-k3's HyperPod cluster has (the serving nodes)
INSTANCE_GROUP = "serving"


def hyperpod_instance_type(ec2_type: str) -> str:
    """`ml.<type>` for an EC2 type HyperPod offers; KeyError for one it does not."""
    return INSTANCE_TYPES[ec2_type]
