"""A local emulator of CTyun's E-HPC and VPC OpenAPI, built from the published contract.

gateway.py (EOP signature, date, keys), envelope.py (answers per API family), state.py (the
account and its settings), ehpc_ops.py / vpc_ops.py (the operations; vpc_ops also the EIP
reads), ebm_ops.py (bare-metal device and RAID types, the local-disk and subnet rules of bms
orders), storage_ops.py (SFS/OceanFS reads), catalog.py (what the E-HPC catalog lists),
seed.py (another stack's resources), server.py (HTTP, faults, admin), harness.py (run it as a
process). Constants tests use: state.REGION, AZ, AZ2, VPC, SUBNET,
DEFAULT_SG; catalog.CLUSTER_TYPE, SCHEDULER, SPEC_910C, SPEC_MASTER_VM.
"""
