"""The weights path of the aws-eks stack under Pulumi's mock engine (the real __main__.py).

Bucket (private, encrypted, TLS-only, lifecycle), EKS Pod Identity roles and their scoped
permissions, service accounts, the mirror Job, init containers and the compile-cache sidecar,
nothing on the node role, IMDS hop limit 1; then the other sources (hub, your bucket, streaming).
"""

import json

import pytest

from components.aws_eks.weights import notice
from components.offline.runner import run_program

CR = "cr-0123456789abcdef0"
BASE = {"kimi-k3:capacityReservationId": CR, "kimi-k3:apiAccessCidrs": "203.0.113.10/32"}
BUCKET = "kimi-k3-weights-mock0001"


@pytest.fixture(scope="module")
def mirror():
    return run_program("aws-eks", {**BASE, "kimi-k3:hfToken": "hf_do_not_leak_2"})


def only(run, type_token, name=None):
    found = [r for r in run.of_type(type_token) if name is None or r["name"] == name]
    assert len(found) == 1, (type_token, name, [r["name"] for r in run.of_type(type_token)])
    return found[0]["inputs"]


def policies(run):
    return {r["name"]: json.loads(r["inputs"]["policy"]) for r in run.of_type("aws:iam/rolePolicy:RolePolicy")}


def actions(doc, resource_suffix=None):
    out = set()
    for st in doc["Statement"]:
        res = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        if resource_suffix is None or any(r.endswith(resource_suffix) for r in res):
            out |= set(st["Action"])
    return out


def pod(run):
    d = only(run, "kubernetes:apps/v1:Deployment")
    return d["spec"]["template"]["spec"]


def test_mirror_is_the_default_and_the_plan_says_so(mirror):
    p = mirror.inference.plan
    assert p.cold_start.weights_source == "mirror"
    assert any("the aws-eks default" in n for n in p.notes)
    assert "hub path" in p.explain() and "first token" in p.explain()


def test_bucket_is_private_encrypted_tls_only_and_cleans_up(mirror):
    b = only(mirror, "aws:s3/bucket:Bucket")
    assert b["bucketPrefix"] == "kimi-k3-weights-" and b["forceDestroy"] is True
    assert b["tags"]["kimi-k3:purpose"] == "weights-mirror"
    pab = only(mirror, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert all(pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                         "restrictPublicBuckets"))
    enc = only(mirror, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert enc["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "AES256"
    assert only(mirror, "aws:s3/bucketOwnershipControls:BucketOwnershipControls")["rule"] == {
        "objectOwnership": "BucketOwnerEnforced"}
    pol = json.loads(only(mirror, "aws:s3/bucketPolicy:BucketPolicy")["policy"])
    (st,) = pol["Statement"]
    assert st["Effect"] == "Deny" and st["Principal"] == "*" and st["Action"] == "s3:*"
    assert st["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert st["Resource"] == [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]
    life = only(mirror, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
    assert life["rules"][0]["abortIncompleteMultipartUpload"] == {"daysAfterInitiation": 1}
    assert only(mirror, "pulumi-python:dynamic/aws:WeightsMirrorNotice")["keep"] is False


def test_pod_identity_roles_are_scoped(mirror):
    agent = only(mirror, "aws:eks/addon:Addon")
    assert agent["addonName"] == "eks-pod-identity-agent"
    assert json.loads(agent["configurationValues"]) == {"tolerations": [{"operator": "Exists"}]}
    roles = [r["inputs"] for r in mirror.of_type("aws:iam/role:Role")]
    pod_roles = [json.loads(r["assumeRolePolicy"]) for r in roles
                 if "pods.eks.amazonaws.com" in r["assumeRolePolicy"]]
    assert len(pod_roles) == 2
    assert all(d["Statement"][0]["Action"] == ["sts:AssumeRole", "sts:TagSession"] for d in pod_roles)
    pol = policies(mirror)
    serving, job = pol["kimi-k3-serving-s3"], pol["kimi-k3-mirror-s3"]
    models = f"{BUCKET}/models/moonshotai/Kimi-K3/*"
    assert actions(serving, models) == {"s3:GetObject"}  # read-only on the weights
    assert actions(serving, f"{BUCKET}/compile-cache/*") == {"s3:GetObject", "s3:PutObject"}
    put = next(s for s in serving["Statement"] if s["Action"] == ["s3:PutObject"])
    assert put["Condition"] == {"Null": {"s3:if-none-match": "false"}}  # create, never replace
    assert "s3:DeleteObject" not in actions(serving)
    assert actions(job, models) == {"s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                                    "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
    for doc in (serving, job):
        listing = next(s for s in doc["Statement"] if s["Action"] == ["s3:ListBucket"])
        assert all(p.startswith(("models/moonshotai/Kimi-K3", "compile-cache"))
                   for p in listing["Condition"]["StringLike"]["s3:prefix"])
        assert not any(r.endswith(":::*") or r == "*" for s in doc["Statement"] for r in s["Resource"])
    assocs = {a["inputs"]["serviceAccount"]: a["inputs"] for a in
              mirror.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")}
    assert set(assocs) == {"kimi-k3-serving", "kimi-k3-mirror"}
    assert all(a["namespace"] == "kimi-k3" for a in assocs.values())


def test_nothing_on_the_node_role_and_imds_hop_limit_1(mirror):
    assert set(policies(mirror)) == {"kimi-k3-serving-s3", "kimi-k3-mirror-s3"}
    lt = only(mirror, "aws:ec2/launchTemplate:LaunchTemplate")
    assert lt["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert lt["metadataOptions"]["httpTokens"] == "required"


def test_service_accounts_and_the_mirror_job(mirror):
    sas = {r["inputs"]["metadata"]["name"]: r["inputs"] for r in mirror.of_type("kubernetes:core/v1:ServiceAccount")}
    assert set(sas) == {"kimi-k3-serving", "kimi-k3-mirror"}
    assert all(sa["automountServiceAccountToken"] is False for sa in sas.values())
    job = only(mirror, "kubernetes:batch/v1:Job")
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "kimi-k3-mirror"
    assert spec["nodeSelector"] == {"kimi-k3/system-node": "true"}
    (c,) = spec["containers"]
    assert c["command"][:2] == ["sh", "-c"] and "--require-hashes" in c["command"][2]
    assert "s3://" not in c["command"][2] and "Kimi-K3" not in c["command"][2]  # values are env only
    env = {e["name"]: e for e in c["env"]}
    assert env["KK3_S3_URI"]["valueFrom"]["configMapKeyRef"] == {"name": "kimi-k3-weights-source", "key": "s3Uri"}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "HF_TOKEN"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    src = [r["inputs"] for r in mirror.of_type("kubernetes:core/v1:ConfigMap")
           if r["inputs"]["metadata"]["name"] == "kimi-k3-weights-source"][0]
    assert src["data"] == {"s3Uri": f"s3://{BUCKET}/models/moonshotai/Kimi-K3",
                           "cacheUri": f"s3://{BUCKET}/compile-cache", "region": "us-east-2"}
    scripts = [r["inputs"] for r in mirror.of_type("kubernetes:core/v1:ConfigMap")
               if r["inputs"]["metadata"]["name"] == "kimi-k3-weights-scripts"][0]
    assert {"mirror.py", "s3uri.py", "stage.sh", "stage_hub.sh", "compile_cache.sh",
            "mirror-requirements.txt"} <= set(scripts["data"])
    assert "hf_do_not_leak_2" not in json.dumps([r["inputs"] for r in mirror.resources])


def test_gpu_pods_stage_from_the_mirror_and_keep_the_compile_cache(mirror):
    spec = pod(mirror)
    assert spec["serviceAccountName"] == "kimi-k3-serving"
    init = {c["name"]: c for c in spec["initContainers"]}
    assert list(init) == ["stage-weights", "stage-weights-hub", "restore-compile-cache", "save-compile-cache"]
    stage = init["stage-weights"]
    assert stage["image"].startswith("public.ecr.aws/aws-cli/aws-cli:")
    assert stage["command"] == ["bash", "/kk3/stage.sh"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in stage["env"]}
    assert env["KK3_ON_INCOMPLETE"] == "fallback" and env["KK3_REQUIRE_MARKER"] == "1"
    assert env["KK3_S3_CLIENT"] == "crt" and env["AWS_REGION"]["configMapKeyRef"]["key"] == "region"
    assert init["stage-weights-hub"]["command"] == ["bash", "/kk3/stage_hub.sh"]
    assert init["save-compile-cache"]["restartPolicy"] == "Always"
    assert "restartPolicy" not in init["restore-compile-cache"]
    key = {e["name"]: e.get("value") for e in init["restore-compile-cache"]["env"]}["KK3_CACHE_KEY"]
    assert key == {e["name"]: e.get("value") for e in init["save-compile-cache"]["env"]}["KK3_CACHE_KEY"]
    vllm = spec["containers"][0]
    venv = {e["name"]: e.get("value") for e in vllm["env"]}
    assert venv["VLLM_CACHE_ROOT"] == "/kk3-cache"
    assert {"name": "compile-cache", "mountPath": "/kk3-cache"} in vllm["volumeMounts"]
    for c in spec["initContainers"]:
        assert c["command"][0] == "bash" and len(c["command"]) <= 3  # a script file, no shell text


def test_keep_weights_mirror_retains_the_bucket_and_says_what_it_costs():
    run = run_program("aws-eks", {**BASE, "kimi-k3:keepWeightsMirror": "true"})
    assert only(run, "aws:s3/bucket:Bucket")["forceDestroy"] is False
    n = only(run, "pulumi-python:dynamic/aws:WeightsMirrorNotice")
    assert n["keep"] is True and n["gb"] == pytest.approx(1561)
    msg = notice.destroy_message(BUCKET, True, n["gb"])
    assert "keeping the weights mirror" in msg and "$35.90/month" in msg
    assert "deleting" in notice.destroy_message(BUCKET, False, n["gb"])


def test_hub_source_has_no_bucket_no_identity():
    run = run_program("aws-eks", {**BASE, "kimi-k3:weightsSource": "hub"})
    assert not run.of_type("aws:s3/bucket:Bucket") and not run.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert not run.of_type("kubernetes:batch/v1:Job") and not run.of_type("aws:iam/rolePolicy:RolePolicy")
    spec = pod(run)
    assert "serviceAccountName" not in spec
    assert [c["name"] for c in spec["initContainers"]] == ["stage-weights"]
    assert spec["initContainers"][0]["command"] == ["bash", "/kk3/stage_hub.sh"]
    assert run.inference.plan.cold_start.stage_s == 3122


def test_your_own_bucket_is_read_only_and_never_holds_our_cache():
    run = run_program("aws-eks", {**BASE, "kimi-k3:weightsSource": "s3",
                                  "kimi-k3:weightsS3Uri": "s3://my-weights/k3/mxfp4"})
    assert not run.of_type("aws:s3/bucket:Bucket") and not run.of_type("kubernetes:batch/v1:Job")
    (doc,) = policies(run).values()
    assert actions(doc) == {"s3:ListBucket", "s3:GetObject"}
    assert actions(doc, "my-weights/k3/mxfp4/*") == {"s3:GetObject"}
    env = {e["name"]: e.get("value") for e in pod(run)["initContainers"][0]["env"]}
    assert env["KK3_REQUIRE_MARKER"] == "0" and env["KK3_ON_INCOMPLETE"] == "fail"
    assert [c["name"] for c in pod(run)["initContainers"]] == ["stage-weights"]


@pytest.mark.parametrize("uri", ["s3://my-weights", "s3://my-weights/"])
def test_your_bucket_root_is_granted_as_the_whole_bucket(uri):
    """`s3://bucket` and `s3://bucket/` read the whole bucket: objects `bucket/*` (never
    `bucket//*`), and listing without an s3:prefix condition (a root listing sends none)."""
    run = run_program("aws-eks", {**BASE, "kimi-k3:weightsSource": "s3", "kimi-k3:weightsS3Uri": uri})
    (doc,) = policies(run).values()
    resources = [r for st in doc["Statement"] for r in st["Resource"]]
    assert sorted(resources) == ["arn:aws:s3:::my-weights", "arn:aws:s3:::my-weights/*"]
    assert all("Condition" not in st for st in doc["Statement"])
    (src,) = [r["inputs"] for r in run.of_type("kubernetes:core/v1:ConfigMap")
              if r["inputs"]["metadata"]["name"].endswith("weights-source")]
    assert src["data"]["s3Uri"] == "s3://my-weights"


def test_an_empty_segment_in_your_bucket_uri_is_refused():
    from components.inference.errors import KimiK3Error
    import pulumi

    with pytest.raises((KimiK3Error, pulumi.RunError), match="kimi-k3:weightsS3Uri"):
        run_program("aws-eks", {**BASE, "kimi-k3:weightsSource": "s3", "kimi-k3:weightsS3Uri": "s3://my-weights//"})


def test_streaming_reads_the_mirror_directly():
    run = run_program("aws-eks", {**BASE, "kimi-k3:streamWeights": "true"})
    spec = pod(run)
    vllm = spec["containers"][0]
    assert vllm["command"][:3] == ["vllm", "serve", "$(KK3_MODEL_URI)"]
    assert "--load-format" in vllm["command"] and "runai_streamer" in vllm["command"]
    env = {e["name"]: e for e in vllm["env"]}
    assert env["KK3_MODEL_URI"]["valueFrom"]["configMapKeyRef"]["key"] == "s3Uri"
    names = [c["name"] for c in spec["initContainers"]]
    assert names[0] == "wait-for-mirror" and "stage-weights" not in names
    assert "models" not in [v["name"] for v in spec["volumes"]]
    assert run.inference.plan.cold_start.loading == "stream-s3"


@pytest.mark.parametrize("extra,key", [
    ({"kimi-k3:weightsS3Uri": "s3://bucket/$(touch x)", "kimi-k3:weightsSource": "s3"}, "kimi-k3:weightsS3Uri"),
    ({"kimi-k3:weightsS3Uri": "s3://bucket/a;rm -rf /", "kimi-k3:weightsSource": "s3"}, "kimi-k3:weightsS3Uri"),
    ({"kimi-k3:weightsS3Uri": "s3://bucket/k3", "kimi-k3:weightsSource": "mirror"}, "kimi-k3:weightsS3Uri"),
    ({"kimi-k3:weightsSource": "s3"}, "kimi-k3:weightsS3Uri"),
    ({"kimi-k3:weightsSource": "modelscope"}, "kimi-k3:weightsSource"),
    ({"kimi-k3:weightsSource": "hub", "kimi-k3:streamWeights": "true"}, "kimi-k3:streamWeights"),
    ({"kimi-k3:weightsSource": "hub", "kimi-k3:keepWeightsMirror": "true"}, "kimi-k3:keepWeightsMirror"),
    ({"kimi-k3:keepWeightsMirror": "maybe"}, "kimi-k3:keepWeightsMirror"),
])
def test_bad_weights_settings_stop_before_anything_is_created(extra, key):
    from components.inference.errors import ConfigError
    from components.config.shared import parse_settings
    from components.aws_eks import config

    raw = {"target": "aws-eks", **{k.split(":", 1)[1]: v for k, v in {**BASE, **extra}.items()}}
    with pytest.raises(ConfigError) as e:
        config.parse(parse_settings(raw, "aws-eks"))
    assert e.value.key == key and "\n" not in str(e.value)


def test_a_block_that_starts_before_the_mirror_is_full_is_announced():
    from datetime import datetime, timezone

    from components.aws_eks.weights.resources import late_mirror_warning

    now = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    msg = late_mirror_warning("2026-12-01T11:30:00Z", 10000, now)
    assert "starts in 150 min" in msg and "stages each node from the hub" in msg
    assert late_mirror_warning("2026-12-02T11:30:00Z", 8000, now) is None
    assert late_mirror_warning(None, 8000, now) is None
