"""What a deployment fetches from outside and whether each is pinned (issue 21, "Pinned
artifacts"): plan.json `pins`, and one warning per unpinned artifact at plan and preview.

Pure. A pin is what makes a second download the same bytes: a commit for a model repository, a
manifest digest for an image, a sha256 for a tarball or a SIF. kimi-k3 ships no pin it could not
confirm at the artifact's source, so several defaults are recorded as `unpinned`; each record
says how to pin it (`how`), and the warning says what is at stake.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Iterable, List, Tuple

from .values import IMAGE_DIGEST, MODEL_COMMIT

PINNED, UNPINNED = "pinned", "unpinned"


@dataclass(frozen=True)
class Pin:
    artifact: str  # what it is, in words ("the serving image")
    source: str  # what is fetched: repo@revision, image reference, URL
    state: str  # PINNED | UNPINNED
    key: str  # the config key that pins it ("" when only a code change can)
    how: str  # the one-liner that pins it
    warning: str = ""  # the plan/preview line when unpinned ("" when said elsewhere)

    def to_dict(self) -> Dict[str, str]:
        return asdict(self)


def model_pin(repo_id: str, revision: str, unpinned_reason: str = "") -> Pin:
    """The model repository (weights and the --trust-remote-code Python). Its warning is
    config/shared.py `revision_warning`, so none here. `how` reads the commit a branch points at
    from the Hub's model API, the call huggingface_hub's `HfApi.model_info` makes (GET
    /api/models/{repo_id}/revision/{revision}, JSON field `sha`: huggingface_hub 2.4.0
    hf_api.py); review that commit's code before pinning it."""
    if unpinned_reason:
        return Pin("the model repository (weights and --trust-remote-code code)", unpinned_reason,
                   UNPINNED, "", "not pinnable with this source", "")
    pinned = bool(MODEL_COMMIT.fullmatch(revision))
    return Pin("the model repository (weights and --trust-remote-code code)",
               f"{repo_id}@{revision or 'default branch'}", PINNED if pinned else UNPINNED,
               "kimi-k3:modelRevision",
               f"pulumi config set kimi-k3:modelRevision $(curl -sSf https://huggingface.co/api/models/"
               f"{repo_id}/revision/main | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"sha\"])')")


def image_pin(image: str) -> Pin:
    """The serving image (`kimi-k3:image`): pinned only as `<tag>@sha256:<digest>`."""
    tag, _, digest = image.partition("@")
    how = (f"pulumi config set kimi-k3:image {tag}@$(crane digest {tag})  "
           f"(or read it with docker buildx imagetools inspect {tag})")
    if IMAGE_DIGEST.fullmatch(digest):
        return Pin("the serving image", image, PINNED, "kimi-k3:image", how)
    return Pin("the serving image", image, UNPINNED, "kimi-k3:image", how,
               f"kimi-k3:image={image} is a tag, not a digest: the nodes run whatever the registry "
               f"holds under it when they pull (kimi-k3 could not confirm a digest of it); pin it: {how}")


def helper_image_pins(images: Iterable[str], serving_image: str) -> List[Pin]:
    """The other container images kimi-k3 runs (set in its code, not by a key); one warning for
    all of them that are pinned by tag only."""
    out, tags = [], []
    for image in sorted(set(images) - {serving_image}):
        _, _, digest = image.partition("@")
        pinned = bool(IMAGE_DIGEST.fullmatch(digest))
        out.append(Pin("a helper image", image, PINNED if pinned else UNPINNED, "",
                       "a code change: the image constant with @sha256:<digest> (crane digest <image>)"))
        if not pinned:
            tags.append(image)
    if tags:
        first = out[0]
        out[0] = Pin(first.artifact, first.source, first.state, first.key, first.how,
                     f"helper images run by tag, not digest (kimi-k3 could not confirm their digests): "
                     f"{', '.join(tags)}")
    return out


def images_in(obj) -> List[str]:
    """Every container `image` in a Kubernetes object (or a list of them)."""
    found: List[str] = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "image" and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)

    walk(obj)
    return found


def warnings(pins: Iterable[Pin]) -> List[str]:
    return [p.warning for p in pins if p.state == UNPINNED and p.warning]


def router_pin(requirements: Iterable[str], table, legacy=None) -> Pin:
    """vllm-router and its dependencies from PyPI (components/router/wheels.py): pinned, every
    wheel by its sha256 and installed with pip's `--require-hashes`. `legacy`: (requirements,
    table, the Pythons it serves) of the second closure a CTyun master whose python3 is older
    than the first's floor installs instead (components/router/host.py)."""
    reqs = list(requirements)
    router = next(r for r in reqs if r.startswith("vllm-router=="))
    wheels = sum(len(table[r]) for r in reqs)
    source = f"{router} and {len(reqs) - 1} dependencies from PyPI, {wheels} wheels by sha256"
    what = "ROUTER_REQUIREMENTS"
    if legacy is not None:
        old_reqs, old_table, serves = list(legacy[0]), legacy[1], legacy[2]
        source += (f"; on {serves} the same release and {len(old_reqs) - 1} older dependencies, "
                   f"{sum(len(old_table[r]) for r in old_reqs)} wheels by sha256")
        what = "ROUTER_REQUIREMENTS / ROUTER_REQUIREMENTS_LEGACY"
    return Pin("the router (PyPI vllm-router and the packages it pulls in)", source, PINNED, "",
               f"a code change: components/router/settings.py {what}, then "
               "tools/router_wheels.py (re-reads the digests PyPI publishes; --check compares)")


def chart_pins(charts: Iterable[Tuple[str, str, str]]) -> List[Pin]:
    """Helm charts (`(chart, version, repository)`): a version, not a digest. Helm installs
    whatever archive the repository's index.yaml lists under that version (the index carries
    a `digest`, but a repository may republish; kimi-k3 could not read those indexes from here),
    so each is recorded `unpinned` with the way to check it; no warning: the version is fixed."""
    return [Pin(f"the Helm chart {chart}", f"{chart} {version} from {repo}", UNPINNED, "",
                f"helm pull {chart} --repo {repo} --version {version} and compare its sha256 with "
                f"the `digest` of {chart} {version} in {repo.rstrip('/')}/index.yaml"
                if not repo.startswith("oci://") else
                f"helm pull {repo}/{chart} --version {version} (an OCI chart: the registry's "
                "manifest digest is what `helm pull` prints as Digest)")
            for chart, version, repo in charts]


def found_binary_pins(binaries: Iterable[Tuple[str, Tuple[str, ...]]]) -> List[Pin]:
    """Programs kimi-k3 runs but does not fetch (`(name, paths it looks at)`): whatever the node
    has installed there; recorded so that nothing run is missing from `pins`."""
    return [Pin(f"{name} (found on the node; kimi-k3 installs none)", " or ".join(paths),
                UNPINNED, "",
                f"install the release you reviewed at {paths[0]} (a distribution package by "
                "version, or the upstream archive checked against its published sha256)")
            for name, paths in binaries]
