"""Issue 21 item 5: each wide-open list is warned about by name, and a list that gives the
whole internet something beyond the endpoint (the EKS API, SSH) gets a line of its own saying
what anyone can do; both targets list every opening they make."""

from components.config.shared import Exposure, exposure_warnings

API = "kimi-k3:apiAccessCidrs"


def _eks_api(*cidrs):
    return Exposure("the EKS API", API, tuple(cidrs), internet_risk="anyone can try credentials")


def test_an_internet_wide_list_with_a_risk_gets_its_own_line():
    got = exposure_warnings([_eks_api("0.0.0.0/0")], True)
    assert got == [f"{API} opens the EKS API to the whole internet (0.0.0.0/0, kimi-k3:allowInternet=true)",
                   f"{API} is open to the whole internet: anyone can try credentials "
                   "(kimi-k3:allowInternet=true opens every list that asks; give this one your own "
                   "networks instead)"]


def test_a_public_but_not_internet_wide_list_has_no_extra_line():
    assert exposure_warnings([_eks_api("203.0.113.7/32")], True) == [
        f"{API} opens the EKS API to public addresses 203.0.113.7/32"]


def test_aws_names_the_eks_api_list():
    from components.offline.runner import run_program

    lines = run_program("aws-eks", {"kimi-k3:apiAccessCidrs": "0.0.0.0/0",
                                    "kimi-k3:allowInternet": "true"}).warnings
    assert any(line.startswith(f"{API} opens the EKS API") for line in lines), lines
    assert any(line.startswith(f"{API} is open to the whole internet: anyone can reach this "
                               "cluster's Kubernetes API server") for line in lines)
    assert not any(line.startswith(f"{API} opens") for line in run_program("aws-eks").warnings)


def test_ctyun_names_the_ssh_list_with_its_risk():
    from components.offline.runner import run_program

    lines = run_program("ctyun-hcc", {"kimi-k3:sshAllowedCidrs": "0.0.0.0/0",
                                      "kimi-k3:allowInternet": "true"}).warnings
    assert any(line.startswith("kimi-k3:sshAllowedCidrs is open to the whole internet: anyone "
                               "can try to log in to the master") for line in lines), lines
