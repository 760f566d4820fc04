"""The one S3 URI grammar (components/aws_eks/weights/s3uri.py) and its shell twin in stage.sh."""

import re
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from components.aws_eks.weights import s3uri, scripts

GOOD = [
    ("s3://my-bucket", ("my-bucket", "")),
    ("s3://my-bucket/", ("my-bucket", "")),
    ("s3://my.bucket-1/models/moonshotai/Kimi-K3/", ("my.bucket-1", "models/moonshotai/Kimi-K3")),
    ("s3://abc/a=b/c+d/e_f.g", ("abc", "a=b/c+d/e_f.g")),
]
BAD = [
    "s3:/x/y", "https://bucket/x", "s3://", "s3://ab", "s3://Bucket", "s3://bucket_1",
    "s3://-bucket", "s3://bucket-", "s3://a..b", "s3://192.168.1.1", "s3://xn--bucket",
    "s3://bucket-s3alias", "s3://bucket--ol-s3", "s3://" + "a" * 64, "s3://bucket//x", "s3://bucket//",
    "s3://bucket/a//", "s3://bucket///",
    "s3://bucket/a/../b", "s3://bucket/./b", "s3://bucket/a b", "s3://bucket/$(id)",
    "s3://bucket/`id`", "s3://bucket/a;b", "s3://bucket/a\nb", 's3://bucket/"x', "s3://bucket/a'b",
    "s3://bucket/" + "a" * 513,
    # issue 21: `$` matches before a final newline, so re.match let these through
    "s3://bucket\n", "s3://bucket/a\n", "s3://bucket/a/b\n", "s3://192.168.1.1\n",
]


@pytest.mark.parametrize("value,want", GOOD)
def test_accepts(value, want):
    assert tuple(s3uri.parse(value)) == want


@pytest.mark.parametrize("value", BAD)
def test_refuses(value):
    with pytest.raises(ValueError):
        s3uri.parse(value)


def _shell_accepts(value: str) -> bool:
    """stage.sh's own check of KK3_S3_URI (it exits 2 on a bad URI before any AWS call)."""
    r = subprocess.run(["bash", str(scripts.path("stage.sh"))], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "KK3_S3_URI": value, "KK3_DEST": "/models/x",
                            "KK3_S3_CONCURRENCY": "not-a-number"})
    return "KK3_S3_URI" not in r.stdout


@pytest.mark.parametrize("value", [v for v, _ in GOOD] + [b for b in BAD if "\n" not in b
                                                          and len(b) < 200])
def test_stage_script_agrees_on_the_examples(value):
    try:
        s3uri.parse(value)
        python_ok = True
    except ValueError:
        python_ok = False
    # the shell ERE does not know S3's reserved names; it only has to be no looser on syntax
    if python_ok:
        assert _shell_accepts(value)
    elif re.search(r"[^a-z0-9./:=+_-]|//.|/\.\.?(/|$)", value[5:]) or not value.startswith("s3://"):
        assert not _shell_accepts(value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80) | st.text(max_size=80).map(lambda t: t + "\n"))
def test_anything_parsed_is_made_of_safe_characters(text):
    try:
        uri = s3uri.parse("s3://bucket/" + text)
    except ValueError:
        return
    assert re.fullmatch(r"[A-Za-z0-9._=+/-]*", uri.prefix)
    assert ".." not in uri.prefix.split("/") and "//" not in uri.prefix
    assert re.fullmatch(s3uri.SHELL_ERE, str(uri))
