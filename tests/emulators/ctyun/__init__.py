"""A local emulator of CTyun's E-HPC and VPC OpenAPI (see server.py and state.py)."""
