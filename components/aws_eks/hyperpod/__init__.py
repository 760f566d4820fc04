"""SageMaker HyperPod end to end (`kimi-k3:serving: hyperpod` without `hyperpodClusterName`):
the training plan, the HyperPod cluster on the stack's EKS cluster, the inference operator
add-on, and the proofs that destroy left nothing billable. docs/aws-eks.md, "HyperPod"."""
