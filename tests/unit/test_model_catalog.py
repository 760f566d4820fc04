"""Kimi K3 and Kimi K3.1 Pro in the catalog: every variant resolvable where it loads, a one-line
refusal naming the key, the value and the fix everywhere else."""

import pytest

from components.inference import catalog as c
from components.inference.errors import ConfigError

#: the catalog's accelerators, as the refusals list them (an accelerator added to the catalog is
#: listed there without editing these tests: docs/architecture.md, "An accelerator")
ALL_ACCELERATORS = ", ".join(sorted(c.ACCELERATORS))
CUDA_ACCELERATORS = ", ".join(sorted(k for k, a in c.ACCELERATORS.items() if a.platform == "cuda"))


def test_both_releases_and_their_facts():
    assert set(c.RELEASES) == {"kimi-k3", "kimi-k3.1-pro"}
    k3, pro = c.RELEASES["kimi-k3"], c.RELEASES["kimi-k3.1-pro"]
    assert k3.variants is c.K3_MODELS and c.DEFAULT_MODEL_ID == "kimi-k3"
    # one flat catalog: Kimi K3's variants by their names, the others' by release-variant
    assert set(c.MODELS) == {"mxfp4", "nvfp4", "w4a8", "k3.1-pro-mxfp4"}
    assert (k3.served_model_name, pro.served_model_name) == ("Kimi-K3", "Kimi-K3.1-Pro")
    assert set(pro.variants) == {"mxfp4"}
    m = pro.variants["mxfp4"]
    assert (m.repo_id, m.hub, m.platforms, m.model_id) == (
        "moonshotai/Kimi-K3.1-Pro", "huggingface", frozenset({"cuda"}), "kimi-k3.1-pro")
    assert m.architecture == c.MODELS["mxfp4"].architecture  # same architecture as K3
    assert c.MODELS[m.key] is m and m.key == "k3.1-pro-mxfp4"
    assert (pro.reasoning_parser, pro.tool_call_parser) == ("kimi_k3", "kimi_k3")
    assert not pro.parsers_confirmed and any("parsers" in n for n in pro.not_public)
    assert any("W4A8" in n for n in pro.not_public)
    for r in c.RELEASES.values():  # no commit is claimed without a source
        assert all(v.revision is None for v in r.variants.values())
        assert all(v.model_id == r.key for v in r.variants.values())
    assert m.local_dir_name != c.MODELS["mxfp4"].local_dir_name  # both can sit side by side


@pytest.mark.parametrize("model_id,variant,acc,name", [
    ("kimi-k3", "mxfp4", "b300", "Kimi K3 MXFP4"),
    ("kimi-k3", "nvfp4", "b200", "Kimi K3 NVFP4"),
    ("kimi-k3", "w4a8", "ascend-910c", "Kimi K3 W4A8"),
    ("kimi-k3.1-pro", "mxfp4", "b300", "Kimi K3.1 Pro MXFP4"),
    ("kimi-k3.1-pro", "mxfp4", "h200", "Kimi K3.1 Pro MXFP4"),
])
def test_known_variants_resolve(model_id, variant, acc, name):
    assert c.release_variant(model_id, variant, acc).display_name == name


@pytest.mark.parametrize("model_id,variant,acc,line", [
    ("kimi-k3.1-pro", "w4a8", "ascend-910c",
     "kimi-k3:modelId='kimi-k3.1-pro' has no published weights for Ascend 910C; use an "
     f"accelerator that loads it ({CUDA_ACCELERATORS}) or another kimi-k3:modelId"),
    ("kimi-k3.1-pro", "nvfp4", "b300",
     "kimi-k3:model='nvfp4' is not a published Kimi K3.1 Pro weight variant; use mxfp4 on b300"),
    ("kimi-k3", "mxfp4", "ascend-910c",
     "kimi-k3:model='mxfp4' (Kimi K3 MXFP4) does not load on Ascend 910C; use w4a8 on ascend-910c"),
    ("kimi-k3", "w4a8", "b300",
     "kimi-k3:model='w4a8' (Kimi K3 W4A8) does not load on NVIDIA B300; use mxfp4 or nvfp4 on b300"),
    ("Kimi-K3.1-Pro", "mxfp4", "b300",
     "kimi-k3:modelId='Kimi-K3.1-Pro' is not a known model; use one of kimi-k3, kimi-k3.1-pro"),
    ("kimi-k3.1-pro\nx", "mxfp4", "b300",
     "kimi-k3:modelId='kimi-k3.1-pro\\nx' is not a known model; use one of kimi-k3, kimi-k3.1-pro"),
    ("kimi-k3", "mxfp4", "tpu-v7",
     f"kimi-k3:accelerator='tpu-v7' is not known; use one of {ALL_ACCELERATORS}"),
])
def test_unknown_combinations_are_refused_in_one_line(model_id, variant, acc, line):
    with pytest.raises(ConfigError) as e:
        c.release_variant(model_id, variant, acc)
    assert str(e.value) == line and "\n" not in str(e.value)


from components.config.shared import parse_settings  # noqa: E402


@pytest.mark.parametrize("raw,line", [
    ({"target": "aws-eks", "modelId": "kimi-k4"},
     "kimi-k3:modelId='kimi-k4' is not a known model; use one of kimi-k3, kimi-k3.1-pro"),
    ({"target": "aws-eks", "modelId": "kimi-k3.1-pro", "model": "nvfp4"},
     "kimi-k3:model='nvfp4' is not a known Kimi K3.1 Pro weight variant; use one of mxfp4"),
    ({"target": "ctyun-hcc", "modelId": "kimi-k3.1-pro"},
     "kimi-k3:modelId='kimi-k3.1-pro' has no published weights for Ascend 910C; use an "
     f"accelerator that loads it ({CUDA_ACCELERATORS}) or another kimi-k3:modelId"),
    ({"target": "aws-eks", "modelId": "Kimi-K3.1-Pro"},
     "kimi-k3:modelId='Kimi-K3.1-Pro' is not a known model; use one of kimi-k3, kimi-k3.1-pro"),
])
def test_model_id_config_refusals_are_one_line(raw, line):
    with pytest.raises(ConfigError) as e:
        parse_settings(raw, raw["target"])
    assert str(e.value) == line


def test_model_id_selects_the_release_its_variant_and_its_served_name():
    s = parse_settings({"target": "aws-eks", "modelId": "kimi-k3.1-pro"}, "aws-eks")
    assert (s.model_id, s.model, s.served_model_name) == ("kimi-k3.1-pro", "k3.1-pro-mxfp4",
                                                          "Kimi-K3.1-Pro")
    d = parse_settings({"target": "aws-eks"}, "aws-eks")
    assert (d.model_id, d.model, d.served_model_name) == ("kimi-k3", "mxfp4", "Kimi-K3")
    named = parse_settings({"target": "aws-eks", "modelId": "kimi-k3.1-pro",
                            "servedModelName": "pro"}, "aws-eks")
    assert named.served_model_name == "pro"
