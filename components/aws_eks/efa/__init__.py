"""How the nodes of one replica talk on aws-eks: NCCL over EFA (transport.py: the facts and the
environment as data; render.py: the pod parts; efa_userspace.sh and efa_check.sh: what runs in
the pod)."""
