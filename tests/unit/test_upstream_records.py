"""The upstream files recorded in tests/contracts/upstream: every one index.yaml lists is there,
and a file that is not recorded is named with the command that records it (never skipped)."""

import pytest
import yaml

from tests.contracts import upstream


def test_every_indexed_file_is_recorded():
    entries = yaml.safe_load(upstream.INDEX.read_text(encoding="utf-8"))
    assert entries
    for e in entries:
        repo = e["repository"].removeprefix("https://github.com/")
        for path in e["paths"]:
            assert upstream.read(repo, str(e["commit"]), path), (repo, path)
        assert e["licence"] == "Apache-2.0" and e["kept"].split()[0] in ("verbatim", "reduced")


def test_a_missing_record_names_the_tool():
    with pytest.raises(FileNotFoundError, match="tools/record_upstream.py aws/eks-charts"):
        upstream.read("aws/eks-charts", "0" * 40, "stable/x/values.yaml")


def test_the_crd_reduction_keeps_keywords_and_only_the_named_paths():
    crd = {"kind": "CustomResourceDefinition",
           "spec": {"group": "g", "names": {"kind": "K"}, "versions": [
               {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                   "properties": {"spec": {"type": "object", "required": ["worker"], "properties": {
                       "worker": {"type": "object", "description": "d", "properties": {
                           "args": {"type": "array", "description": "kept",
                                    "items": {"type": "string"}}}},
                       "other": {"type": "object", "properties": {"x": {"type": "string"}}}}}}}}},
               {"name": "v1alpha1", "served": True, "storage": False}]}}
    out = upstream.reduce_crd(crd)
    spec = out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["worker"] and spec["properties"]["other"]["properties"] == {"x": {}}
    assert spec["properties"]["worker"]["properties"]["args"] == {
        "type": "array", "description": "kept", "items": {"type": "string"}}
    assert "description" not in spec["properties"]["worker"]
    assert out["spec"]["versions"][1] == {"name": "v1alpha1", "served": True, "storage": False}
