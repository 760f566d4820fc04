"""Which of several blocks this stack already bought `pulumi up` adopts (never a second purchase).

More than one tagged block can exist (a lost answer relooked after a retry bought one, a block
bought for a replaced node group): the stack adopts one, deterministically, the same on every
run: a block in the zone it prefers (the zone of the block it replaces, where its subnets
and node group are), then the earliest start, then the lowest reservation id. EC2 is
botocore's Stubber on the real EC2 service model (DescribeCapacityReservations).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from botocore.stub import Stubber

from components.aws_eks import capacity as cap
from tests.unit.test_aws_capacity import BUY, LOOKUP, STACK_TAGS, T0, reservation_api
from tests.unit.test_aws_purchase import ec2_client

NOW = T0 - timedelta(days=2)


def _block(rid, zone, start):
    r = reservation_api(rid, state="scheduled", start=start, tags=STACK_TAGS)
    return {**r, "AvailabilityZone": zone}


#: listed in this order by EC2: the first listed is never the right answer below
LISTED = [_block("cr-0dddddddddddddddd", "us-east-2b", T0 + timedelta(days=1)),
          _block("cr-0aaaaaaaaaaaaaaaa", "us-east-2a", T0 + timedelta(days=3)),
          _block("cr-0cccccccccccccccc", "us-east-2b", T0),
          _block("cr-0bbbbbbbbbbbbbbbb", "us-east-2c", T0)]


@pytest.mark.parametrize("prefer,want", [
    ("us-east-2a", "cr-0aaaaaaaaaaaaaaaa"),   # the preferred zone, though it starts last
    ("us-east-2b", "cr-0cccccccccccccccc"),   # in the zone, the earlier start
    (None, "cr-0bbbbbbbbbbbbbbbb"),           # no preference: earliest start, then lowest id
    ("us-east-2d", "cr-0bbbbbbbbbbbbbbbb"),   # no block there: as without a preference
])
def test_one_of_several_tagged_blocks_is_adopted_by_zone_then_start_then_id(prefer, want):
    client = ec2_client()
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": LISTED}, LOOKUP)
        out = cap.acquire(client, BUY, NOW, prefer_zone=prefer)
        stub.assert_no_pending_responses()  # adopted: no offering looked up, nothing bought
    # bought by this stack earlier (purchased), found again by its tag (adopted_by_tag)
    assert out["reservation_id"] == want and out["adopted_by_tag"] is True and out["purchased"] is True
