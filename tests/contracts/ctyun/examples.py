"""The documented examples of the CTyun contract, as CTyun's documentation gives them.

Each `text` is a documented example (its values as documented, its layout condensed) as captured
in ArvinZJC/ctyun-cli (`openapi-catalogs/ehpc/source.json` request_example / example_response,
`plugins/ehpc/fixtures/*.json`: tag `[ex]`) or as the values of CTyun's Terraform provider structs
(VPC: `[tf]`); sources.py gives each tag's URL and commit, `source` the API doc id and the
contract section. `kind` says what the text is: a `request` body, a `response` (the returnObj)
or a whole `envelope`. `abbreviated` examples elide fields (written "..." here): validate them
with partial=True.

`completion` fills what was abbreviated with the value CTyun's own table gives for that field
(e.g. the create-cluster password: "..." in the example, doc 23930's table
example column has "Zxcvbnm.147"), so the example can be sent as a real request.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Dict, Tuple


@dataclass(frozen=True)
class Example:
    id: str
    api: str
    kind: str                      # request | response | envelope
    source: str
    text: str
    abbreviated: bool = False
    completion: Tuple[Tuple[str, Any], ...] = ()
    completion_source: str = ""

    def doc(self) -> Any:
        """The example as parsed JSON (a fresh copy each call)."""
        return json.loads(self.text)

    def completed(self) -> Any:
        """The example with `completion` applied (dotted paths)."""
        doc = self.doc()
        for path, value in self.completion:
            *parents, last = path.split(".")
            cur = doc
            for p in parents:
                cur = cur[p]
            cur[last] = copy.deepcopy(value)
        return doc


_FROM_BLOCKS = (
    Example(
        'failure-notblank', 'hpc/create-cluster', 'envelope',
        '[doc] example values of the 239xx response tables, contract 1.3',
        abbreviated=True,
        text="""\
{"statusCode": 900, "error": "Hpc.ParamCheck.NotBlank", "message": "...", "returnObj": null}"""),
    Example(
        'list-regions', 'list-regions', 'envelope',
        '[ex] 13086 (2026 example), contract 2.2',
        abbreviated=True,
        text="""\
{"statusCode": 800, "error": "", "message": "成功", "returnObj": {"resultList": [
  {"regionID": "bb9fdb42056f11eda1610242ac110002", "regionName": "...",
   "azList": [{"azName": "cn-huadong1-jsnj1A-public-ctcloud", "isSupportECS": true,
               "isSupportSFS": true, "isSupportOceanFS": true}]}]}}"""),
    Example(
        'list-cluster-types', 'list-cluster-types', 'response',
        '[ex] 23927, contract 2.3',
        abbreviated=False,
        text="""\
{"resultList": [{"clusterTypeName": "SCHEDULER", "schedulerType": "SLURM",
  "clusterTypeUUID": "ct-jn8sm0bejygcdglhpljbddjll9ro",
  "roleList": [{"clusterTypeRoleName": "master", "clusterTypeRoleUUID": "ctr-p5ovib1kiarzxl4mopyf591aofo9"},
               {"clusterTypeRoleName": "compute", "clusterTypeRoleUUID": "ctr-xc9m7wmac0bflq0golsg97tlqg5q"}]}]}"""),
    Example(
        'list-specifications', 'list-specifications', 'response',
        '[ex] 23940, contract 2.4',
        abbreviated=False,
        text="""\
{"resultList": [{"clusterTypeRoleName": "compute", "clusterTypeRoleUUID": "ctr-xc9m7wmac0bflq0golsg97tlqg5q",
  "specificationList": [{"specificationName": "physical.2.large.1.hpc", "specificationType": "BMS",
                         "specificationUUID": "dvt-urvkkx5emxlgptea7x2jfcwuwojj"},
                        {"specificationName": "s3.large.2", "specificationType": "VM",
                         "specificationUUID": "dvt-dlmzogfdvcybe8bhndz8uepgz5ki"}]}]}"""),
    Example(
        'list-available-images', 'list-available-images', 'response',
        '[ex] 23941, contract 2.5',
        abbreviated=False,
        text="""\
{"resultList": [
  {"clusterTypeRoleName": "master", "clusterTypeRoleUUID": "ctr-p5ovib1kiarzxl4mopyf591aofo9",
   "imageList": [{"imageUUID": "im-ckpyqfhbdkkacij5zfsn0-master", "name": "CentOS", "version": "7.9",
                  "nodeType": "BMS", "architectureType": "CPU"}]},
  {"clusterTypeRoleName": "compute", "clusterTypeRoleUUID": "ctr-xc9m7wmac0bflq0golsg97tlqg5q",
   "imageList": [{"imageUUID": "im-ckpyqfhbdkkacij5zfs0-compute", "name": "CentOS", "version": "7.9",
                  "nodeType": "BMS", "architectureType": "CPU"}]}]}"""),
    Example(
        'create-cluster-request', 'hpc/create-cluster', 'request',
        '[ex] 23930 request_example (abbreviated), contract 2.6',
        abbreviated=True,
        completion=(("masterNodeConfig.rootPassword", "Zxcvbnm.147"),),
        completion_source="doc 23930 body table, rootPassword example column "
                          "(ArvinZJC/ctyun-cli openapi-catalogs/ehpc/"
                          "public-doc-evidence.json @6dcc231)",
        text="""\
{"regionID": "81f7728662dd11ec810800155d307d5b", "azName": "az3", "clusterName": "openapi2",
 "clusterTypeUUID": "ct-jn8sm0bejygcdglhpljbddjll9ro", "vpcID": "vpc-dai33ycf2d",
 "storageConfig": {"storageCreateMethod": "AutoCreate",
   "oceanFSOrder": {"subnetID": "subnet-shrmxt125y", "oceanFSName": "oceanfs-openapi",
                    "oceanFSSize": 100, "oceanFSType": "capacity"}},
 "masterNodeConfig": {"clusterTypeRoleUUID": "ctr-p5ovib1kiarzxl4mopyf591aofo9",
   "nodeCreateMethod": "AutoCreate", "imageUUID": "im-wcerro99q0znmdtbhz3cpbnebp3x",
   "eipCreateMethod": "AutoCreate", "eipBandwidth": 100, "rootPassword": "...",
   "ecsMasterNodeOrder": {"specificationUUID": "dvt-rcinutxptm5ubrciomygey8sc8jw",
     "subnetID": "subnet-shrmxt125y", "systemDiskType": "SATA", "systemDiskSize": 111}},
 "computeNodeConfig": {"clusterTypeRoleUUID": "ctr-xc9m7wmac0bflq0golsg97tlqg5q",
   "nodeCreateMethod": "AutoCreate",
   "ecsComputeNodeOrders": [{"queueName": "debug", "imageUUID": "im-jkei1ypxoixsn4bilvgellrfaej5",
     "orderCount": 2, "specificationUUID": "dvt-cdjkqezm3xpiatpdyw4tljobwaln",
     "subnetID": "subnet-shrmxt125y", "systemDiskType": "SATA", "systemDiskSize": 122}]},
 "cycleCount": 1, "cycleType": "MONTH", "onDemand": false}"""),
    Example(
        'create-cluster-answer', 'hpc/create-cluster', 'envelope',
        '[ex] 23930 example_response, contract 2.6',
        abbreviated=False,
        text="""\
{"statusCode": 800, "error": "", "message": "成功", "returnObj": {"jobUUID": "job-rtbbjx4dxyoobvti63v0",
 "masterOrderID": "9360ea21613540999e2b49c033091f4b", "masterOrderNO": "20251224104521028947"}}"""),
    Example(
        'list-clusters', 'hpc/list-clusters', 'response',
        '[ex] 23928, contract 2.8',
        abbreviated=False,
        text="""\
{"currentCount": 1, "totalCount": 1, "totalPage": 1, "resultList": [{"clusterName": "sit-04162",
 "azName": "cn-xinan1-1A", "clusterUUID": "cl-qagaqq3x6bcrvmy5ohpx6gmbzls9", "vpcID": "vpc-kzcgexytpe",
 "securityGroupID": "sg-ex6h4wnki2", "clusterTypeName": "SCHEDULER", "schedulerType": "SLURM",
 "clusterTypeUUID": "ct-jn8sm0bejygcdglhpljbddjll9ro", "totalMasterNodeCount": 1,
 "totalComputeNodeCount": 5, "runningComputeNodeCount": 5, "creatingComputeNodeCount": 0,
 "stoppedComputeNodeCount": 0, "otherStatusComputeNodeCount": 0, "totalCpuCores": 10,
 "allocatedCpuCores": 0, "availableCpuCores": 10, "totalMemory": 18945, "allocatedMemory": 5277,
 "availableMemory": 13668, "publicIP": null, "innerIP": "192.168.0.45",
 "clusterAvailableStatus": "available", "createTime": "2026-04-16 14:54:16"}]}"""),
    Example(
        'list-nodes', 'hpc/list-nodes', 'response',
        '[ex] 23938 (abbreviated with "..."), contract 2.9',
        abbreviated=True,
        text="""\
{"currentCount": 2, "totalCount": 7, "totalPage": 4, "resultList": [
 {"nodeName": "sit-04162master0001", "nodeUUID": "nd-ljxagwt0sjrvhefmnzlurrkficv4", "nodeRole": 0,
  "nodeType": "VM", "nodeStatus": "running", "nodeSchedulerStatus": "idle", "innerIP": "192.168.0.45",
  "publicIP": "", "queueName": null, "subnetID": "subnet-rtqtujtbb9", "onDemand": true, "...": "..."},
 {"nodeName": "sit-04162compute0006", "nodeUUID": "nd-g5z8se7ubfn5iervyapyxkqsnm4f", "nodeRole": 1,
  "nodeType": "BMS", "nodeStatus": "running", "nodeSchedulerStatus": "down", "innerIP": "192.168.0.39",
  "publicIP": null, "queueName": "a2", "specificationName": "physical.2.large.1.hpc", "...": "..."}]}"""),
    Example(
        'list-queues', 'hpc/list-queues', 'envelope',
        '[ex] 23947 and plugins/ehpc/fixtures/ehpc-hpc-queue-list.json, contract 2.10',
        abbreviated=False,
        text="""\
{"statusCode": 800, "error": "", "message": "成功", "returnObj": [{"queueName": "a2",
 "queueUUID": "pt-g6wwn5lcxjalhdjxrctnlilnowro", "queueStatus": "creating", "isDefault": true,
 "totalNodeQuantity": 0, "idleNodeQuantity": 0, "idleCPUQuantity": 0, "createTime": "2025-12-17 09:34:42"}]}"""),
    Example(
        'expand-cluster-request', 'hpc/expand-cluster', 'request',
        '[ex] 23931 request_example, contract 2.11',
        abbreviated=False,
        text="""\
{"regionID": "200000004062", "azName": "cn-nm-hett5-1a-public-test",
 "clusterUUID": "cl-eplu3cnxgemao7cxytqz9tmrxlju", "clusterTypeRoleUUID": "ctr-xc9m7wmac0bflq0golsg97tlqg5q",
 "nodeCreateMethod": "AutoCreate", "onDemand": true,
 "ecsComputeNodeOrders": [{"orderCount": 2, "imageUUID": "im-ia44ygv7juejfdgyc4heb4rkcfaz",
   "queueUUID": "pt-vkllxrtf8iireebbwlperkqyidrl", "specificationUUID": "dvt-alca2xghu571loguxnyuau2noft1",
   "subnetID": "subnet-m6lfipw3yp", "systemDiskType": "SATA", "systemDiskSize": 100}]}"""),
    Example(
        'shrink-cluster-request', 'hpc/shrink-cluster', 'request',
        '[ex] 23932 request_example, contract 2.12',
        abbreviated=False,
        text="""\
{"regionID": "100054c0416811e9a6690242ac110002", "azName": "cn-huadong1-jsnj1A-public-ctcloud",
 "clusterUUID": "cl-n4oqobl9rpsciy9fkfeinjz8f0yi",
 "nodeUUIDList": ["nd-eojkpygs5dzaz2icpcm9287k6mvi", "nd-eojkpygs5dzaz2icpcm9287k6mss"]}"""),
    Example(
        'vpc-new-list', 'vpc/new-list', 'response',
        '[tf] 10040788 struct values, contract 3.2',
        abbreviated=False,
        text="""\
{"vpcs": [{"vpcID": "vpc-dai33ycf2d", "name": "k3-vpc", "description": "", "CIDR": "192.168.0.0/16",
  "ipv6Enabled": false, "enableIpv6": false, "ipv6CIDRS": [], "subnetIDs": ["subnet-shrmxt125y"],
  "natGatewayIDs": [], "secondaryCIDRS": [], "projectID": "0"}], "totalCount": 1, "currentCount": 1, "totalPage": 1}"""),
    Example(
        'describe-security-group', 'vpc/describe-security-group-attribute', 'response',
        '[tf] 10040946 struct values (abbreviated), contract 3.9',
        abbreviated=True,
        text="""\
{"securityGroupName": "k3-sg", "id": "sg-p2qs0qmigm", "vmNum": "0", "vpcID": "vpc-dai33ycf2d",
 "securityGroupRuleList": [{"id": "...", "direction": "ingress", "action": "accept", "priority": 1,
   "protocol": "TCP", "ethertype": "IPv4", "destCidrIp": "203.0.113.0/24", "range": "22"}]}"""),
)

_INLINE = (
    Example("create-delegate-request", "create-delegate", "request",
            "[ex] 23951 documented request example `{}`, contract 2.1", text="{}"),
    Example("query-job-result-answer", "query-job-result", "envelope",
            "[ex] 23926 example, contract 2.7", abbreviated=True,
            text='{"returnObj": {"status": "success"}}'),
    Example("expand-cluster-answer", "hpc/expand-cluster", "response",
            "[ex] 23931 answer (order ids abbreviated), contract 2.11",
            text='{"jobUUID": "job-vln9oqhrvl7txxx64gl1", "masterOrderID": "fddb...", '
                 '"masterOrderNO": "2025..."}'),
    Example("delete-cluster-answer", "delete-cluster", "envelope",
            "[old 5621] documented answer in the older envelope, contract 2.13",
            text='{"returnObj": {}, "errorCode": "", "message": "SUCCESS", '
                 '"description": "...", "statusCode": 800}'),
    Example("create-security-group-answer", "vpc/create-security-group", "response",
            "[tf] 10040938 struct values, contract 3.7", text='{"securityGroupID": "sg-p2qs0qmigm"}'),
)



#: bare-metal and file-system answers, as CTyun's documentation gives them (the catalogue's
#: example_response, key order kept)
_CATALOG = (
    Example('raid-type-list', 'ebm/raid-type-list', 'envelope',
            '[catalog 4576] documented example answer (= plugins/dps/fixtures/dps-raid-type-list.json), contract 7.2',
            abbreviated=False,
            text=(
                '{"returnObj": {"totalCount": 2, "results": [{"uuid": "r-sfykwibcvcyztuez3mk1klyha9nn", '
                '"volumeType": "SYSTEM", "descriptionEn": "RAID0 means that the entire logical disk data is '
                'striped among multiple physical disks, it allows read/write in parallel and provides the fastest'
                ' speed with no redundancy.", "deviceType": "physical.t2.large.1", "descriptionZh": '
                '"RAID0是整个逻辑盘的数据是被分条（stripped）分布在多个物理磁盘上，可以并行读/写，提供最快的速度，但没有冗余能力。", "nameEn": "RAID0", '
                '"volumeDetail": "2*480 SSD", "nameZh": "RAID0"}, {"uuid": "r-wtzluqacgzzxgunnabdkpnpjew3d", '
                '"volumeType": "SYSTEM", "descriptionEn": "RAID1 also known as mirroring method, provides data '
                'redundancy. In the entire mirroring process, only half of the disk capacity is valid, the other '
                'half is used to store the same data. RAID1 has taken security into consideration with half '
                'capacity and full speed.", "deviceType": "physical.t2.large.1", "descriptionZh": '
                '"RAID1又称镜像方式，提供数据的冗余。在整个镜像过程中，只有一半的磁盘容量是有效的（另一半磁盘容量用来存放同样的数据），RAID1考虑了安全性，容量减半、速度不变。", "nameEn":'
                ' "RAID1", "volumeDetail": "2*960G SSD", "nameZh": "RAID1"}]}, "errorCode": "", "message": '
                '"SUCCESS", "description": "成功", "statusCode": 800}'
            )),
    Example('device-type-list', 'ebm/device-type-list', 'envelope',
            '[catalog 4574] documented example answer (= plugins/dps/fixtures/dps-flavor-list.json), contract 7.1',
            abbreviated=False,
            text=(
                '{"statusCode": 800, "errorCode": "", "message": "SUCCESS", "description": "成功", "returnObj": '
                '{"totalCount": 1, "results": [{"cpuModel": "5218", "nvmeVolumeType": "", "nameZh": "大数据服务器-1", '
                '"nvmeVolumeInterface": "", "updateTime": "2023-05-24 17:09:39", "systemVolumeSize": 480, '
                '"systemVolumeType": "SSD", "cpuManufacturer": "Intel", "nameEn": "Dell PowerEdge R740", "id": '
                '23, "nicAmount": 2, "nvmeVolumeAmount": 0, "smartNicExist": false, "cpuFrequency": "2.3", '
                '"cpuThreadAmount": 2, "systemVolumeInterface": "SATA", "gpuManufacturer": "", "dataVolumeType": '
                '"HDD", "gpuModel": "", "deviceType": "physical.s4.2xlarge1.6", "systemVolumeAmount": 2, '
                '"dataVolumeDescription": "12*8000GB(SATA)", "gpuSize": 0, "memAmount": 8, "memSize": 32, '
                '"gpuAmount": 0, "systemVolumeDescription": "2*480GB(SSD)", "memFrequency": 2666, "azName": '
                '"cn-huadong1-jsnj1A-public-ctcloud", "nvmeVolumeSize": 0, "cpuSockets": 2, "cpuAmount": 16, '
                '"createTime": "2023-05-24 17:09:39", "supportCloud": false, "dataVolumeAmount": 12, '
                '"numaNodeAmount": 2, "region": "cn-huadong1-public-ctcloud", "dataVolumeSize": 8000, '
                '"dataVolumeInterface": "SATA", "nicRate": 10, "cloudBoot": false, "enableShadowVpc": false, '
                '"computeIBAmount": 0, "computeIBRate": 0, "storageIBAmount": 0, "storageIBRate": 0, '
                '"computeRoCEAmount": 0, "computeRoCERate": 0, "storageRoCEAmount": 0, "storageRoCERate": 0, '
                '"deviceModel": "bf2", "project": "standard", "cloudVolumeAmount": 9, "supportLava": false, '
                '"isSuperPod": false}]}}'
            )),
    Example('sfs-info', 'sfs/info-sfs', 'envelope',
            '[catalog 8012] documented example answer (no errorCode in it), contract 8.1',
            abbreviated=True,
            text=(
                '{"returnObj": {"updateTime": 1678342191000, "projectID": "0", "usedSize": 34, "phySharePath": '
                '"100.120.0.100:/mnt/sfs_perf/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "kmsUUID": "", '
                '"isEncrypt": false, "sfsSize": 1024, "vpceSharePath": [{"vpcID": "vpc-66jrjem533", '
                '"windowsSharePathV6": "", "windowsSharePath": "", "vpcName": "vpc-tzbtest", "sharePath": '
                '"192.168.0.7:/mnt/sfs_perf/4c7e60035aafeb9f66f9ea9f8b98e5fb_vo12l2ks9zhr4g5f", "sharePathV6": '
                '"", "endpointID": "endpoint-skdflewjfs"}], "onDemand": false, "regionID": '
                '"81f7728662dd11ec810800155d307d5b", "createTime": 1678239529000, "sharePath": '
                '"100.127.155.200:/mnt/sfs_perf/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "mountCount":'
                ' 0, "sfsType": "performance", "windowsSharePath": "", "expireTime": 1709861929000, '
                '"sfsProtocol": "nfs", "azName": "az1", "cephID": "5czqobzhm0d4rjbx", "sfsUID": '
                '"73725123-0de1-5424-8115-7da2a24f3dfb", "sharePathV6": "", "sfsStatus": "available", '
                '"windowsSharePathV6": "", "protectSwitch": true, "sfsName": "yyx-sfs-test-003"}, "message": '
                '"SUCCESS", "description": "成功", "statusCode": 800}'
            )),
    Example('sfs-list', 'sfs/list-sfs', 'envelope',
            '[catalog 8014] documented example answer (no errorCode in it), contract 8.1',
            abbreviated=True,
            text=(
                '{"returnObj": {"list": [{"updateTime": 1678342191000, "projectID": "0", "usedSize": 34, '
                '"phySharePath": "100.120.0.100:/mnt/sfs_perf/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx",'
                ' "kmsUUID": "", "isEncrypt": false, "sfsSize": 1024, "vpceSharePath": [{"vpcID": '
                '"vpc-66jrjem533", "windowsSharePathV6": "", "windowsSharePath": "", "vpcName": "vpc-tzbtest", '
                '"sharePath": "192.xxx.x.x:/mnt/sfs_perf/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", '
                '"sharePathV6": "", "endpointID": "endpoint-skdflewjfs"}], "onDemand": false, "regionID": '
                '"81f7728662dd11ec810800155d307d5b", "createTime": 1678239529000, "sharePath": '
                '"100.xxx.xxx.xxx:/mnt/sfs_perf/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "mountCount":'
                ' 0, "sfsType": "performance", "windowsSharePath": "", "expireTime": 1709861929000, '
                '"sfsProtocol": "nfs", "azName": "az1", "cephID": "5czqobzhm0d4rjbx", "sfsUID": '
                '"73725123-0de1-5424-8115-7da2a24f3dfb", "sharePathV6": "", "sfsStatus": "available", '
                '"windowsSharePathV6": "", "protectSwitch": true, "sfsName": "yyx-sfs-test-003"}], "total": 1, '
                '"totalCount": 1, "currentCount": 1, "pageSize": 10, "pageNo": 1}, "message": "SUCCESS", '
                '"description": "成功", "statusCode": 800}'
            )),
    Example('oceanfs-info', 'oceanfs/info-sfs', 'envelope',
            '[catalog 13429] documented example answer (no errorCode in it), contract 8.2',
            abbreviated=True,
            text=(
                '{"returnObj": {"updateTime": 1678342191000, "projectID": "0", "usedSize": 34, "sfsSize": 1024, '
                '"vpceSharePath": [{"vpcID": "vpc-66jrjem533", "windowsSharePathV6": "", "windowsSharePath": "", '
                '"vpcName": "vpc-tzbtest", "sharePath": '
                '"192.xxx.x.x:/mnt/sfs_mass/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "sharePathV6": '
                '"", "endpointID": "endpoint-skdflewjfs"}], "onDemand": false, "regionID": '
                '"81f7728662dd11ec810800155d307d5b", "createTime": 1678239529000, "sharePath": '
                '"100.127.155.200:/mnt/sfs_mass/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "mountCount":'
                ' 0, "sfsType": "massive", "windowsSharePath": "", "expireTime": 1709861929000, "sfsProtocol": '
                '"nfs", "azName": "az1", "cephID": "5czqobzhm0d4rjbx", "sfsUID": '
                '"73725123-0de1-5424-8115-7da2a24f3dfb", "sharePathV6": "", "sfsStatus": "available", '
                '"windowsSharePathV6": "", "sfsName": "yyx-oceanfs-test-003", "protectSwitch": true, '
                '"used_size_charge": false, "usedSizeCharge": false}, "message": "SUCCESS", "description": "成功", '
                '"statusCode": 800}'
            )),
    Example('oceanfs-list', 'oceanfs/list-sfs', 'envelope',
            '[catalog 13431] documented example answer (no errorCode, totalCount or currentCount in it), contract 8.2',
            abbreviated=True,
            text=(
                '{"returnObj": {"total": 1, "list": [{"updateTime": 1678342191000, "projectID": "0", "usedSize": '
                '34, "sfsSize": 1024, "vpceSharePath": [{"vpcID": "vpc-66jrjem533", "windowsSharePathV6": "", '
                '"windowsSharePath": "", "vpcName": "vpc-tzbtest", "sharePath": '
                '"192.xxx.x.x:/mnt/sfs_mass/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "sharePathV6": '
                '"", "endpointID": "endpoint-skdflewjfs"}], "onDemand": false, "regionID": '
                '"81f7728662dd11ec810800155d307d5b", "createTime": 1678239529000, "sharePath": '
                '"100.127.155.200:/mnt/sfs_mass/a7135589f022439c1edefc74b9336f7a_5czqobzhm0d4rjbx", "mountCount":'
                ' 0, "sfsType": "massive", "windowsSharePath": "", "expireTime": 1709861929000, "sfsProtocol": '
                '"nfs", "azName": "az1", "cephID": "5czqobzhm0d4rjbx", "sfsUID": '
                '"73725123-0de1-5424-8115-7da2a24f3dfb", "sharePathV6": "", "sfsStatus": "available", '
                '"windowsSharePathV6": "", "sfsName": "yyx-oceanfs-test-003", "protectSwitch": true, '
                '"used_size_charge": false, "usedSizeCharge": false}], "pageSize": 1, "pageNo": 1}, "message": '
                '"SUCCESS", "description": "成功", "statusCode": 800}'
            )),
)

#: the EIP and group-rule examples: the values of CTyun's Terraform structs (no documented
#: example answer is in the sources)
_STRUCTS = (
    Example("ingress-from-group-request", "vpc/create-security-group-ingress", "request",
            "[tf] ctvpc_create_sg_ingress_rule_api.go struct (remoteType always sent, no range "
            "for ANY) and [ctdoc 10105035] (the preset rule: all protocols from the group "
            "itself), contract 3.11",
            text='{"regionID": "bb9fdb42056f11eda1610242ac110002", "securityGroupID": '
                 '"sg-p2qs0qmigm", "clientToken": "4f7b9d0c2e6a4c1f9b3d8e7a6c5b4a39", '
                 '"securityGroupRules": [{"direction": "ingress", "remoteType": 1, '
                 '"remoteSecurityGroupID": "sg-p2qs0qmigm", "action": "accept", "priority": 1, '
                 '"protocol": "ANY", "ethertype": "IPv4"}]}'),
    Example("eip-show", "eip/show", "response",
            "[tf] internal/core/ctyun-sdk-endpoint/ctvpc/eip_show.go eipShowRealResponse, "
            "contract 3.13",
            text='{"ID": "eip-9jpeyl0frh", "name": "eip-hpc", "eipAddress": "203.0.113.9", '
                 '"associationID": "ss-9d4u1yd1jr0a3xeu59fq9svecxql", "associationType": '
                 '"PHYSICALINSTANCE", "privateIpAddress": "192.168.0.45", "bandwidth": 100, '
                 '"bandwidthID": "", "bandwidthType": "standalone", "status": "ACTIVE", '
                 '"tags": "", "createdAt": "2026-04-16T06:54:16Z", "updatedAt": '
                 '"2026-04-16T06:54:16Z", "expiredAt": ""}'),
)

EXAMPLES: Tuple[Example, ...] = _FROM_BLOCKS + _INLINE + _CATALOG + _STRUCTS
BY_ID: Dict[str, Example] = {e.id: e for e in EXAMPLES}
