"""TLS on the endpoint's load balancer: the Service annotations, and the ACM certificate the
stack requests when the user names a domain but gives no certificate.

The NLB is made by the AWS cloud provider for a `LoadBalancer` Service; TLS is three of its
annotations (kubernetes/cloud-provider-aws tag v1.36.1, commit 7656c21b,
docs/service_controller.md): `aws-load-balancer-ssl-cert` ("IAM or ACM ARN ... Requests a
secure listener"; with `aws-load-balancer-type: nlb` and a TCP port "the NLB protocol will be
set to TLS"), `aws-load-balancer-ssl-ports` (which ports; here the one endpoint port) and
`aws-load-balancer-ssl-negotiation-policy`, whose default there is ELBSecurityPolicy-2016-08
(TLS 1.0 and 1.1 allowed): set to ELBSecurityPolicy-TLS13-1-2-2021-06 (TLS 1.3 and 1.2 only;
Elastic Load Balancing user guide, "Security policies for your Network Load Balancer").
Behind the listener the NLB talks TCP to the pod inside the VPC.

A requested certificate follows pulumi-aws 7.51.1's documented path (`acm/certificate_validation.py`,
"DNS Validation with Route 53"): `aws.acm.Certificate(validation_method="DNS")`, one CNAME per
`domain_validation_options` entry (written to the user's Route 53 zone when
`kimi-k3:tlsHostedZoneId` is set, else shown as the stack output `tls.validationRecords` for the
user to create), `aws.acm.CertificateValidation`, whose ARN the Service annotation waits on, so
no listener is made before the certificate is issued.

A certificate of yours must be in the stack's region: "Certificates in ACM are regional
resources. To use a certificate with Elastic Load Balancing ... in more than one AWS region, you
must request or import a certificate for each region ... You cannot copy a certificate between
regions" (https://docs.aws.amazon.com/acm/latest/userguide/acm-regions.html, read 2026-12-02).
An ACM ARN names its region (`arn:<partition>:acm:<region>:...`), so `certificate_region_refusal`
refuses another region's before anything is created (on HyperPod, before the training plan,
which cannot be cancelled, is bought). IAM server certificates are global and pass.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..inference.errors import ConfigError

SSL_CERT = "service.beta.kubernetes.io/aws-load-balancer-ssl-cert"
SSL_PORTS = "service.beta.kubernetes.io/aws-load-balancer-ssl-ports"
SSL_POLICY = "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"
POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
#: stands for the ARN of the certificate the stack requests (known after ACM issues it)
REQUESTED_ARN = "${TLS_CERTIFICATE_ARN}"
#: how long `pulumi up` waits for ACM to issue a requested certificate (DNS validation)
VALIDATION_TIMEOUT = "45m"


_ACM_REGION = re.compile(r"^arn:[a-z-]+:acm:([a-z0-9-]+):")


def certificate_region_refusal(arn: Optional[str], region: str) -> Optional[ConfigError]:
    """An ACM certificate of another region than `aws:region` (ELB cannot use it; module docstring)."""
    m = _ACM_REGION.match(arn or "")
    if m is None or m.group(1) == region:
        return None
    return ConfigError("kimi-k3:tlsCertificateArn", arn, f"request or import the certificate in {region} "
                       "(ACM cannot copy it across regions), or set aws:region to "
                       f"{m.group(1)}", f"is in {m.group(1)}, not in aws:region ({region}): a load balancer "
                       "uses ACM certificates of its own region only")


def tls_annotations(tls, port: int) -> Tuple[Tuple[str, str], ...]:
    """The Service annotations that put TLS on the NLB (none without TLS)."""
    if tls is None:
        return ()
    return ((SSL_CERT, tls.certificate_arn or REQUESTED_ARN), (SSL_PORTS, str(int(port))),
            (SSL_POLICY, POLICY))


def endpoint(tls, port: int) -> str:
    return f"https://{tls.domain}:{int(port)}/v1"


def request_certificate(name: str, tls, parent, after=()) -> Tuple[Any, Any]:
    """(validated ARN, validation records) of an ACM certificate for `tls.domain`; records are
    written to `tls.hosted_zone_id` when given. `after`: the Capacity Block (nothing is requested
    before it has decided; the records and the validation wait for the certificate)."""
    import pulumi
    import pulumi_aws as aws

    opts = pulumi.ResourceOptions(parent=parent)
    cert = aws.acm.Certificate(f"{name}-tls-cert", domain_name=tls.domain, validation_method="DNS",
                               tags={"Name": f"{name}-tls"},
                               opts=pulumi.ResourceOptions(parent=parent, depends_on=list(after)))
    option = cert.domain_validation_options.apply(lambda opts_: _first(opts_))
    records = option.apply(lambda o: [o] if o else [])
    fqdns: Optional[List[Any]] = None
    if tls.hosted_zone_id:
        record = aws.route53.Record(
            f"{name}-tls-validation-record", zone_id=tls.hosted_zone_id, allow_overwrite=True,
            name=option.apply(lambda o: o["name"]), type=option.apply(lambda o: o["type"]),
            records=[option.apply(lambda o: o["value"])], ttl=60, opts=opts)
        fqdns = [record.fqdn]
    validation = aws.acm.CertificateValidation(
        f"{name}-tls-validation", certificate_arn=cert.arn, validation_record_fqdns=fqdns,
        opts=pulumi.ResourceOptions(parent=parent, custom_timeouts=pulumi.CustomTimeouts(
            create=VALIDATION_TIMEOUT)))
    return validation.certificate_arn, records


def _first(options) -> Optional[Dict[str, str]]:
    """The one validation record of a one-name certificate, as {name, type, value}."""
    for o in options or []:
        get = o.get if isinstance(o, dict) else (lambda k, _o=o: getattr(_o, k, None))
        name = get("resource_record_name") or get("resourceRecordName")
        if name:
            return {"name": name, "type": get("resource_record_type") or get("resourceRecordType"),
                    "value": get("resource_record_value") or get("resourceRecordValue")}
    return None
