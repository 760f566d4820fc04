"""Catalog resolution (what to order, found by listing) and ownership markers, over the
scripted network double: no guess is ever made between several candidates."""

import pytest

from components.ctyun_hcc.api.ehpc import Ehpc
from components.ctyun_hcc.catalog import Choice, ResolveError, resolve
from components.ctyun_hcc.ownership import is_ours, marker_token, owner_marker
from tests.unit.ctyun_api_double import ok, transport

REGION, AZ = "bb9fdb42056f11eda1610242ac110002", "cn-huadong1-jsnj1A-public-ctcloud"
TOKEN = "0123456789abcdef0123456789abcdef"


def regions(sfs=True):
    return ok({"resultList": [{"regionID": REGION, "regionName": "华东1", "azList": [
        {"azName": AZ, "isSupportSFS": sfs, "isSupportOceanFS": True}]}]})


def types(*extra):
    roles = [{"clusterTypeRoleName": "master", "clusterTypeRoleUUID": "ctr-m"},
             {"clusterTypeRoleName": "compute", "clusterTypeRoleUUID": "ctr-c"}]
    rows = [{"clusterTypeName": "SCHEDULER", "schedulerType": "SLURM",
             "clusterTypeUUID": "ct-1", "roleList": roles}, *extra]
    return ok({"resultList": rows})


def specs(compute, master):
    def group(role, uuid, items):
        return {"clusterTypeRoleName": role, "clusterTypeRoleUUID": uuid, "specificationList": [
            {"specificationName": n, "specificationUUID": f"dvt-{n}", "specificationType": t}
            for n, t in items]}
    return ok({"resultList": [group("master", "ctr-m", master), group("compute", "ctr-c",
                                                                      compute)]})


def images(master=(("CentOS", "BMS"),), compute=(("Ascend", "BMS"),)):
    def group(role, uuid, items):
        return {"clusterTypeRoleName": role, "clusterTypeRoleUUID": uuid, "imageList": [
            {"imageUUID": f"im-{role}-{n}", "name": n, "version": "1", "nodeType": t,
             "architectureType": "GPU"} for n, t in items]}
    return ok({"resultList": [group("master", "ctr-m", master),
                              group("compute", "ctr-c", compute)]})


def run(script, **choice):
    t, net, _ = transport(script)
    return resolve(Ehpc(t, REGION), AZ, Choice(**choice)), net


def test_the_only_candidates_are_taken_with_four_listings():
    r, net = run([regions(), types(), specs([("a3", "BMS"), ("s3", "VM")], [("a3", "BMS")]),
                  images()])
    assert (r.compute_spec_name, r.master_spec_name, r.compute_spec_type) == ("a3", "a3", "BMS")
    assert (r.compute_image_uuid, r.master_image_uuid) == ("im-compute-Ascend", "im-master-CentOS")
    assert len(net.requests) == 4


def test_several_bare_metal_specifications_are_an_error_listing_them():
    with pytest.raises(ResolveError) as e:
        run([regions(), types(), specs([("a3", "BMS"), ("b3", "BMS")], [("a3", "BMS")])])
    assert "ctyun:specification is not set" in str(e.value)
    assert "a3 (BMS, dvt-a3)" in str(e.value) and "b3 (BMS, dvt-b3)" in str(e.value)
    r, _ = run([regions(), types(), specs([("a3", "BMS"), ("b3", "BMS")], [("b3", "BMS")]),
                images()], specification="b3")
    assert r.compute_spec_uuid == "dvt-b3" and r.master_spec_uuid == "dvt-b3"


def test_master_specification_images_and_types_are_never_guessed():
    with pytest.raises(ResolveError, match="masterSpecification"):
        run([regions(), types(), specs([("a3", "BMS")], [("m1", "VM")])])
    r, net = run([regions(), types(), specs([("a3", "BMS")], [("m1", "VM")]),
                  images(master=()), images(master=(("CTyunOS", "VM"),), compute=())],
                 master_specification="m1")
    assert r.master_spec_type == "VM" and len(net.requests) == 5
    with pytest.raises(ResolveError, match="ctyun:image is not set and 2 compute images"):
        run([regions(), types(), specs([("a3", "BMS")], [("a3", "BMS")]),
             images(compute=(("Ascend", "BMS"), ("Ubuntu", "BMS")))])
    two = {"clusterTypeName": "SCHEDULER", "schedulerType": "SLURM", "clusterTypeUUID": "ct-2",
           "roleList": []}
    with pytest.raises(ResolveError, match="offers 2 SCHEDULER/SLURM types"):
        run([regions(), types(two)])


def test_region_az_and_file_service_are_checked_first():
    with pytest.raises(ResolveError, match="storageType='sfs'.*isSupportSFS false"):
        run([regions(sfs=False)])
    t, _, _ = transport([regions()])
    with pytest.raises(ResolveError, match="ctyun:azName='az9' is not an AZ"):
        resolve(Ehpc(t, REGION), "az9", Choice())
    t, _, _ = transport([regions()])
    with pytest.raises(ResolveError, match="ctyun:regionId='r-x' is not listed"):
        resolve(Ehpc(t, "r-x"), AZ, Choice())


def test_ownership_marker():
    marker = owner_marker(TOKEN)
    assert marker == f"kimi-k3 owner {TOKEN}" and len(marker) <= 128
    assert marker_token(marker) == TOKEN and is_ours(marker, TOKEN)
    assert not is_ours(marker, "f" * 32) and not is_ours("", TOKEN) and not is_ours(None, TOKEN)
    assert not is_ours(f"kimi-k3 owner {TOKEN[:-1]}", TOKEN[:-1])
    with pytest.raises(ValueError):
        owner_marker("not-a-token")
