"""Shared stack settings: defaults per target and one-line errors naming key, value and fix."""

import pytest

from components.config.shared import (
    SharedSettings,
    check_exposure,
    internet_wide,
    parse_settings,
    reject_unknown,
)
from components.config.values import cidrs
from components.inference.errors import ConfigError
from components.program.registry import REGISTRY

#: the registry's targets and aws-eks's accelerators, as the refusals list them (a target or an
#: accelerator registered is listed there without editing these tests: docs/architecture.md)
TARGETS = ", ".join(REGISTRY)
AWS_ACCELERATORS = ", ".join(REGISTRY["aws-eks"].accelerators)


def test_defaults_reproduce_the_seeds():
    c = parse_settings({"target": "ctyun-hcc"}, "ctyun-hcc")
    assert (c.accelerator, c.node_shape, c.nodes, c.model, c.port, c.served_model_name) == \
        ("ascend-910c", "atlas-800-a3", 4, "w4a8", 11025, "Kimi-K3")
    a = parse_settings({"target": "aws-eks"}, "aws-eks")
    assert (a.accelerator, a.node_shape, a.nodes, a.model, a.port) == \
        ("b300", "p6-b300.48xlarge", 1, "mxfp4", 8000)
    assert a.allowed_cidrs == () and c.allowed_cidrs == ()


@pytest.mark.parametrize("raw,key,fragment", [
    ({"target": "gcp"}, "kimi-k3:target", f"use one of {TARGETS}"),
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


# ---- merged from test_settings_behaviour.py:
# Shared `kimi-k3:*` settings at their edges: defaults per target, values as given, the
# exposure rule's prefix edges (/8 for IPv4 and /16 for IPv6 are still networks, one bit wider is
# the internet), and the exact refusal line for each bad value (components/config/shared.py).

T = {"target": "aws-eks"}


def test_defaults_per_target():
    c = parse_settings({"target": "ctyun-hcc"}, "st")
    a = parse_settings(T, "st")
    common = dict(stack="st", served_model_name="Kimi-K3", allowed_cidrs=(), max_model_len=None, max_num_seqs=None,
                  max_num_batched_tokens=None, gpu_memory_utilization=None, kv_cache_dtype=None,
                  weights_source=None, stream_weights=False, vision_chunks_per_prompt=40, model_overrides={},
                  has_api_key=False, has_hf_token=False, allow_internet=False, accept_load="auto", target_config={})
    assert c == SharedSettings(target="ctyun-hcc", accelerator="ascend-910c", node_shape="atlas-800-a3", nodes=4,
                               model="w4a8", image="quay.io/ascend/vllm-ascend:kimi-k3-a3", port=11025, **common)
    assert a == SharedSettings(target="aws-eks", accelerator="b300", node_shape="p6-b300.48xlarge", nodes=1,
                               model="mxfp4", image="vllm/vllm-openai:kimi-k3", port=8000, **common)


def test_values_are_read_as_given_and_the_rest_goes_to_the_target():
    s = parse_settings({**T, "accelerator": "h100", "nodes": "4", "model": "nvfp4", "port": "1024",
                        "servedModelName": "k3/x", "allowedCidrs": " 10.0.0.0/8 , ::/16", "maxModelLen": "131_072",
                        "maxNumSeqs": "8", "maxNumBatchedTokens": "4096", "gpuMemoryUtilization": " 0.9 ",
                        "kvCacheDtype": "fp8", "weightsSource": "s3", "streamWeights": "yes",
                        "visionChunksPerPrompt": "0", "modelOverrides": '{"mla_layers": 40}', "apiKey": "sk-" + "x1y2z3" * 6,  # ::/16 is public: 32+ chars
                        "hfToken": "hf", "allowInternet": "false", "foo": "1"}, "st")
    assert (s.accelerator, s.node_shape, s.nodes, s.model, s.port) == ("h100", "p5.48xlarge", 4, "nvfp4", 1024)
    assert (s.served_model_name, s.allowed_cidrs) == ("k3/x", ("10.0.0.0/8", "::/16"))
    assert (s.max_model_len, s.max_num_seqs, s.max_num_batched_tokens) == (131072, 8, 4096)
    assert (s.gpu_memory_utilization, s.kv_cache_dtype, s.weights_source, s.stream_weights) == (0.9, "fp8", "s3", True)
    assert (s.vision_chunks_per_prompt, s.model_overrides) == (0, {"mla_layers": 40})
    assert (s.has_api_key, s.has_hf_token, s.allow_internet, s.target_config) == (True, True, False, {"foo": "1"})
    assert parse_settings({**T, "port": "65535", "nodes": "64", "visionChunksPerPrompt": "1000"}, "s").port == 65535


@pytest.mark.parametrize("cidrs,wide", [
    (["10.0.0.0/8"], ()), (["8.0.0.0/7"], ("8.0.0.0/7",)), (["0.0.0.0/0", "10.0.0.0/8"], ("0.0.0.0/0",)),
    (["2001::/16"], ()), (["2000::/15"], ("2000::/15",)), (["::/0"], ("::/0",)), (["203.0.113.7"], ()),
])
def test_internet_wide_is_anything_wider_than_a_slash_8_or_slash_16(cidrs, wide):
    assert internet_wide(cidrs) == wide
    if wide:
        with pytest.raises(ConfigError) as e:
            check_exposure(cidrs, "kimi-k3:x", False)
        assert e.value.value == list(wide)
        check_exposure(cidrs, "kimi-k3:x", True)
    else:
        check_exposure(cidrs, "kimi-k3:x", False)


def test_cidr_lists_in_every_accepted_spelling():
    k = "kimi-k3:allowedCidrs"
    assert cidrs(k, None) == cidrs(k, "") == cidrs(k, []) == ()
    assert cidrs(k, '["203.0.113.0/24", " 198.51.100.7/32"]') == ("203.0.113.0/24", "198.51.100.7/32")
    assert cidrs(k, ("203.0.113.0/24",)) == ("203.0.113.0/24",)
    assert cidrs(k, "2001:DB8::/32") == ("2001:db8::/32",)
    with pytest.raises(ConfigError) as e:
        cidrs("ctyun:sshAllowedCidrs", '["a"]')
    assert e.value.key == "ctyun:sshAllowedCidrs"
    with pytest.raises(ConfigError) as e:
        cidrs(k, {"a": 1})
    # the value as JSON spells it (this asserted Python's dict spelling, {'a': 1}, before)
    assert str(e.value).startswith('kimi-k3:allowedCidrs={"a": 1} is not a list of CIDRs; ')


REFUSALS = [
    ({},
     f'kimi-k3:target (not set) is not a known target; use one of {TARGETS}'),
    ({'target': 'gcp'},
     f"kimi-k3:target='gcp' is not a known target; use one of {TARGETS}"),
    ({'target': 'aws-eks', 'accelerator': 'tpu'},
     f"kimi-k3:accelerator='tpu' is not a known accelerator; use one of {AWS_ACCELERATORS}"),
    ({'target': 'aws-eks', 'accelerator': 'ascend-910c'},
     f"kimi-k3:accelerator='ascend-910c' is not offered by aws-eks; use one of {AWS_ACCELERATORS} on aws-eks"),
    ({'target': 'aws-eks', 'model': 'k2'},
     "kimi-k3:model='k2' is not a known Kimi K3 weight variant; use one of mxfp4, nvfp4, w4a8"),
    ({'target': 'aws-eks', 'image': 'x:1'},
     "kimi-k3:image='x:1' is not a known serving image; use one of quay.io/ascend/vllm-ascend:kimi-k3-a3, vllm/vllm-openai:kimi-k3, optionally pinned as <image>@sha256:<digest>"),
    ({'target': 'aws-eks', 'modelOverrides': '[1]'},
     "kimi-k3:modelOverrides='[1]' is not an object; give a JSON object"),
    ({'target': 'aws-eks', 'modelOverrides': '{bad'},
     "kimi-k3:modelOverrides='{bad' is not valid JSON; give a JSON value"),
    ({'target': 'aws-eks', 'modelOverrides': '{"a": true}'},
     'kimi-k3:modelOverrides=\'{"a": true}\' has a value that is not a finite number; give finite numbers as values'),
    ({'target': 'aws-eks', 'modelOverrides': '{"a": "1"}'},
     'kimi-k3:modelOverrides=\'{"a": "1"}\' has a value that is not a finite number; give finite numbers as values'),
    ({'target': 'aws-eks', 'modelOverrides': '{"a": NaN}'},
     'kimi-k3:modelOverrides=\'{"a": NaN}\' has a value that is not a finite number; give finite numbers as values'),
    ({'target': 'aws-eks', 'nodes': '0'},
     'kimi-k3:nodes=0 is out of range; use 1 to 64'),
    ({'target': 'aws-eks', 'nodes': '65'},
     'kimi-k3:nodes=65 is out of range; use 1 to 64'),
    ({'target': 'aws-eks', 'nodes': '4x'},
     "kimi-k3:nodes='4x' is not an integer; give an integer"),
    ({'target': 'aws-eks', 'maxModelLen': '128K'},
     "kimi-k3:maxModelLen='128K' is not an integer; give an integer (write 131072, not 128K)"),
    ({'target': 'aws-eks', 'maxModelLen': '12.5'},
     'kimi-k3:maxModelLen=12.5 is not an integer; give an integer'),
    ({'target': 'aws-eks', 'port': '1023'},
     'kimi-k3:port=1023 is out of range; use 1024 to 65535'),
    ({'target': 'aws-eks', 'port': '65536'},
     'kimi-k3:port=65536 is out of range; use 1024 to 65535'),
    ({'target': 'aws-eks', 'gpuMemoryUtilization': 'high'},
     "kimi-k3:gpuMemoryUtilization='high' is not a number; give a number such as 0.9"),
    ({'target': 'aws-eks', 'gpuMemoryUtilization': 'inf'},
     "kimi-k3:gpuMemoryUtilization='inf' is not finite; give a finite number such as 0.9"),
    ({'target': 'aws-eks', 'streamWeights': 'maybe'},
     "kimi-k3:streamWeights='maybe' is not a boolean; use true or false"),
    ({'target': 'aws-eks', 'allowInternet': '2'},
     'kimi-k3:allowInternet=2 is not a boolean; use true or false'),
    ({'target': 'aws-eks', 'visionChunksPerPrompt': '1001'},
     'kimi-k3:visionChunksPerPrompt=1001 is out of range; use 0 to 1000'),
    ({'target': 'aws-eks', 'allowedCidrs': '[bad'},
     'kimi-k3:allowedCidrs=\'[bad\' is not a JSON list; give CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'),
    ({'target': 'aws-eks', 'allowedCidrs': '{"a": 1}'},
     'kimi-k3:allowedCidrs=\'{"a": 1}\' is not a CIDR (\'{"a": 1}\' does not appear to be an IPv4 or IPv6 network); give CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'),
    ({'target': 'aws-eks', 'allowedCidrs': '[1]'},
     'kimi-k3:allowedCidrs=1 is not a CIDR; give CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'),
    ({'target': 'aws-eks', 'allowedCidrs': '10.0.0.1/8'},
     'kimi-k3:allowedCidrs=\'10.0.0.1/8\' is not a CIDR (10.0.0.1/8 has host bits set); give CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'),
    ({'target': 'aws-eks', 'allowedCidrs': '0.0.0.0/0'},
     "kimi-k3:allowedCidrs='0.0.0.0/0' opens to the whole internet; list your own networks (e.g. 203.0.113.10/32), or set kimi-k3:allowInternet=true if the whole internet is meant"),
    ({'target': 'aws-eks', 'allowedCidrs': '::/0'},
     "kimi-k3:allowedCidrs='::/0' opens to the whole internet; list your own networks (e.g. 203.0.113.10/32), or set kimi-k3:allowInternet=true if the whole internet is meant"),
    ({'target': 'aws-eks', 'allowedCidrs': '0.0.0.0/7'},
     "kimi-k3:allowedCidrs='0.0.0.0/7' opens to the whole internet; list your own networks (e.g. 203.0.113.10/32), or set kimi-k3:allowInternet=true if the whole internet is meant"),
    ({**T, "port": "13389"},
     "kimi-k3:port=13389 collides; pick another port (13389 is vLLM's data-parallel RPC port, --data-parallel-rpc-port)"),
    ({**T, "servedModelName": "a b"},
     "kimi-k3:servedModelName='a b' is not a usable model name; use up to 128 letters, digits and . _ : - / (one "
     "'/' at a time), starting with a letter or digit, e.g. Kimi-K3"),
]


@pytest.mark.parametrize("raw,message", REFUSALS)
def test_refusals_are_exactly_one_line_naming_key_value_and_fix(raw, message):
    with pytest.raises(ConfigError) as e:
        parse_settings(raw, "s")
    assert str(e.value) == message


def test_integer_hint_for_any_suffix_case():
    for text in ("128k", "1M", "2m"):
        with pytest.raises(ConfigError) as e:
            parse_settings({**T, "maxModelLen": text}, "s")
        assert e.value.fix == "give an integer (write 131072, not 128K)"


def test_exposure_helpers_take_cidrs_with_host_bits_and_name_the_endpoint():
    from components.config.shared import default_exposures, public_cidrs
    assert internet_wide(["10.0.0.1/8", "1.2.3.4/6"]) == ("0.0.0.0/6",)
    assert public_cidrs(["10.1.2.3/16", "203.0.113.9/24", "fd00::1/64"]) == ("203.0.113.0/24",)
    s = parse_settings({**T, "allowedCidrs": "203.0.113.0/24", "port": "9000"}, "s")
    (e,) = default_exposures(s)
    assert (e.what, e.key, e.cidrs, e.serves_model) == (
        "the model endpoint (TCP 9000)", "kimi-k3:allowedCidrs", ("203.0.113.0/24",), True)


def test_the_plan_request_carries_every_planning_setting():
    s = parse_settings({**T, "nodes": "2", "maxModelLen": "65536", "maxNumSeqs": "3", "maxNumBatchedTokens": "512",
                        "gpuMemoryUtilization": "0.8", "kvCacheDtype": "auto", "weightsSource": "s3",
                        "streamWeights": "true", "modelOverrides": '{"mla_layers": 34}'}, "s")
    r = s.plan_request()
    assert (r.model, r.node_shape, r.nodes, r.max_model_len, r.max_num_seqs, r.max_num_batched_tokens) == (
        "mxfp4", "p6-b300.48xlarge", 2, 65536, 3, 512)
    assert (r.gpu_memory_utilization, r.kv_cache_dtype, r.weights_source, r.stream_weights, r.model_overrides) == (
        0.8, "auto", "s3", True, {"mla_layers": 34})
