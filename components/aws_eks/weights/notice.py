"""What `pulumi destroy` says about the weights mirror (a dynamic resource whose delete speaks).

With `kimi-k3:keepWeightsMirror: true` the bucket is retained (retain_on_delete) and destroy says
that it keeps it and what it costs per month; otherwise it says the bucket and its objects go.
The provider holds no client and calls no API: it only remembers the bucket's name and size.
"""

from __future__ import annotations

import pulumi.dynamic as dyn

from ...dynamic.provider import DynamicResource, Provider

#: S3 Standard storage list price for the first 50 TB/month in us-east-1 and us-east-2 (AWS S3
#: pricing page); other regions differ by a few percent: the message says so
S3_STANDARD_USD_PER_GB_MONTH = 0.023


def monthly_usd(gb: float) -> float:
    return gb * S3_STANDARD_USD_PER_GB_MONTH


def destroy_message(bucket: str, keep: bool, gb: float) -> str:
    if keep:
        return (f"keeping the weights mirror s3://{bucket} (kimi-k3:keepWeightsMirror): ~{gb:,.0f} GB, "
                f"about ${monthly_usd(gb):,.2f}/month at S3 Standard's us-east list price; delete it "
                f"with `aws s3 rb s3://{bucket} --force` when it is no longer needed")
    return f"deleting the weights mirror s3://{bucket} and its ~{gb:,.0f} GB"


class MirrorNoticeProvider(Provider):
    """Remembers the bucket; its delete says what happens to it. Another bucket replaces it."""

    DIFF_KEYS = ("bucket", "keep", "gb")
    REPLACE_KEYS = ("bucket",)
    DELETE_BEFORE_REPLACE = False

    def create(self, props):
        return dyn.CreateResult(id_=str(props["bucket"]), outs=props)

    def update(self, id_, olds, news):
        return dyn.UpdateResult(outs=news)

    def delete(self, id_, props):
        self.warn(destroy_message(str(props.get("bucket")), bool(props.get("keep")),
                                  float(props.get("gb") or 0)))


class MirrorNotice(DynamicResource, module="aws", name="WeightsMirrorNotice"):
    def __init__(self, name: str, bucket, keep: bool, gb: float, opts=None):
        super().__init__(MirrorNoticeProvider(), name, {"bucket": bucket, "keep": keep, "gb": gb}, opts)
