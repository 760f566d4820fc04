"""Small contracts the renderers lean on: a flag table's release range is inclusive at both ends
(PEP 440 order, packaging's Version), an optional key's refusal still names the key, and a
deliberate `$(NAME)` reference works for any C identifier (the kubelet's expansion,
tests/doubles/k8s_expansion.py)."""

import pytest

from components.config import values as grammar
from components.inference.errors import ConfigError
from components.inference.quoting import QuotingError, k8s_ref
from components.inference.vllm_flags import supported, version_tuple
from tests.doubles.k8s_expansion import expand

TABLE = {"--kk3-flag": ("0.9.0", "0.10.1")}


@pytest.mark.parametrize("version,ok", [("0.8.9", False), ("0.9.0rc1", False), ("0.9.0", True),
                                        ("0.10.1", True), ("0.10.1.post1", False), ("0.10.2", False)])
def test_a_flag_exists_from_its_first_through_its_last_release(version, ok):
    assert supported(TABLE, "--kk3-flag", version) is ok
    assert supported(TABLE, "--other", version) is False


def test_a_version_that_is_not_pep440_is_refused_by_name():
    with pytest.raises(ValueError) as e:
        version_tuple("latest")
    assert str(e.value) == "'latest' is not a vLLM version (PEP 440)"


def test_an_optional_value_is_checked_under_its_own_key():
    assert grammar.optional(grammar.http_url, "kimi-k3:x", "") is None
    assert grammar.optional(grammar.http_url, "kimi-k3:x", None) is None
    assert grammar.optional(grammar.http_url, "kimi-k3:x", "https://h/v1") == "https://h/v1"
    with pytest.raises(ConfigError) as e:
        grammar.optional(grammar.http_url, "kimi-k3:hubEndpoint", "not a url")
    assert e.value.key == "kimi-k3:hubEndpoint" and str(e.value).startswith("kimi-k3:hubEndpoint='not a url'")


@pytest.mark.parametrize("name", ["NODE_ADDR", "kk3_model_uri", "_x1"])
def test_a_reference_expands_to_the_variable_for_any_c_identifier(name):
    assert expand(k8s_ref(name), {name: "v"}) == "v"


@pytest.mark.parametrize("name", ["1X", "A-B", "A B", "", "$(X)"])
def test_anything_else_is_no_reference(name):
    with pytest.raises(QuotingError):
        k8s_ref(name)
