"""E-HPC answers the CTyun contract documents with no rows (create-delegate, shrink,
delete-cluster), and refusals inside nested request parts, at the edges of the contract
(tests/contracts/ctyun, section numbers below):
- 2.1 create-delegate (doc 23951): `returnObj` is an empty object;
- 2.12 hpc/shrink-cluster (doc 23932): a job (`{"jobUUID": ...}`) to wait on;
- 2.13 delete-cluster (older family, 5621): `returnObj` `{}` in the documented example; whether a
  `jobUUID` ever comes is not documented, so one is waited on when present, and anything else is
  refused naming the field (never read as "deleted").
"""

from __future__ import annotations

import pytest

from components.ctyun_hcc.api import ehpc as e
from components.ctyun_hcc.api.errors import RequestError, ResponseError
from tests.unit.test_ctyun_requests_behaviour import C, create, expand

TAIL = "; see docs/ctyun-hcc.md, open questions"


def shape(api, field, problem, got):
    return f"CTyun {api} answered in an undocumented shape: {field} {problem} (got {got!r}){TAIL}"


def _refused(read, value):
    with pytest.raises(ResponseError) as err:
        read(value)
    return str(err.value)


def test_create_delegate_answers_an_empty_object():
    for fine in ({}, None, {"anything": 1}):
        assert e.read_delegate(fine) is None
    for bad in ([], "ok", 0):
        assert _refused(e.read_delegate, bad) == shape("create-delegate", "returnObj", "is not an object", bad)


def test_shrink_answers_the_job_to_wait_on():
    assert e.read_shrink({"jobUUID": "job-rtbbjx4dxyoobvti63v0"}) == "job-rtbbjx4dxyoobvti63v0"
    assert _refused(e.read_shrink, {"jobUUID": ""}) == shape(
        "hpc/shrink-cluster", "returnObj.jobUUID", "is empty", "")
    assert _refused(e.read_shrink, None) == shape("hpc/shrink-cluster", "returnObj", "is missing or null", None)


def test_delete_cluster_answers_nothing_or_a_job():
    assert e.read_delete({}) is None and e.read_delete(None) is None
    assert e.read_delete({"jobUUID": None}) is None and e.read_delete({"jobUUID": ""}) is None
    assert e.read_delete({"jobUUID": "job-1"}) == "job-1"
    assert _refused(e.read_delete, {"jobUUID": 5}) == shape(
        "delete-cluster", "returnObj.jobUUID", "is not a string", 5)
    assert _refused(e.read_delete, "oops") == shape("delete-cluster", "returnObj", "is not an object", "oops")


def test_nested_parts_name_their_own_path_and_api():
    with pytest.raises(RequestError) as err:
        create(compute=C(server=e.ServerOrder("", "BMS", "subnet-1"))).body()
    assert str(err.value) == ("CTyun hpc/create-cluster: computeNodeConfig.bmsComputeNodeOrders[0]"
                              ".specificationUUID='' is required")
    with pytest.raises(RequestError) as err:
        expand(billing=e.Billing(False, "WEEK", 1)).body()
    assert str(err.value) == ("CTyun hpc/expand-cluster: cycleType='WEEK' must be MONTH or YEAR for a "
                              "subscription (onDemand false)")
