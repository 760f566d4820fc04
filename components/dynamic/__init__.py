"""What kimi-k3's Pulumi dynamic providers share: one base class (`provider.py`) and the one
secret scrubber (`redact.py`) that every text leaving a provider, the CTyun client or a progress
file goes through.

Why a package of its own: ten API-backed providers (CTyun and AWS) and the SSH-backed steps
repeated the same skeleton (strip `__provider`, defaults, diff with replace keys, deadlines,
progress, redaction) and had drifted apart; two scrubbers with different strengths guarded
different exits. Importing this package imports nothing else: `redact.py` is pure,
`provider.py` imports Pulumi.
"""
