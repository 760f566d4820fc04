"""The lines `plan` and `pulumi preview` print about what a stack opens (settings.exposure_warnings,
printed by __main__.py), and the shared keys' empty and spelled values.

Private means RFC 1918, shared (RFC 6598), loopback, link-local and the IPv6 equivalents;
documentation ranges (203.0.113.0/24, RFC 5737) stand for public addresses.
"""

from __future__ import annotations

import pytest

from components.inference.errors import ConfigError
from components.config.shared import Exposure, exposure_warnings, parse_settings
from components.config.values import cidrs

KEY_LINE = ("the endpoint is public and kimi-k3:apiKey is not set: anyone who can reach it can use "
            "the model (pulumi config set --secret kimi-k3:apiKey ...)")
ENDPOINT = "the model endpoint (TCP 8000)"


def _endpoint(*cidrs):
    return Exposure(ENDPOINT, "kimi-k3:allowedCidrs", tuple(cidrs), serves_model=True)


def _ssh(*cidrs):
    return Exposure("SSH to the master (TCP 22)", "kimi-k3:sshAllowedCidrs", tuple(cidrs))


def test_private_networks_print_nothing_with_or_without_a_key():
    private = [_endpoint("10.0.0.0/8", "192.168.1.0/24", "100.64.0.0/10", "fd00::/8"), _ssh("172.16.0.0/12")]
    assert exposure_warnings(private, False) == [] and exposure_warnings(private, True) == []


def test_each_public_opening_is_one_line_naming_the_key_and_the_addresses():
    got = exposure_warnings([_ssh("10.0.0.0/8"), _endpoint("10.0.0.0/8", "203.0.113.0/24", "198.51.100.7/32"),
                             _ssh("192.0.2.0/24")], True)
    assert got == [f"kimi-k3:allowedCidrs opens {ENDPOINT} to public addresses 203.0.113.0/24, 198.51.100.7/32",
                   "kimi-k3:sshAllowedCidrs opens SSH to the master (TCP 22) to public addresses 192.0.2.0/24"]


def test_the_whole_internet_is_named_as_such():
    got = exposure_warnings([_endpoint("0.0.0.0/0", "::/0", "203.0.113.0/24")], True)
    assert got == [f"kimi-k3:allowedCidrs opens {ENDPOINT} to the whole internet "
                   "(0.0.0.0/0, ::/0, kimi-k3:allowInternet=true)"]


@pytest.mark.parametrize("exposures,key,warned", [
    ([_endpoint("203.0.113.0/24")], False, True),              # public endpoint, no key
    ([_endpoint("203.0.113.0/24")], True, False),              # a key guards it
    ([_ssh("203.0.113.0/24"), _endpoint("10.0.0.0/8")], False, False),  # only SSH is public
    ([_endpoint("203.0.113.0/24"), _ssh("203.0.113.0/24")], False, True),  # a later non-model opening
    ([_endpoint("10.0.0.0/8")], False, False),
])
def test_a_public_endpoint_without_an_api_key_says_so_last(exposures, key, warned):
    got = exposure_warnings(exposures, key)
    assert (got[-1:] == [KEY_LINE]) is warned and got.count(KEY_LINE) == int(warned)


def test_a_cidr_value_that_is_no_list_is_refused_with_the_fix():
    with pytest.raises(ConfigError) as e:
        cidrs("kimi-k3:allowedCidrs", {"cidr": "203.0.113.0/24"})
    assert str(e.value) == ('kimi-k3:allowedCidrs={"cidr": "203.0.113.0/24"} is not a list of CIDRs; give '
                            'CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32')


def _shared(**kw):
    return parse_settings({"target": "aws-eks", **kw}, "s")


@pytest.mark.parametrize("value,want", [("1", True), ("0", False), ("no", False), ("NO", False), (" Yes ", True),
                                        ("", False)])
def test_booleans_are_spelled_as_users_write_them(value, want):
    assert _shared(streamWeights=value, weightsSource="mirror").stream_weights is want


def test_an_empty_value_means_the_default():
    s, d = _shared(nodes="", gpuMemoryUtilization="", modelOverrides="", maxModelLen=""), _shared()
    assert (s.nodes, s.gpu_memory_utilization, s.model_overrides, s.max_model_len) == (
        d.nodes, d.gpu_memory_utilization, d.model_overrides, d.max_model_len)


@pytest.mark.parametrize("value,fix", [("128K", "give an integer (write 131072, not 128K)"),
                                       ("12X", "give an integer"), ("1e5", "give an integer")])
def test_an_integer_with_a_unit_gets_the_hint_only_for_k_or_m(value, fix):
    with pytest.raises(ConfigError) as e:
        _shared(maxModelLen=value)
    assert e.value.fix == fix
