"""The stack output `logs` of both targets (components/*/logs.py `logs_output`): the `logs`
command and its plain ssh / kubectl equivalent, each value one shell word."""

from __future__ import annotations

import shlex

from components.aws_eks.logs import logs_output as eks_logs
from components.ctyun_hcc.logs import logs_output as hcc_logs


def test_ctyun_logs_output_tails_the_jobs_log_over_ssh():
    out = hcc_logs("ctyun-hcc", "203.0.113.5", 2222, "root", "jump@198.51.100.1", "/home/kimi-k3/logs/", "42")
    assert out["command"].startswith("python -m components logs --stack ctyun-hcc")
    assert out["ssh"] == ("ssh -i k3.key -J jump@198.51.100.1 -p 2222 root@203.0.113.5 tail -n 200 -F "
                          "/home/kimi-k3/logs/job_42.out /home/kimi-k3/logs/job_42.err")
    assert out["nodeLogs"] == "/home/kimi-k3/logs/node_42.<task>.out"
    assert hcc_logs("s", "h", 22, "root", "", "/l", "7")["ssh"].startswith("ssh -i k3.key root@h tail")


def test_a_hostile_value_stays_one_word():
    out = hcc_logs("s", "h;reboot", 22, "root", "", "/l", "1 2;id")
    words = shlex.split(out["ssh"])
    assert "root@h;reboot" in words and "/l/job_1 2;id.out" in words


def test_eks_logs_output_uses_the_serving_selector():
    out = eks_logs("aws-eks", "kimi-k3", {"app": "kimi-k3", "kimi-k3/role": "head"})
    assert out["kubectl"].startswith("KUBECONFIG=k3.kubeconfig kubectl -n kimi-k3 logs "
                                     "-l app=kimi-k3,kimi-k3/role=head -c vllm --prefix --tail=200")
