"""AWS calls made by kimi-k3's own dynamic providers, with the stack's region and credentials.

pulumi-aws resources use the stack's `aws:region`, `aws:profile` and (rarely) `aws:accessKey` /
`aws:secretKey` / `aws:token`. The dynamic providers (Capacity Block, block scaling, readiness
gate, destroy checks) call AWS with boto3 and must use the same account and region, not
whatever ambient credentials the provider host happens to see. So the program passes what it
knows as inputs (`stack_aws_inputs`): `aws` = {region, profile} in plain state, and
`awsSecrets` = {accessKey, secretKey, token} only when set, as Pulumi secrets (encrypted in
state; providers list it in `additional_secret_outputs`). Providers build a fresh session per
call (`session(props)`): nothing holding credentials is pickled into state. `AwsProvider` is
their common base (on components/dynamic/provider.py): `awsSecrets` is a secret output, and
what they raise or log is redacted of those keys and of the AWS credentials in the provider
host's environment.

Keys our boto3 calls cannot honour the same way (`aws:assumeRoles`, `aws:assumeRole`,
`aws:assumeRoleWithWebIdentity`, `aws:sharedCredentialsFiles`, `aws:sharedConfigFiles`) are
refused before anything is created, naming the key: silently using other credentials could look
up or buy capacity in another account.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional

from ..dynamic.provider import Provider
from ..inference.errors import ConfigError

AWS_INPUT = "aws"
SECRETS_INPUT = "awsSecrets"
UNSUPPORTED_AWS_KEYS = ("assumeRoles", "assumeRole", "assumeRoleWithWebIdentity",
                        "sharedCredentialsFiles", "sharedConfigFiles")
#: the environment variables boto3 reads credentials from (redacted from what providers say)
CREDENTIAL_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
#: botocore timeouts of every call (seconds); each provider also enforces its own deadline
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 60


def aws_inputs_from_config(get, get_secret) -> Dict[str, Any]:
    """{aws, awsSecrets?} from the stack's `aws:*` config (`get`/`get_secret` of pulumi.Config("aws"))."""
    for key in UNSUPPORTED_AWS_KEYS:
        if get(key) not in (None, "", "[]"):
            raise ConfigError(f"aws:{key}", "[set]", "put the role in an ~/.aws/config profile "
                              "(role_arn/source_profile) and set aws:profile to it",
                              "is not used by kimi-k3's own AWS calls (Capacity Block, scaling, checks)")
    out: Dict[str, Any] = {AWS_INPUT: {"region": get("region"), "profile": get("profile") or None}}
    # secret keys are only ever read as secrets (an Output, or None when unset)
    access, secret, token = get_secret("accessKey"), get_secret("secretKey"), get_secret("token")
    if (access is None) != (secret is None):
        raise ConfigError("aws:accessKey" if access is None else "aws:secretKey", None,
                          "set both aws:accessKey and aws:secretKey (as secrets), or neither",
                          "is needed with the other key")
    if access is not None:
        out[SECRETS_INPUT] = {"accessKey": access, "secretKey": secret, "token": token}
    return out


def refuse_static_keys(inputs: Mapping[str, Any]) -> None:
    """Static `aws:accessKey`/`aws:secretKey` cannot reach the Kubernetes side: refuse them.

    Every Kubernetes call of this stack (the Helm releases, the serving objects) goes through a
    kubeconfig whose `aws eks get-token` runs the AWS CLI with the default credential chain or
    `--profile` (cluster.exec_kubeconfig). The keys could only get there as exec environment
    variables, i.e. written into the kubeconfig (state and the `kubeconfig` output, and any
    file a user saves it to). Without them the token would be signed by another identity than
    the one that created the cluster (its only admin in API authentication mode), and Kubernetes
    would refuse the stack's objects after everything billable exists. With aws:profile as well
    the keys still win for pulumi-aws and kimi-k3's own calls (static keys come first in the
    credential chain) while the kubeconfig would use the profile, so they are refused either way.
    """
    if inputs.get(SECRETS_INPUT):
        raise ConfigError("aws:accessKey", "[set]", "put the keys in a profile (aws configure --profile "
                          "NAME) and set aws:profile, or unset aws:accessKey/aws:secretKey/aws:token and "
                          "export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY instead",
                          "cannot reach the cluster's kubeconfig (`aws eks get-token`), so Kubernetes "
                          "would see another identity than the one that created the cluster")


def stack_aws_inputs() -> Dict[str, Any]:
    """The program's `aws`/`awsSecrets` inputs for every dynamic provider that calls AWS."""
    import pulumi

    c = pulumi.Config("aws")
    return aws_inputs_from_config(c.get, c.get_secret)


def session(props: Mapping[str, Any]):
    """A boto3 Session for the stack's account and region (built per call, never stored)."""
    import boto3

    a = props.get(AWS_INPUT) or {}
    s = props.get(SECRETS_INPUT) or {}
    region = a.get("region") or props.get("region")
    kwargs: Dict[str, Any] = {"region_name": region}
    if s.get("accessKey"):
        kwargs.update(aws_access_key_id=s["accessKey"], aws_secret_access_key=s["secretKey"],
                      aws_session_token=s.get("token") or None)
    elif a.get("profile"):
        kwargs["profile_name"] = a["profile"]  # an explicit profile also disables env credentials
    return boto3.Session(**kwargs)


def client(service: str, props: Mapping[str, Any], max_attempts: int = 5, sess: Optional[Any] = None):
    """A client with bounded timeouts and retries (`max_attempts=1` for calls that must not repeat)."""
    from botocore.config import Config

    sess = sess or session(props)
    return sess.client(service, config=Config(
        connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
        retries={"total_max_attempts": max_attempts, "mode": "standard"}))


class AwsProvider(Provider):
    """A provider that calls AWS with the stack's `aws`/`awsSecrets` inputs (see the module
    docstring); credentials are read by boto3 at each call, never kept."""

    SECRET_OUTPUTS = (SECRETS_INPUT,)

    def credential_values(self) -> List[str]:
        return [os.environ[k] for k in CREDENTIAL_ENV if os.environ.get(k)]
