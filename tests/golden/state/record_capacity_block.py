"""Record CapacityBlock state as the code before the camelCase rename wrote it (how
tests/golden/state/capacity_block.json was made; kept for provenance, it only runs there):

    git worktree add /tmp/old fd2e6927631e2fb2a967eb4649f4e3c19fdea165 && cd /tmp/old
    python tests/golden/state/record_capacity_block.py $(git rev-parse HEAD) > capacity_block.json

create's outputs through the engine's wire form (protobuf Struct), plus the inputs the old
program (aws_eks/target.py of that commit) sent. EC2 is botocore's Stubber."""
import json
import sys
from datetime import datetime, timedelta, timezone

import boto3
from botocore.stub import ANY, Stubber

sys.path.insert(0, ".")
from components.aws_eks import capacity as cap  # noqa: E402 (the checkout's own code)
from tests.integration.dynamic_host import from_struct, serialized, to_struct  # noqa: E402
from tests.unit.test_aws_capacity import (IDENTITY, ITYPE, LOOKUP, STACK_TAGS,  # noqa: E402
                                          offer_api, reservation_api)

#: a block far ahead, so the recorded state does not age into "ended" in a test
T0 = datetime(2031, 6, 2, 11, 30, tzinfo=timezone.utc)

CR = "cr-0123456789abcdef0"
client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="testing", aws_secret_access_key="testing")
cap.ec2_client = lambda props, max_attempts=5: client
cap._now = lambda: T0 - timedelta(hours=2)
aws = {"aws": {"region": "us-east-2", "profile": None}}
out = {"commit": sys.argv[1], "provider": serialized(cap.CapacityBlockProvider())}
# what the old program (aws_eks/target.py) passed: adopt mode
adopt_in = {"region": "us-east-2", "instance_type": ITYPE, "instance_count": 1, "reservation_id": CR,
            "duration_hours": None, "earliest_start": None, "latest_start": None,
            "max_upfront_fee_usd": None, "stack_identity": None, **aws}
buy_in = {"region": "us-east-2", "instance_type": ITYPE, "instance_count": 1, "reservation_id": None,
          "duration_hours": 24, "earliest_start": "2031-06-01T00:00:00Z", "latest_start": None,
          "max_upfront_fee_usd": 90000, "stack_identity": IDENTITY, **aws}
placeholders = {k: None for k in ("reservation_id", "availability_zone", "start_date", "end_date",
                                  "instances_stop_at", "upfront_fee_usd", "purchased", "state",
                                  "adopted_by_tag", "requested")}
for name, inputs in (("adopted", adopt_in), ("bought", buy_in)):
    sent = from_struct(to_struct({**placeholders, **inputs}))  # None dropped, numbers as floats
    with Stubber(client) as stub:
        if name == "adopted":
            stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
                reservation_api(CR, state="scheduled", start=T0)]}, {"CapacityReservationIds": [CR]})
        else:
            stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, LOOKUP)
            stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [
                offer_api("cb-1", 80_000, start=T0)]}, {"InstanceType": ITYPE, "InstanceCount": 1, "CapacityDurationHours": 24, "StartDateRange": ANY})
            stub.add_response("purchase_capacity_block", {"CapacityReservation": reservation_api(
                CR, tags=STACK_TAGS, start=T0)}, {"CapacityBlockOfferingId": "cb-1", "InstancePlatform": "Linux/UNIX", "TagSpecifications": ANY})
        res = cap.CapacityBlockProvider().create(dict(sent))
    state = from_struct(to_struct(res.outs))
    out[name] = {"id": res.id, "inputs": sent, "outputs": state}
json.dump(out, sys.stdout, indent=1, sort_keys=True)
