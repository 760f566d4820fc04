"""EKS versions a cluster can still be created on (components/aws_eks/eks_versions.py), and the
refusal and warnings the aws-eks target gives before anything is bought (target.py)."""

from datetime import date

import pytest

from components.aws_eks import config as cfgmod
from components.aws_eks import eks_versions as ev
from components.aws_eks import target
from components.inference.errors import ConfigError


@pytest.mark.parametrize("version, today, want", [
    ("1.35", date(2026, 12, 2), ev.STANDARD),
    ("1.34", date(2026, 12, 1), ev.STANDARD),
    ("1.34", date(2026, 12, 2), ev.EXTENDED),  # billed extra from the first day after standard support
    ("1.34", date(2027, 12, 1), ev.EXTENDED),
    ("1.34", date(2027, 12, 2), ev.ENDED),
    ("1.31", date(2026, 11, 25), ev.EXTENDED),
    ("1.31", date(2026, 11, 26), ev.ENDED),
    ("1.28", date(2024, 1, 1), ev.ENDED),  # older than the table: ended before its oldest
    ("1.9", date(2026, 12, 2), ev.ENDED),  # 1.9 < 1.29 as versions, not as text
    ("1.36", date(2026, 12, 2), ev.UNLISTED),
    ("1.100", date(2026, 12, 2), ev.UNLISTED),
])
def test_status_by_the_calendar(version, today, want):
    assert ev.status(version, today) == want


def test_the_table_is_contiguous_and_each_extended_support_is_twelve_months_after_standard():
    minors = sorted(int(v.split(".")[1]) for v in ev.SUPPORT)
    assert minors == list(range(minors[0], minors[-1] + 1))
    for standard_ends, extended_ends in ev.SUPPORT.values():
        assert (extended_ends.year - standard_ends.year, extended_ends.month, extended_ends.day) == (
            1, standard_ends.month, standard_ends.day)


def _cfg(version, serving="eks", e2e=False):
    class Cfg:  # the two fields _check_cluster_version reads, and the one property
        cluster_version, hyperpod_end_to_end = version, e2e
    Cfg.serving = serving
    return Cfg()


@pytest.mark.parametrize("version, serving, e2e, fix", [("1.31", "eks", False, "use 1.35 (unset it)"),
                                                         ("1.30", "hyperpod", True, "use 1.34 (unset it)"),
                                                         ("1.28", "eks", False, "use 1.35 (unset it)")])
def test_a_version_eks_no_longer_creates_is_refused_in_one_line(version, serving, e2e, fix):
    with pytest.raises(ConfigError) as e:
        target._check_cluster_version(_cfg(version, serving, e2e), today=date(2026, 12, 2))
    text = str(e.value)
    assert text.startswith(f"kimi-k3:clusterVersion={version}") and "left EKS extended support" in text
    assert text.endswith(fix) and "\n" not in text


def test_extended_support_and_unlisted_versions_are_warned_about(monkeypatch):
    said = []
    monkeypatch.setattr(target.pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    today = date(2026, 12, 2)
    target._check_cluster_version(_cfg(cfgmod.DEFAULT_CLUSTER_VERSION), today=today)
    assert said == []  # the default is in standard support
    target._check_cluster_version(_cfg("1.33"), today=today)
    assert said[-1].startswith("kimi-k3:clusterVersion=1.33 left EKS standard support on 2026-07-29")
    assert "$0.60 per hour instead of $0.10" in said[-1]
    target._check_cluster_version(_cfg("1.36"), today=today)
    assert "newer than kimi-k3's EKS version table" in said[-1]
    n = len(said)
    target._check_cluster_version(_cfg("1.34", "hyperpod", True), today=today)  # said where it is chosen
    assert len(said) == n
    target._check_cluster_version(_cfg("1.33", "hyperpod", True), today=today)
    assert len(said) == n + 1
