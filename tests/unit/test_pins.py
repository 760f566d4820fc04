"""Every artifact a deployment fetches is recorded as pinned or unpinned in plan.json `pins`, and
each unpinned one is warned about with the one-liner that pins it (issue 21, "Pinned artifacts";
issue 20: the EFA installer). kimi-k3 ships no digest, commit or checksum it could not confirm at
the artifact's source, so the defaults are `unpinned` (components/config/pins.py)."""

import pytest

from components.aws_eks import config as aws_config
from components.aws_eks.efa import transport
from components.config import pins
from components.config.shared import parse_settings
from components.inference.errors import ConfigError
from components.offline.runner import run_program

SHA = "ab" * 32
DIGEST = "sha256:" + "cd" * 32
COMMIT = "f" * 40
AWS2 = {"kimi-k3:capacityReservationId": "cr-0123456789abcdef0",
        "kimi-k3:apiAccessCidrs": "203.0.113.10/32", "kimi-k3:nodes": "2"}


def test_a_tag_is_unpinned_and_warned_with_the_command_that_pins_it():
    p = pins.image_pin("vllm/vllm-openai:kimi-k3")
    assert p.state == pins.UNPINNED and p.key == "kimi-k3:image"
    assert "is a tag, not a digest" in p.warning and "crane digest vllm/vllm-openai:kimi-k3" in p.warning
    pinned = pins.image_pin(f"vllm/vllm-openai:kimi-k3@{DIGEST}")
    assert pinned.state == pins.PINNED and pins.warnings([pinned]) == []


def test_helper_images_get_one_line_for_all_tags():
    got = pins.helper_image_pins(["a/b:1", "c/d:2", f"e/f:3@{DIGEST}", "srv:1"], "srv:1")
    assert [(p.source, p.state) for p in got] == [("a/b:1", "unpinned"), ("c/d:2", "unpinned"),
                                                  (f"e/f:3@{DIGEST}", "pinned")]
    assert pins.warnings(got) == ["helper images run by tag, not digest (kimi-k3 could not confirm "
                                  "their digests): a/b:1, c/d:2"]


def test_the_efa_installer_is_unverified_until_its_sha256_is_set():
    p = transport.installer_pin("")
    assert p.state == pins.UNPINNED and "without checking a checksum" in p.warning
    assert "kimi-k3:efaInstallerSha256 $(curl -sSfL https://efa-installer.amazonaws.com/aws-efa-installer-" in p.how
    assert transport.installer_pin(SHA).state == pins.PINNED
    assert transport.installer_env(sha256=SHA)["KK3_EFA_INSTALLER_SHA256"] == SHA
    assert "KK3_EFA_INSTALLER_SHA256" not in transport.installer_env()


def test_the_model_pin_reads_the_commit_from_the_hub_api():
    p = pins.model_pin("moonshotai/Kimi-K3", "")
    assert p.state == pins.UNPINNED and p.warning == ""  # config/shared.revision_warning says it
    assert "https://huggingface.co/api/models/moonshotai/Kimi-K3/revision/main" in p.how
    assert pins.model_pin("moonshotai/Kimi-K3", COMMIT).state == pins.PINNED


def _userspace_env(run):
    lws = next(r for r in run.of_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"))["inputs"]
    pod = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    c = next(c for c in pod["initContainers"] if c["name"] == "efa-userspace")
    return {e["name"]: e.get("value") for e in c["env"]}


def test_a_two_node_default_plan_records_and_warns_every_unpinned_artifact():
    run = run_program("aws-eks", AWS2)
    recorded = {p.artifact: p.state for p in run.deployment.pins}
    assert recorded == {"the model repository (weights and --trust-remote-code code)": "unpinned",
                        "the serving image": "unpinned", "a helper image": "unpinned",
                        "AWS's EFA installer 1.51.0": "unpinned",
                        **{f"the Helm chart {c}": "unpinned" for c in (
                            "nvidia-device-plugin", "aws-efa-k8s-device-plugin", "lws",
                            "kube-prometheus-stack", "dcgm-exporter")}}
    text = "\n".join(run.warnings)
    assert "kimi-k3:image=vllm/vllm-openai:kimi-k3 is a tag, not a digest" in text
    assert "helper images run by tag" in text and "public.ecr.aws/aws-cli/aws-cli:" in text
    assert "EFA installer 1.51.0" in text and "without checking a checksum" in text
    assert "KK3_EFA_INSTALLER_SHA256" not in _userspace_env(run)


def test_everything_pinned_is_said_once_and_the_installer_is_checked():
    run = run_program("aws-eks", {**AWS2, "kimi-k3:efaInstallerSha256": SHA,
                                  "kimi-k3:modelRevision": COMMIT,
                                  "kimi-k3:image": f"vllm/vllm-openai:kimi-k3@{DIGEST}"})
    states = {p.artifact: p.state for p in run.deployment.pins
              if not p.artifact.startswith("the Helm chart")}  # a version, never a digest here
    assert states.pop("a helper image") == "unpinned"  # kimi-k3's own tags: a code change pins them
    assert set(states.values()) == {"pinned"}
    assert not [w for w in run.warnings if "not a digest" in w or "EFA installer" in w or "modelRevision" in w]
    assert _userspace_env(run)["KK3_EFA_INSTALLER_SHA256"] == SHA


@pytest.mark.parametrize("raw,line", [
    ({"nodes": "2", "efaInstallerSha256": "ABC"},
     "kimi-k3:efaInstallerSha256='ABC' is not a SHA-256 digest"),
    ({"nodes": "2", "efaInstallerSha256": SHA + "\n"},
     "kimi-k3:efaInstallerSha256="),
    ({"nodes": "2", "efaInstallerSha256": "$(id)"},
     "kimi-k3:efaInstallerSha256='$(id)' is not a SHA-256 digest"),
    ({"efaInstallerSha256": SHA},
     f"kimi-k3:efaInstallerSha256='{SHA}' only applies where the serving pods unpack"),
    ({"nodes": "2", "interNodeTransport": "tcp", "efaInstallerSha256": SHA},
     f"kimi-k3:efaInstallerSha256='{SHA}' only applies where the serving pods unpack"),
    ({"serving": "hyperpod", "hyperpodClusterName": "hp", "efaInstallerSha256": SHA},
     f"kimi-k3:efaInstallerSha256='{SHA}' does not apply to kimi-k3:serving=hyperpod"),
    ({"serving": "hyperpod", "efaInstallerSha256": SHA,
      "trainingPlanArn": "arn:aws:sagemaker:us-east-2:123456789012:training-plan/x"},
     f"kimi-k3:efaInstallerSha256='{SHA}' does not apply to the HyperPod cluster this stack builds"),
])
def test_efa_installer_sha256_refusals_name_the_key(raw, line):
    shared = parse_settings({"target": "aws-eks", **raw}, "s")
    if raw.get("efaInstallerSha256", "").endswith("\n"):  # surrounding whitespace is dropped: accepted
        assert aws_config.parse(shared).efa_installer_sha256 == SHA
        return
    with pytest.raises(ConfigError) as e:
        aws_config.parse(shared)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_ctyun_records_the_sif_and_warns_until_its_sha256_is_set():
    run = run_program("ctyun-hcc")
    sif = next(p for p in run.deployment.pins if p.key == "kimi-k3:sifSha256")
    assert sif.state == "unpinned" and any("runs as root on every node and is not checked" in w
                                           for w in run.warnings)
    pinned = run_program("ctyun-hcc", {"kimi-k3:sifSha256": SHA})
    assert next(p for p in pinned.deployment.pins if p.key == "kimi-k3:sifSha256").state == "pinned"
    assert not any("Apptainer image" in w for w in pinned.warnings)


# ---- nothing the deployment fetches is missing from `pins` -----------------------------------------

def _fetched_images(run):
    return {i for r in run.resources if r["type"].startswith("kubernetes:")
            for i in pins.images_in(r.get("inputs") or {})}


@pytest.mark.parametrize("raw", [AWS2, {**AWS2, "kimi-k3:replicas": "2"},
                                 {**AWS2, "kimi-k3:monitoring": "false", "kimi-k3:nodes": "1"}])
def test_every_image_chart_and_package_the_aws_stack_fetches_is_in_pins(raw):
    run = run_program("aws-eks", raw)
    recorded = run.deployment.pins
    sources = {p.source for p in recorded}
    assert _fetched_images(run) <= sources
    releases = [r["inputs"] for r in run.of_type("kubernetes:helm.sh/v3:Release")]
    assert releases
    charts = {(p.artifact, p.source.split(" from ")[0]) for p in recorded if "Helm chart" in p.artifact}
    assert {(f"the Helm chart {r['chart'].rsplit('/', 1)[-1]}", f"{r['chart'].rsplit('/', 1)[-1]} {r['version']}")
            for r in releases} == charts
    router = [p for p in recorded if p.artifact.startswith("the router")]
    if raw.get("kimi-k3:replicas") == "2":
        # pinned: the version and every wheel's sha256, installed with --require-hashes
        assert [p.state for p in router] == ["pinned"]
        assert router[0].source.startswith("vllm-router==0.1.17 and 28 dependencies from PyPI")
        init = next(c for r in run.of_type("kubernetes:apps/v1:Deployment")
                    for c in r["inputs"]["spec"]["template"]["spec"].get("initContainers", [])
                    if c["name"] == "install-router")
        assert "--require-hashes" in init["command"]
    else:
        assert router == []


def test_every_program_the_ctyun_stack_runs_is_in_pins():
    run = run_program("ctyun-hcc", {"kimi-k3:replicas": "2", "kimi-k3:modelSource": "modelscope"})
    by = {p.artifact: p for p in run.deployment.pins}
    router = by["the router (PyPI vllm-router and the packages it pulls in)"]
    assert router.state == "pinned"
    # both closures the master may install, by its python3's version (components/router/host.py)
    assert router.source.startswith("vllm-router==0.1.17 and 28 dependencies from PyPI, 137 wheels "
                                    "by sha256; on a python3 3.8 to below 3.11 the same release and "
                                    "29 older dependencies, 141 wheels by sha256")
    for name in ("prometheus", "node-exporter", "npu-exporter"):
        p = by[f"{name} (found on the node; kimi-k3 installs none)"]
        assert p.state == "unpinned" and p.source.startswith("/usr/")
    assert "modelscope==" in by["the ModelScope CLI (pip, only when the master has no `modelscope`)"].source
    one = run_program("ctyun-hcc", {"kimi-k3:monitoring": "false"})
    bare = {p.artifact for p in one.deployment.pins}
    assert not any("router" in a or "found on the node" in a or "ModelScope" in a for a in bare)
    # the router's python is checked by the cluster check, before any job runs (cluster_check.py)
    check = [r["inputs"] for r in run.of_type("pulumi-python:dynamic/ctyun:ClusterCheck")]
    assert [c.get("routerPython") for c in check] == ["/usr/bin/python3"]
    # kimi-k3:routerPython names another interpreter: the check asks it, the router runs with it
    other = run_program("ctyun-hcc", {"kimi-k3:replicas": "2",
                                      "kimi-k3:routerPython": "/opt/python3.11/bin/python3"})
    assert [r["inputs"].get("routerPython") for r in
            other.of_type("pulumi-python:dynamic/ctyun:ClusterCheck")] == ["/opt/python3.11/bin/python3"]
    assert [r["inputs"]["python"] for r in other.of_type("pulumi-python:dynamic/ctyun:RouterService")] \
        == ["/opt/python3.11/bin/python3"]
    check = [r["inputs"] for r in one.of_type("pulumi-python:dynamic/ctyun:ClusterCheck")]
    assert [c.get("routerPython") for c in check] == [None]


def test_a_chart_pin_says_how_to_check_its_digest():
    p, = pins.chart_pins([("lws", "0.7.0", "oci://registry.k8s.io/lws/charts")])
    assert p.state == "unpinned" and "helm pull oci://registry.k8s.io/lws/charts/lws --version 0.7.0" in p.how
    q, = pins.chart_pins([("dcgm-exporter", "4.8.2", "https://nvidia.github.io/dcgm-exporter/helm-charts")])
    assert "https://nvidia.github.io/dcgm-exporter/helm-charts/index.yaml" in q.how and q.warning == ""
