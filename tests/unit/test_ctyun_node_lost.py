"""A node that never comes back while serving (issue 19, day two): Slurm requeues the job, which
then waits for nodes it cannot have, and a plain `pulumi up` sees a job Slurm still holds. The
diff says which nodes hold it up and what the operator does; a job waiting for nothing lost
(or one that is running) says nothing."""

from __future__ import annotations

import logging

import pytest

from components.ctyun_hcc.service import SlurmServiceProvider


class _Master:
    """Answers `scontrol show job` and `sinfo` as Slurm prints them (one line per node)."""

    def __init__(self, job_line: str, sinfo: str):
        self.job_line, self.sinfo = job_line, sinfo
        self.commands = []

    def run(self, cmd, **kw):
        self.commands.append(cmd)
        out = self.job_line if "scontrol show job" in cmd else self.sinfo
        return type("Res", (), {"stdout": out, "stderr": "", "code": 0})()


def _state(monkeypatch, master, caplog):
    prov = SlurmServiceProvider()
    monkeypatch.setattr(SlurmServiceProvider, "_run", lambda self, fn, p: fn(master, p))
    props = {**prov.input_defaults(), "sshHost": "203.0.113.9", "jobId": "41",
             "nodes": ["kk3n0", "kk3n1", "kk3n2", "kk3n3"], "partition": "batch"}
    with caplog.at_level(logging.WARNING):
        return prov.live_state(props)


SINFO_ONE_DOWN = "kk3n0 idle\nkk3n1 idle\nkk3n2 down*\nkk3n3 idle\n"


def test_a_requeued_job_waiting_for_a_dead_node_names_it_and_the_way_out(monkeypatch, caplog):
    master = _Master("JobId=41 JobState=PENDING Reason=ReqNodeNotAvail Restarts=1 NodeList=(null)",
                     SINFO_ONE_DOWN)
    assert _state(monkeypatch, master, caplog) == "PENDING"
    text = caplog.text
    assert "Slurm job 41 of this service was requeued 1 time(s)" in text
    assert "kk3n2 (down*)" in text and "kk3n1" not in text
    assert "CTyun's console" in text and "pulumi refresh" in text and "kimi-k3:nodes" in text
    assert any("sinfo" in c and "batch" in c for c in master.commands)


@pytest.mark.parametrize("job_line, sinfo", [
    # never requeued: pending for another reason (a first start), nothing lost
    ("JobId=41 JobState=PENDING Reason=Resources Restarts=0", SINFO_ONE_DOWN),
    # requeued, every node answers again: it starts by itself
    ("JobId=41 JobState=PENDING Reason=BeginTime Restarts=1",
     "kk3n0 idle\nkk3n1 idle\nkk3n2 idle\nkk3n3 idle\n"),
    # running again
    ("JobId=41 JobState=RUNNING Reason=None Restarts=1 NodeList=kk3n[0-3]", SINFO_ONE_DOWN),
])
def test_nothing_is_said_when_no_lost_node_holds_the_job_up(monkeypatch, caplog, job_line, sinfo):
    _state(monkeypatch, _Master(job_line, sinfo), caplog)
    assert "cannot run it" not in caplog.text
