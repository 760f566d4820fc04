"""Shared stack settings: defaults per target and one-line errors naming key, value and fix."""

import pytest

from components.inference.errors import ConfigError
from components.config.shared import parse_settings, reject_unknown


def test_defaults_reproduce_the_seeds():
    c = parse_settings({"target": "ctyun-hcc"}, "ctyun-hcc")
    assert (c.accelerator, c.node_shape, c.nodes, c.model, c.port, c.served_model_name) == \
        ("ascend-910c", "atlas-800-a3", 4, "w4a8", 11025, "Kimi-K3")
    a = parse_settings({"target": "aws-eks"}, "aws-eks")
    assert (a.accelerator, a.node_shape, a.nodes, a.model, a.port) == \
        ("b300", "p6-b300.48xlarge", 1, "mxfp4", 8000)
    assert a.allowed_cidrs == () and c.allowed_cidrs == ()


@pytest.mark.parametrize("raw,key,fragment", [
    ({"target": "gcp"}, "kimi-k3:target", "use one of ctyun-hcc, aws-eks"),
    ({"target": "aws-eks", "accelerator": "ascend-910c"}, "kimi-k3:accelerator", "not offered by aws-eks"),
    ({"target": "aws-eks", "accelerator": "tpu"}, "kimi-k3:accelerator", "not a known accelerator"),
    ({"target": "aws-eks", "nodes": "two"}, "kimi-k3:nodes", "is not an integer"),
    ({"target": "aws-eks", "nodes": "0"}, "kimi-k3:nodes", "use 1 to 64"),
    ({"target": "aws-eks", "maxModelLen": "128K"}, "kimi-k3:maxModelLen", "131072, not 128K"),
    ({"target": "aws-eks", "port": "80"}, "kimi-k3:port", "out of range"),
    ({"target": "aws-eks", "allowedCidrs": ["10.0.0.1/8"]}, "kimi-k3:allowedCidrs", "not a CIDR"),
    ({"target": "aws-eks", "streamWeights": "maybe"}, "kimi-k3:streamWeights", "true or false"),
    ({"target": "aws-eks", "image": "vllm/vllm-openai:latest"}, "kimi-k3:image", "not a known serving image"),
    ({"target": "aws-eks", "servedModelName": "Kimi K3"}, "kimi-k3:servedModelName", "letters, digits"),
    ({"target": "aws-eks", "servedModelName": "K3$(touch${IFS}x)"}, "kimi-k3:servedModelName", "not a usable"),
    ({"target": "aws-eks", "servedModelName": "$(HF_TOKEN)"}, "kimi-k3:servedModelName", "not a usable"),
    ({"target": "aws-eks", "allowedCidrs": "[bad"}, "kimi-k3:allowedCidrs", "not a JSON list"),
    ({"target": "aws-eks", "allowedCidrs": {"a": 1}}, "kimi-k3:allowedCidrs", "not a list"),
    ({"target": "aws-eks", "allowedCidrs": [1]}, "kimi-k3:allowedCidrs", "not a CIDR"),
    ({"target": "ctyun-hcc", "port": "13389"}, "kimi-k3:port", "data-parallel RPC port"),
    ({"target": "aws-eks", "port": "²"}, "kimi-k3:port", "is not an integer"),
    ({"target": "aws-eks", "nodes": "١"}, "kimi-k3:nodes", "is not an integer"),
    ({"target": "aws-eks", "gpuMemoryUtilization": "nan"}, "kimi-k3:gpuMemoryUtilization", "finite"),
    ({"target": "aws-eks", "gpuMemoryUtilization": "inf"}, "kimi-k3:gpuMemoryUtilization", "finite"),
    ({"target": "aws-eks", "modelOverrides": '{"x": NaN}'}, "kimi-k3:modelOverrides", "finite"),
])
def test_bad_values_are_one_line_errors(raw, key, fragment):
    with pytest.raises(ConfigError) as e:
        parse_settings(raw, "s")
    assert e.value.key == key and fragment in str(e.value) and "\n" not in str(e.value)


def test_cidrs_accept_lists_and_commas():
    s = parse_settings({"target": "aws-eks", "allowedCidrs": "203.0.113.0/24, 198.51.100.7/32"}, "s")
    assert s.allowed_cidrs == ("203.0.113.0/24", "198.51.100.7/32")


def test_target_keys_pass_through_and_unknown_ones_are_rejected():
    s = parse_settings({"target": "aws-eks", "serving": "hyperpod", "capacityReservationid": "cr-1"}, "s")
    assert s.target_config == {"serving": "hyperpod", "capacityReservationid": "cr-1"}
    with pytest.raises(ConfigError, match="kimi-k3:capacityReservationid=<not shown> is not a known "
                       "key; did you mean kimi-k3:capacityReservationId"):
        reject_unknown(s.target_config, {"serving", "capacityReservationId"})


def test_unknown_keys_never_print_their_value():
    s = parse_settings({"target": "aws-eks", "apikey": "sk-live-123"}, "s")
    with pytest.raises(ConfigError) as e:
        reject_unknown(s.target_config, {"serving"})
    assert "sk-live-123" not in str(e.value) and "did you mean kimi-k3:apiKey" in str(e.value)


def test_secret_values_are_not_kept():
    s = parse_settings({"target": "aws-eks", "apiKey": "sk-very-secret"}, "s")
    assert s.has_api_key and "sk-very-secret" not in repr(s)


# ---- exposure is a decision (issue 10) -------------------------------------------------------
@pytest.mark.parametrize("cidrs", [["0.0.0.0/0"], ["::/0"], ["0.0.0.0/1", "128.0.0.0/1"],
                                   ["10.0.0.0/8", "0.0.0.0/7"]])
def test_internet_wide_cidrs_need_the_opt_in(cidrs):
    raw = {"target": "aws-eks", "allowedCidrs": cidrs}
    with pytest.raises(ConfigError) as e:
        parse_settings(raw, "s")
    assert e.value.key == "kimi-k3:allowedCidrs" and "allowInternet" in str(e.value)
    s = parse_settings({**raw, "allowInternet": "true"}, "s")
    assert s.allow_internet and s.allowed_cidrs


@pytest.mark.parametrize("cidrs", [["10.0.0.0/8"], ["203.0.113.10/32"], ["2001:db8::/32"]])
def test_narrower_cidrs_pass_without_the_opt_in(cidrs):
    assert parse_settings({"target": "aws-eks", "allowedCidrs": cidrs}, "s").allowed_cidrs
