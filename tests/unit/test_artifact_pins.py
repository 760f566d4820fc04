"""Pinned artifacts (issue 21 item 4). kimi-k3:modelRevision: the weights, and the repository code
vLLM runs with --trust-remote-code on every node, pinned to a commit; hostile revisions are
refused before anything is created (they reach `hf download --revision`, an env value, a CRD
field); the value reaches every download; a plan that is not pinned says so. kimi-k3:image as
<known tag>@sha256:<digest>: the pods pull exactly that manifest; what ctyun-hcc cannot pin is
refused, not ignored."""

import pytest
from pulumi import RunError

from components.config.shared import parse_settings
from components.inference.errors import ConfigError
from components.offline.runner import run_program

COMMIT = "f" * 40
AWS = {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0",
       "kimi-k3:apiAccessCidrs": "203.0.113.10/32"}
HP = {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp-eks"}


@pytest.mark.parametrize("value", [
    "main; touch /tmp/kk3-canary", "-rf", "--local-dir=/etc", "../main", "a..b", "main/",
    "refs//pr/1", "main.lock", "$(id)", "`id`", "main\nx", "ma in", "x" * 129,
    "main\\", "'main'",
])
def test_hostile_revisions_are_refused_naming_the_key(value):
    with pytest.raises(ConfigError) as e:
        parse_settings({"target": "aws-eks", "modelRevision": value}, "s")
    assert str(e.value).startswith("kimi-k3:modelRevision=") and "is not a revision" in str(e.value)


@pytest.mark.parametrize("value", [COMMIT, "main", "v1.0", "refs/pr/3", "release_2026-09"])
def test_commits_branches_and_tags_pass(value):
    assert parse_settings({"target": "aws-eks", "modelRevision": value}, "s").revision() == value


def _env(run, container):
    spec = next(r for r in run.of_type("kubernetes:apps/v1:Deployment"))["inputs"]["spec"]
    c = next(c for c in spec["template"]["spec"]["initContainers"] if c["name"] == container)
    return {e["name"]: e.get("value") for e in c["env"]}


def _job_env(run):
    job = next(r for r in run.of_type("kubernetes:batch/v1:Job"))["inputs"]
    return {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_a_commit_reaches_the_mirror_and_the_hub_staging_and_is_not_warned():
    run = run_program("aws-eks", {**AWS, "kimi-k3:modelRevision": COMMIT})
    assert _job_env(run)["KK3_REVISION"] == COMMIT
    assert _env(run, "stage-weights-hub")["KK3_REVISION"] == COMMIT
    assert not [w for w in run.warnings if "modelRevision" in w]
    hub = run_program("aws-eks", {**AWS, "kimi-k3:weightsSource": "hub",
                                  "kimi-k3:modelRevision": "v1.0"})
    assert _env(hub, "stage-weights")["KK3_REVISION"] == "v1.0"
    assert any(w.startswith("kimi-k3:modelRevision=v1.0 is a name, not a commit") for w in hub.warnings)


def test_an_unpinned_default_is_warned_about():
    run = run_program("aws-eks", AWS)
    assert _job_env(run)["KK3_REVISION"] == "main"   # the hub's default branch, as before
    (line,) = [w for w in run.warnings if "modelRevision" in w]
    assert line.startswith("kimi-k3:modelRevision is not set and kimi-k3 pins no commit of "
                           "moonshotai/Kimi-K3") and "--trust-remote-code" in line


def test_hyperpod_takes_a_commit_only():
    iec = next(r for r in run_program("aws-eks", {**HP, "kimi-k3:modelRevision": COMMIT})
               .of_type("kubernetes:inference.sagemaker.aws.amazon.com/v1:InferenceEndpointConfig"))
    assert iec["inputs"]["spec"]["modelSourceConfig"]["huggingFaceModel"]["commitSHA"] == COMMIT
    with pytest.raises(RunError, match="kimi-k3:modelRevision='v1.0' is not a commit"):
        run_program("aws-eks", {**HP, "kimi-k3:modelRevision": "v1.0"})


def test_your_own_bucket_has_nothing_to_pin():
    with pytest.raises(RunError, match="kimi-k3:modelRevision=.* has nothing to pin"):
        run_program("aws-eks", {**AWS, "kimi-k3:weightsS3Uri": "s3://my-bucket/k3",
                                "kimi-k3:modelRevision": COMMIT})
    run = run_program("aws-eks", {**AWS, "kimi-k3:weightsS3Uri": "s3://my-bucket/k3"})
    assert any(w.startswith("kimi-k3:weightsSource=s3 serves your bucket as it is") for w in run.warnings)


DIGEST = "sha256:" + "0123456789abcdef" * 4
CUDA = "vllm/vllm-openai:kimi-k3"


@pytest.mark.parametrize("image,words", [
    (f"{CUDA}@sha256:abc", "is not an image digest"),
    (f"{CUDA}@sha512:" + "0" * 128, "is not an image digest"),
    (f"{CUDA}@" + DIGEST.upper(), "is not an image digest"),
    (f"{CUDA}@{DIGEST};id", "is not an image digest"),
    (f"evil.example/vllm:kimi-k3@{DIGEST}", "is not a known serving image"),
    (f"{CUDA}@{DIGEST}@{DIGEST}", "is not an image digest"),
])
def test_hostile_image_pins_are_refused(image, words):
    with pytest.raises(ConfigError) as e:
        parse_settings({"target": "aws-eks", "image": image}, "s")
    assert str(e.value).startswith("kimi-k3:image=") and words in str(e.value)


def test_an_image_digest_is_what_the_pods_pull():
    run = run_program("aws-eks", {**AWS, "kimi-k3:image": f"{CUDA}@{DIGEST}"})
    spec = next(r for r in run.of_type("kubernetes:apps/v1:Deployment"))["inputs"]["spec"]
    assert spec["template"]["spec"]["containers"][0]["image"] == f"{CUDA}@{DIGEST}"


def test_ctyun_refuses_what_it_cannot_pin_and_warns_about_cthpc():
    with pytest.raises(RunError, match="kimi-k3:image=.* pins nothing on ctyun-hcc"):
        run_program("ctyun-hcc", {"kimi-k3:image": f"quay.io/ascend/vllm-ascend:kimi-k3-a3@{DIGEST}"})
    with pytest.raises(RunError, match="kimi-k3:modelRevision=.* cannot be pinned with "
                                       "kimi-k3:modelSource=cthpc"):
        run_program("ctyun-hcc", {"kimi-k3:modelRevision": COMMIT})
    run = run_program("ctyun-hcc")
    assert any(w.startswith("kimi-k3:modelSource=cthpc installs CTyun's copy") for w in run.warnings)


def test_a_sif_url_of_yours_needs_its_sha256():
    """The SIF runs as root on every node: a URL the user gives comes with the digest they read
    where they got it (https only and the check before first use: tests/unit/test_ctyun_day2.py)."""
    url = {"kimi-k3:sifSource": "url", "kimi-k3:sifUrl": "https://mirror.example/k3.sif"}
    with pytest.raises(RunError, match=r"^kimi-k3:sifSha256 \(not set\) is needed with kimi-k3:sifUrl"):
        run_program("ctyun-hcc", url)
    run = run_program("ctyun-hcc", {**url, "kimi-k3:sifSha256": "ab" * 32})
    sif = next(r for r in run.resources if r["name"] == "kimi-k3-sif")["inputs"]
    assert (sif["url"], sif["sha256"]) == ("https://mirror.example/k3.sif", "ab" * 32)
