"""components/inference/yaml_text.py writes the bytes yaml.safe_dump writes (PyYAML's own
emitter is the reference) on generated scalars; the rendered manifests, long scripts included,
are compared with the golden files in test_render_k8s.py."""

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from components.inference import yaml_text

#: every character class PyYAML's analysis and double-quoted writer branch on: indicators,
#: whitespace and breaks, characters it escapes, printable and unprintable unicode, astral
#: characters, the BOM and U+10FFFF (which the analysis does not count as printable)
TRICKY = list("ab:#-?,[]{}&*!|>'\"%@`. \t\r\n\\/0") + [
    "\0", "\x07", "\x1b", "\x7f", "\x85", "\xa0", "\xe9", "\u2028", "\u2029", "\ud7ff", "\ue000",
    "\ufeff", "\ufffd", "\ufffe", "\U0001f600", "\U0010fffe", "\U0010ffff"]
text = st.text(alphabet=st.sampled_from(TRICKY), max_size=60)


def same(data, **kwds):
    assert yaml_text.safe_dump(data, **kwds) == yaml.safe_dump(data, **kwds)


@settings(max_examples=250, deadline=None)
@given(text, st.sampled_from([None, True]), st.sampled_from([8, 20, 120]))
def test_a_scalar_is_written_as_pyyaml_writes_it(s, allow_unicode, width):
    same({"k": s, s: [s, {"n": s}]}, allow_unicode=allow_unicode, width=width, sort_keys=False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["x", "xx yy", "  ", "\n", " \n", "\n  z", "\\", '"', "\t",
                                 "a: b", " #", "\u2028", "\U0001f600"]), max_size=40),
       st.sampled_from([None, True]), st.sampled_from([10, 40, 120]))
def test_a_long_script_like_scalar_folds_as_pyyaml_folds_it(parts, allow_unicode, width):
    s = "".join(parts)
    same({"data": {"script.sh": s}}, allow_unicode=allow_unicode, width=width, sort_keys=False,
         default_flow_style=False)


def test_the_edges_pyyaml_special_cases():
    for s in ["", " ", "\n", "---", "...x", "- a", "-a", ": a", ":", "?", "? x", "#x", "a #x", "a#x",
              "a:", "a: ", "a:b", "\ufeff", "\U0010ffff", "x ", " x", "x\n", "\nx", "a\n b", "a \nb"]:
        for allow_unicode in (None, True):
            same([s, {s: s}], allow_unicode=allow_unicode)



def test_the_alert_rules_are_the_bytes_pyyaml_writes():
    from components.observability import alerts

    assert alerts.render() == ("# Alert rules of kimi-k3 (components/observability/alerts.py); do not "
                               "edit by hand.\n" + yaml.safe_dump(alerts.rules_document(), sort_keys=False,
                                                                  width=100))


def test_the_chart_facts_are_the_data_yaml_safe_load_reads():
    from components.aws_eks import addons

    assert addons.facts() == yaml.safe_load(addons.FACTS_FILE.read_text())
