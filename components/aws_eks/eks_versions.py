"""EKS Kubernetes versions: which ones a new cluster can still be created on, and which bill
extended support. Pure (the date is passed in).

Why: `kimi-k3:clusterVersion` reaches EKS's CreateCluster only after the Capacity Block (or the
training plan) has been bought, and neither can be cancelled. AWS: "You can create new Amazon EKS
clusters on any version offered in standard or extended support" (Amazon EKS User Guide,
"Understand the Kubernetes version lifecycle on EKS",
https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html): a version past the
end of its extended support cannot be created, so it is refused at preview, before anything is
bought. A version in extended support can be created but bills the control plane $0.60 per hour
instead of $0.10 (AWS Containers blog, "Amazon EKS extended support for Kubernetes versions
pricing"; components/cost/prices.py), so it is warned about.

The dates (end of standard support, end of extended support) are the table "EKS Version Support
Calendar" of aws-samples' EKS operation review ("Last verified: 2026-04-24",
https://aws-samples.github.io/sample-apex-skills/docs/skills/eks-operation-review/references/cluster-lifecycle,
read 2026-12-02); the 1.34 and 1.35 rows agree with https://endoflife.date/amazon-eks (read
2026-12-01). Versions older than the table's oldest ended before it (support runs 14 + 12 months
from a release, in release order). A version newer than the table's newest is not refused (AWS
may list it by now) but warned about: `aws eks describe-cluster-versions` is authoritative.
"""

from __future__ import annotations

from datetime import date
from typing import Dict, Optional, Tuple

#: how messages name the table's source (the module docstring has the URL)
SOURCE = "aws-samples' EKS version calendar, verified 2026-04-24"
#: minor version -> (end of standard support, end of extended support), both UTC days
SUPPORT: Dict[str, Tuple[date, date]] = {
    "1.29": (date(2025, 3, 23), date(2026, 3, 23)),
    "1.30": (date(2025, 7, 23), date(2026, 7, 23)),
    "1.31": (date(2025, 11, 26), date(2026, 11, 26)),
    "1.32": (date(2026, 3, 23), date(2027, 3, 23)),
    "1.33": (date(2026, 7, 29), date(2027, 7, 29)),
    "1.34": (date(2026, 12, 2), date(2027, 12, 2)),
    "1.35": (date(2027, 3, 27), date(2028, 3, 27)),
}
STANDARD, EXTENDED, ENDED, UNLISTED = "standard", "extended", "ended", "unlisted"


def _minor(version: str) -> Tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def status(version: str, today: date) -> str:
    """`standard`, `extended` (billed extra), `ended` (cannot be created) or `unlisted` (newer
    than the table). Billing of extended support starts at the beginning of the day standard
    support ends (UTC), so that day is already extended."""
    if version not in SUPPORT:  # the table has no gaps: before its oldest, or after its newest
        return UNLISTED if _minor(version) > _minor(max(SUPPORT, key=_minor)) else ENDED
    standard_ends, extended_ends = SUPPORT[version]
    if today < standard_ends:
        return STANDARD
    return EXTENDED if today < extended_ends else ENDED


def refusal_reason(version: str, today: date) -> Optional[str]:
    """Why EKS would refuse to create `version` (None when it can)."""
    if status(version, today) != ENDED:
        return None
    ends = SUPPORT.get(version)
    oldest = min(SUPPORT, key=_minor)
    when = ends[1] if ends else SUPPORT[oldest][1]
    return (f"left EKS extended support {'on' if ends else 'by'} {when.isoformat()} ({SOURCE}): EKS creates "
            "clusters only on versions in standard or extended support, so CreateCluster would refuse it "
            "after the capacity is bought")


def warning(version: str, today: date) -> Optional[str]:
    """What to say about a version that can be created but bills extra or is not in the table."""
    s = status(version, today)
    if s == EXTENDED:
        standard_ends, extended_ends = SUPPORT[version]
        return (f"kimi-k3:clusterVersion={version} left EKS standard support on {standard_ends.isoformat()}: the "
                f"control plane bills extended support ($0.60 per hour instead of $0.10) until "
                f"{extended_ends.isoformat()}, when EKS upgrades it ({SOURCE})")
    if s == UNLISTED:
        return (f"kimi-k3:clusterVersion={version} is newer than kimi-k3's EKS version table ({SOURCE}); check "
                "that EKS offers it in aws:region (aws eks describe-cluster-versions) before the capacity is "
                "bought")
    return None


#: AWS: "Because Amazon EKS runs a highly available control plane, you can update only one minor
#: version at a time" and "Once you upgrade a cluster, you can't downgrade to a previous version"
#: (awsdocs/amazon-eks-user-guide latest/ug/clusters/update-cluster.adoc, commit
#: 7b9bf3d4ea24805944cf5534d9cfbe07ee04d076)
UPDATE_SOURCE = "Amazon EKS User Guide, 'Update existing cluster to new Kubernetes version'"


def update_refusal(old: str, new: str) -> Optional[Tuple[str, str]]:
    """Why EKS would refuse to take a running cluster from `old` to `new`, and what to do
    instead (None: it would not): more than one minor version up, or any step down."""
    try:
        (o_major, o_minor), (n_major, n_minor) = _minor(old), _minor(new)
    except (AttributeError, TypeError, ValueError):
        return None  # not a version this module reads: the config grammar has the last word
    if (n_major, n_minor) < (o_major, o_minor):
        return (f"EKS cannot downgrade a cluster ({old} -> {new}; {UPDATE_SOURCE})",
                f"set it back to {old} (the cluster's version)")
    if n_major != o_major or n_minor > o_minor + 1:
        steps = " -> ".join(f"{o_major}.{m}" for m in range(o_minor, n_minor + 1)) \
            if n_major == o_major else f"{old} -> {new}"
        return (f"EKS updates a cluster one minor version at a time ({UPDATE_SOURCE}): "
                f"{old} -> {new} needs one `pulumi up` per step ({steps})",
                f"set it to {o_major}.{o_minor + 1}, run `pulumi up`, then go on one minor version "
                "per `pulumi up`")
    return None
