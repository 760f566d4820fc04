"""Weights off the GPU clock on aws-eks: the S3 mirror, staging onto the node NVMe, compile cache.

`s3uri` is the one grammar for S3 URIs; `mirror.py` (hub -> S3) and `stage.sh` / `stage_hub.sh`
(S3 or hub -> node NVMe) are the programs that run in the cluster, shipped verbatim in a ConfigMap
(`scripts.py` reads them); values reach them only as environment variables, never as shell text.
"""
