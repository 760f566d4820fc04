"""Model overrides (catalog.with_architecture_overrides) and the quoting functions at their
edges: every special character of an ERE matched literally by grep -E, every refusal named."""

import subprocess

import pytest

from components.inference import quoting as q
from components.inference.catalog import MODELS, with_architecture_overrides


def test_every_documented_override_key_lands_in_its_field_with_the_fields_type():
    base = MODELS["w4a8"]
    m = with_architecture_overrides(base, {"mla_layers": 40.0, "kv_lora_rank": "256", "weights_bytes": 2e12,
                                           "expert_weight_fraction": "0.9", "max_context_tokens": 262144.0,
                                           "checkpoint_bytes": 1.5e12})
    assert (m.architecture.mla_layers, m.architecture.kv_lora_rank) == (40, 256)
    assert type(m.architecture.mla_layers) is int and type(m.weights_bytes) is int
    assert (m.weights_bytes, m.expert_weight_fraction, m.max_context_tokens) == (2_000_000_000_000, 0.9, 262144)
    assert m.checkpoint_bytes == 1_500_000_000_000 and type(m.checkpoint_bytes) is int
    assert m.architecture.qk_rope_head_dim == base.architecture.qk_rope_head_dim  # the rest is kept
    assert m.key == base.key and base.architecture.mla_layers == 33  # the catalog entry is untouched
    assert with_architecture_overrides(base, {}) is base
    only_model = with_architecture_overrides(base, {"weights_bytes": 1})
    assert only_model.architecture == base.architecture and only_model.weights_bytes == 1
    only_arch = with_architecture_overrides(base, {"active_experts": 8})
    assert only_arch.weights_bytes == base.weights_bytes and only_arch.architecture.active_experts == 8
    with pytest.raises(KeyError) as e:
        with_architecture_overrides(base, {"mla_layers": 1, "layers": 3})
    assert e.value.args == ("layers",)
    with pytest.raises(ValueError):
        with_architecture_overrides(base, {"mla_layers": "many"})


@pytest.mark.parametrize("text", [".", "[", "]", "(", ")", "*", "+", "?", "{", "}", "|", "^", "$", "\\",
                                  'a.b[c](d)*e+f?g{1}h|i^j$k\\l', "plain-text_1"])
def test_ere_literal_matches_exactly_that_text(text):
    pattern = q.ere_literal(text)
    assert subprocess.run(["grep", "-Eqx", pattern], input=text, text=True).returncode == 0
    # a look-alike with one character changed does not match
    other = text[:-1] + ("Z" if text[-1] != "Z" else "Y")
    assert subprocess.run(["grep", "-Eqx", pattern], input=other, text=True).returncode == 1


def test_ere_literal_escapes_the_two_characters_brackets_cannot_hold():
    assert q.ere_literal("^") == "\\^" and q.ere_literal("\\") == "\\\\" and q.ere_literal(".") == "[.]"
    assert q.ere_literal("a1") == "a1"


def test_refusals_of_the_quoting_functions():
    with pytest.raises(q.QuotingError) as e:
        q.shell_word("a\0b")
    assert str(e.value) == "a NUL byte cannot be passed to a command or an environment variable"
    with pytest.raises(q.QuotingError) as e:
        q.k8s_ref("A-B")
    assert str(e.value) == "'A-B' is not a variable name"
    for bad in ("1A", "", "A B", "A$"):
        with pytest.raises(q.QuotingError):
            q.k8s_ref(bad)
    assert q.k8s_ref("_A1") == "$(_A1)" and q.k8s_ref("KK3_MODEL_URI") == "$(KK3_MODEL_URI)"
    with pytest.raises(q.QuotingError):
        q.ere_literal("a\0")


def test_the_literal_forms():
    assert q.shell_words(["a b", "c", "$(x)"]) == "'a b' c '$(x)'"
    assert q.shell_words([]) == ""
    assert q.shell_word(5) == "5" and q.shell_word("") == "''"
    assert q.k8s_literal("$(A) $$ $") == "$$(A) $$$$ $$" and q.k8s_literal(7) == "7"
    assert q.k8s_shell_command("echo $(A)") == ["sh", "-c", "echo $$(A)"]
    assert q.json_text({"b": [1, 2], "a": "x"}) == '{"b":[1,2],"a":"x"}'
    with pytest.raises(ValueError):
        q.json_text(float("inf"))
