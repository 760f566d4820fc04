"""Issue 21 item 1 on aws-eks: a public endpoint serves TLS on its NLB or is refused before
anything is created, unless plain HTTP is chosen explicitly (and then warned about).

Run through the real program under the mock engine (components/offline/runner.py); the
annotations are those cloud-provider-aws documents (components/aws_eks/tls.py cites them).
"""

import pytest
import yaml

from components.aws_eks import tls as awstls
from pulumi import RunError as ConfigError  # run_program raises what `pulumi preview` shows
from components.offline.runner import run_program

PUBLIC = {"kimi-k3:allowedCidrs": "203.0.113.0/24"}
ARN = "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012"
DOMAIN = "k3.example.com"


def _svc(run):
    return next(r for r in run.resources if r["type"] == "kubernetes:core/v1:Service")


def _types(run, part):
    return [r for r in run.resources if part in r["type"]]


def test_a_public_endpoint_without_tls_is_refused_in_one_line():
    with pytest.raises(ConfigError) as e:
        run_program("aws-eks", PUBLIC)
    text = str(e.value)
    assert text.startswith("kimi-k3:allowedCidrs='203.0.113.0/24' opens the endpoint to public "
                           "addresses without TLS") and "\n" not in text
    assert "kimi-k3:tlsDomain" in text and "kimi-k3:allowPlaintext=true" in text


def test_plain_http_only_when_chosen_and_then_warned():
    run = run_program("aws-eks", {**PUBLIC, "kimi-k3:allowPlaintext": "true"})
    assert any("public and plain HTTP (kimi-k3:allowPlaintext=true)" in w for w in run.warnings)
    assert awstls.SSL_CERT not in _svc(run)["inputs"]["metadata"]["annotations"]
    assert run.outputs["endpoint"].startswith("http://") and "tls" not in run.outputs


def test_a_private_endpoint_needs_no_tls():
    run = run_program("aws-eks", {"kimi-k3:allowedCidrs": "10.0.0.0/8"})
    assert not any("plain HTTP" in w for w in run.warnings)


def test_a_requested_certificate_is_validated_before_the_listener_uses_it():
    run = run_program("aws-eks", {**PUBLIC, "kimi-k3:tlsDomain": DOMAIN})
    (cert,) = _types(run, "aws:acm/certificate:Certificate")
    assert cert["inputs"]["domainName"] == DOMAIN and cert["inputs"]["validationMethod"] == "DNS"
    (validation,) = _types(run, "aws:acm/certificateValidation:CertificateValidation")
    assert not _types(run, "route53")  # no zone given: the user makes the record (output)
    ann = _svc(run)["inputs"]["metadata"]["annotations"]
    # the validated ARN (the mock engine answers the certificate's ARN through the validation)
    assert ann[awstls.SSL_CERT].startswith("arn:aws:acm:") and ann[awstls.SSL_PORTS] == "8000"
    assert ann[awstls.SSL_POLICY] == "ELBSecurityPolicy-TLS13-1-2-2021-06"
    assert run.outputs["endpoint"] == f"https://{DOMAIN}:8000/v1"
    assert f"curl -sS https://{DOMAIN}:8000/v1/chat/completions" in run.outputs["curl"]
    out = run.outputs["tls"]
    assert out["requested"] and out["validationRecords"][0]["type"] == "CNAME"
    assert out["dnsRecord"]["name"] == DOMAIN and out["dnsRecord"]["type"] == "CNAME"
    # the plan's manifest shows where the ARN goes before ACM has issued it
    svc = yaml.safe_load(run.inference.artifacts["manifests/service-kimi-k3-api.yaml"])
    assert svc["metadata"]["annotations"][awstls.SSL_CERT] == awstls.REQUESTED_ARN


def test_a_hosted_zone_gets_the_validation_record():
    run = run_program("aws-eks", {**PUBLIC, "kimi-k3:tlsDomain": DOMAIN,
                                  "kimi-k3:tlsHostedZoneId": "Z0123456789ABCDEFGHIJ"})
    (record,) = _types(run, "aws:route53/record:Record")
    assert record["inputs"]["zoneId"] == "Z0123456789ABCDEFGHIJ" and record["inputs"]["type"] == "CNAME"
    (validation,) = _types(run, "aws:acm/certificateValidation:CertificateValidation")
    assert validation["inputs"]["validationRecordFqdns"]
    assert run.outputs["tls"]["validationRecords"] == []


def test_a_given_certificate_goes_on_the_listener_as_is():
    run = run_program("aws-eks", {**PUBLIC, "kimi-k3:tlsDomain": DOMAIN,
                                  "kimi-k3:tlsCertificateArn": ARN})
    assert not _types(run, "aws:acm") and not _types(run, "route53")
    assert _svc(run)["inputs"]["metadata"]["annotations"][awstls.SSL_CERT] == ARN
    assert run.outputs["tls"]["certificateArn"] == ARN and not run.outputs["tls"]["requested"]
    svc = yaml.safe_load(run.inference.artifacts["manifests/service-kimi-k3-api.yaml"])
    assert svc["metadata"]["annotations"][awstls.SSL_CERT] == ARN


@pytest.mark.parametrize("extra,key,words", [
    ({"kimi-k3:tlsCertificateArn": ARN}, "kimi-k3:tlsCertificateArn", "needs kimi-k3:tlsDomain"),
    ({"kimi-k3:tlsHostedZoneId": "Z0123456789ABCDEFGHIJ"}, "kimi-k3:tlsHostedZoneId",
     "needs kimi-k3:tlsDomain"),
    ({"kimi-k3:tlsDomain": DOMAIN, "kimi-k3:tlsCertificateArn": ARN,
      "kimi-k3:tlsHostedZoneId": "Z0123456789ABCDEFGHIJ"}, "kimi-k3:tlsHostedZoneId", "conflicts"),
    ({"kimi-k3:tlsDomain": DOMAIN, "kimi-k3:allowPlaintext": "true"}, "kimi-k3:tlsDomain",
     "conflicts with kimi-k3:allowPlaintext"),
    ({"kimi-k3:tlsDomain": "203.0.113.9"}, "kimi-k3:tlsDomain", "is not a DNS name"),
    ({"kimi-k3:tlsDomain": "*.example.com"}, "kimi-k3:tlsDomain", "is not a DNS name"),
    ({"kimi-k3:tlsDomain": "k3.example.com\nevil"}, "kimi-k3:tlsDomain", "is not a DNS name"),
    ({"kimi-k3:tlsDomain": "K3.Example.com"}, "kimi-k3:tlsDomain", "is not a DNS name"),
    ({"kimi-k3:tlsDomain": DOMAIN, "kimi-k3:tlsCertificateArn": "arn:aws:acm:us-east-2:1:certificate/x"},
     "kimi-k3:tlsCertificateArn", "is not a certificate ARN"),
])
def test_tls_refusals_name_the_key(extra, key, words):
    with pytest.raises(ConfigError) as e:
        run_program("aws-eks", {**PUBLIC, **extra})
    assert str(e.value).startswith(key) and words in str(e.value), str(e.value)


def test_tls_without_a_load_balancer_is_refused():
    with pytest.raises(ConfigError, match="tlsDomain='k3.example.com' has no load balancer"):
        run_program("aws-eks", {"kimi-k3:tlsDomain": DOMAIN})


def test_hyperpod_refuses_the_tls_keys():
    with pytest.raises(ConfigError, match="kimi-k3:tlsDomain"):
        run_program("aws-eks", {"kimi-k3:serving": "hyperpod", "kimi-k3:hyperpodClusterName": "hp1",
                                "kimi-k3:tlsDomain": DOMAIN})


@pytest.mark.parametrize("arn, refused", [
    (ARN, False),  # us-east-2, the stacks' region here
    ("arn:aws:acm:us-west-2:123456789012:certificate/12345678-1234-1234-1234-123456789012", True),
    ("arn:aws:acm:us-east-1:123456789012:certificate/12345678-1234-1234-1234-123456789012", True),  # CloudFront's
    ("arn:aws:iam::123456789012:server-certificate/k3", False),  # IAM server certificates are global
    (None, False)])
def test_a_certificate_of_another_region_is_refused(arn, refused):
    err = awstls.certificate_region_refusal(arn, "us-east-2")
    assert (err is not None) == refused
    if refused:
        assert str(err).startswith(f"kimi-k3:tlsCertificateArn={arn!r} is in us-") and "\n" not in str(err)
        assert "not in aws:region (us-east-2)" in str(err)


def test_a_certificate_of_another_region_stops_the_program_before_anything_is_created():
    west = ARN.replace("us-east-2", "us-west-2")
    with pytest.raises(ConfigError) as e:
        run_program("aws-eks", {**PUBLIC, "kimi-k3:tlsDomain": DOMAIN, "kimi-k3:tlsCertificateArn": west})
    assert str(e.value).startswith(f"kimi-k3:tlsCertificateArn={west!r} is in us-west-2, not in aws:region")
