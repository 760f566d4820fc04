"""What the docs tell a user to type exists: every `kimi-k3:`/`ctyun:`/`aws:` config key named in
README.md, docs/*.md and the stack files is one the program reads, every
`python -m components <command> --flag` is one its command line accepts, README.md keeps its two
set-up commands, and docs/day-two.md covers what an operator needs on both targets (issue 18).

The keys are checked against the parsers' own lists (components/config/shared.py `KNOWN_KEYS`,
each target's, and for `aws:*` the same rule `config/keys.py` applies to a stack); the flags
against the parsers components/cli builds (`main.COMMANDS`, each module's `register`), so a
renamed key or flag fails here naming the doc, the line and the token.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Tuple

import pytest

from components.aws_eks import config as aws_config
from components.cli import main as cli_main
from components.config import keys as config_keys
from components.config import shared
from components.ctyun_hcc import config as hcc_config
from components.ctyun_hcc import serve_config

ROOT = Path(__file__).resolve().parents[2]

#: `ns:key` as a config key: not part of a resource type (`aws:ec2/subnet:Subnet`,
#: `pulumi-python:dynamic/ctyun:HccCluster`, `kimi-k3:ctyun:HccCluster`) nor of a longer word
KEY = re.compile(r"(?<![\w/:.-])(kimi-k3|ctyun|aws):([a-z][A-Za-z0-9]*)(?![\w/:-])")
#: tokens of that shape that are not keys a stack sets, each with the reason
NOT_CONFIG_KEYS = {
    "kimi-k3:stack": "a tag kimi-k3 puts on what it buys (docs/aws-eks.md), not a config key",
    "aws:regoin": "the misspelling the docs show being refused (checked below)",
    "ctyun:rootPasword": "the misspelling the docs show being refused (checked below)",
}
#: a command of ours in inline code or in a code block: `python -m components CMD ...`,
#: `./run plan ...`, or a span that starts with the command (`logs --stack S`)
COMMAND = re.compile(r"(?:python3? (?:-X \w+ )?-m components |\./run |^)(plan|status|accept|logs)(?=\s|$)((?: +\S+)*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?=[\s=\]|]|$)")


def shown(path: Path) -> str:
    """The path as an error names it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if ROOT in path.parents else path.name


def pages() -> List[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def known_keys() -> Dict[str, FrozenSet[str]]:
    """Every key each namespace's parsers accept."""
    return {
        "kimi-k3": frozenset(shared.KNOWN_KEYS) | frozenset(serve_config.TARGET_KEYS) | frozenset(aws_config.KEYS),
        "ctyun": frozenset(hcc_config.KNOWN_KEYS),
        "aws": frozenset(config_keys.AWS_KEYS_READ) | (config_keys.aws_provider_keys() or frozenset()),
    }


def key_tokens(text: str) -> Iterator[Tuple[int, str, str]]:
    for n, line in enumerate(text.splitlines(), 1):
        for m in KEY.finditer(line):
            yield n, m.group(1), m.group(2)


def unknown_keys(path: Path, known: Dict[str, FrozenSet[str]]) -> List[str]:
    return [f"{shown(path)}:{n}: {ns}:{key}"
            for n, ns, key in key_tokens(path.read_text(encoding="utf-8"))
            if key not in known[ns] and f"{ns}:{key}" not in NOT_CONFIG_KEYS]


def spans(text: str) -> Iterator[Tuple[int, str]]:
    """(line, text) of every inline code span and every code-block line (a line ending in `\\`
    joined with the next), where commands are written; "" at every paragraph's end."""
    in_block, held, held_at = False, "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            yield n, ""
            continue
        if in_block:
            held, held_at = held + " " + line.rstrip("\\"), held_at or n
            if not line.rstrip().endswith("\\"):
                yield held_at, held.split(" #", 1)[0]
                held, held_at = "", 0
            continue
        if not line.strip() or line.lstrip().startswith("|"):  # a table row is a paragraph of its own
            yield n, ""
        for m in re.finditer(r"`([^`]+)`", line):
            yield n, m.group(1)


def command_lines(text: str) -> Iterator[Tuple[int, str, List[str]]]:
    """(line, command, flags) for each command line of ours in `text`; a span of flags alone
    (`--order`) belongs to the command the same paragraph named last."""
    last = None
    for n, span in spans(text):
        if not span:
            last = None
            continue
        if span.startswith("-") and last:
            yield n, last, FLAG.findall(span.split(" ", 1)[0])
            continue
        for m in COMMAND.finditer(span):
            last = m.group(1)
            yield n, last, FLAG.findall(m.group(2))


def parsers() -> Dict[str, argparse.ArgumentParser]:
    """The subcommand parsers exactly as `python -m components` builds them."""
    root = argparse.ArgumentParser(prog="python -m components")
    sub = root.add_subparsers(dest="command", required=True)
    for name in cli_main.COMMANDS:
        importlib.import_module(name).register(sub)
    return dict(sub.choices)


def accepted(parser: argparse.ArgumentParser) -> FrozenSet[str]:
    return frozenset(s for action in parser._actions for s in action.option_strings)


def unknown_flags(path: Path, options: Dict[str, FrozenSet[str]]) -> List[str]:
    return [f"{shown(path)}:{n}: {command} {flag}"
            for n, command, flags in command_lines(path.read_text(encoding="utf-8"))
            for flag in flags if flag not in options[command]]


def test_every_config_key_in_the_docs_and_stack_files_is_read_by_the_program():
    known = known_keys()
    files = pages() + sorted((ROOT / "stacks").glob("*.yaml"))
    assert [u for f in files for u in unknown_keys(f, known)] == []


def test_the_docs_name_config_keys_and_command_lines_at_all():
    """The extraction finds what it is meant to (an empty list would pass the tests above)."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages())
    assert {"kimi-k3:nodes", "ctyun:regionId", "aws:region"} <= {f"{ns}:{k}" for _, ns, k in key_tokens(text)}
    found = [(c, f) for p in pages() for _, c, flags in command_lines(p.read_text(encoding="utf-8"))
             for f in flags]
    assert {c for c, _ in found} == {"plan", "status", "accept", "logs"}
    assert ("plan", "--order") in found and ("accept", "--api-key-env") in found


def test_the_misspellings_the_docs_show_are_refused():
    with pytest.raises(shared.ConfigError, match="did you mean aws:region"):
        config_keys.check_namespaces(["aws:regoin"])
    with pytest.raises(shared.ConfigError, match="did you mean ctyun:rootPassword") as refused:
        hcc_config.parse_hcc_config({"rootPasword": "hunter2-secret"}, None)
    assert "hunter2" not in str(refused.value)
    assert NOT_CONFIG_KEYS.keys().isdisjoint(f"{ns}:{k}" for ns, ks in known_keys().items() for k in ks)


def test_every_command_line_flag_in_the_docs_is_accepted():
    options = {name: accepted(p) for name, p in parsers().items()}
    assert [u for p in pages() for u in unknown_flags(p, options)] == []


def test_the_checks_name_the_doc_line_and_token(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Set `kimi-k3:nodes` and `kimi-k3:nodez`; `aws:ec2/subnet:Subnet` is a type.\n"
                    "```\npython -m components plan --stack s \\\n    --frobnicate 1\n```\n"
                    "Then `python -m components accept --requests 0`, `logs --stack S --tail 5` and\n"
                    "`kubectl -n kimi-k3 logs -l app=x --tail=5` (not ours), then `--follow` and `--since`;\n"
                    "`plan.json` and `logs/job_1.out` name no command.\n\n"
                    "`--since` (a new paragraph: no command named yet)\n")
    assert unknown_keys(page, known_keys()) == ["page.md:1: kimi-k3:nodez"]
    options = {name: accepted(p) for name, p in parsers().items()}
    assert unknown_flags(page, options) == ["page.md:3: plan --frobnicate", "page.md:6: logs --tail",
                                                 "page.md:7: logs --since"]


def test_the_readme_keeps_two_set_up_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up and run", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]
    assert commands == ["./run plan", "./run test"]


#: what docs/day-two.md must cover, each with what its section must name for each target
DAY_TWO = {
    "Logs": ("python -m components logs --stack S", "ctyun-hcc", "aws-eks"),
    "A shell": ("ctyun-hcc", "sshCommand", "aws-eks", "kubectl"),
    "Restart the engine": ("ctyun-hcc", "pulumi up --replace", "aws-eks", "kubectl -n kimi-k3 rollout restart"),
    "Resize": ("python -m components plan --stack S --set kimi-k3:nodes", "ctyun-hcc", "aws-eks"),
    "A new API key": ("pulumi config set --secret kimi-k3:apiKey", "ctyun-hcc", "aws-eks"),
    "The endpoint is down: first checks": ("python -m components status --stack S",
                                           "python -m components accept", "ctyun-hcc", "aws-eks"),
}


def sections(text: str) -> Dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2])}


@pytest.mark.parametrize("title", sorted(DAY_TWO))
def test_day_two_covers_both_targets(title):
    body = sections((ROOT / "docs" / "day-two.md").read_text(encoding="utf-8")).get(title, "")
    missing = [word for word in DAY_TWO[title] if word not in body]
    assert missing == [], f"docs/day-two.md, section {title!r}, does not name {missing}"


def test_day_two_names_only_outputs_the_stacks_export():
    """The outputs day-two's commands read are names the targets' code builds outputs with
    (components/ctyun_hcc, components/aws_eks) or `__main__.py` exports."""
    text = (ROOT / "docs" / "day-two.md").read_text(encoding="utf-8")
    named = set(re.findall(r"(?:the )?outputs?\s+`([a-zA-Z]+)`", text))
    named |= set(re.findall(r"`pulumi stack output(?: --\S+)* ([a-zA-Z]+)", text))
    exported = set()
    for target in ("ctyun_hcc", "aws_eks"):
        for source in sorted((ROOT / "components" / target).rglob("*.py")):
            exported |= set(re.findall(r'"([a-zA-Z]+)":', source.read_text(encoding="utf-8")))
    exported |= {"endpoint", "servedModelName", "plan"}  # __main__.py
    assert named and named <= exported, sorted(named - exported)


@pytest.mark.parametrize("namespace, page", [("kimi-k3", "configuration.md"), ("ctyun", "ctyun-hcc.md")])
def test_the_key_reference_names_every_key(namespace, page):
    """docs/configuration.md (and docs/ctyun-hcc.md for `ctyun:*`) is where a user looks a key
    up: each key the parsers accept is named there."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    named = set(re.findall(rf"`(?:{namespace}:)?([a-z][A-Za-z0-9]*)", text))
    assert sorted(known_keys()[namespace] - named) == []


def test_the_readme_lists_every_benchmark():
    """README.md names the bench/ scripts that print the figures docs/benchmarks.md records."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = sorted(p.name for p in (ROOT / "bench").glob("*.py")
                     if p.name != "__init__.py" and f"`bench/{p.name}`" not in text)
    assert missing == [], f"bench scripts README.md does not name: {missing}"


#: how the code names a progress phase (components/progress/record.py `ProgressLog.phase`):
#: a provider's PROGRESS_PHASE, a literal handed to `<log>.phase(`, or one assigned to `phase`
#: first (cluster_ops.py: expand or shrink); the planner's `chosen.phase("stage")` is no wait
PHASE_IN_CODE = re.compile(r'PROGRESS_PHASE = "([a-z0-9-]+)"|(?<!chosen)\.phase\(\s*"([a-z0-9-]+)"'
                           r'|\bphase = "([a-z0-9-]+)"(?: if \w+ else "([a-z0-9-]+)")?')
#: a phase name as docs/progress.md's table shows it; `<step>` / `<i>` stand for a part
PHASE_IN_DOCS = re.compile(r"`([a-z0-9][a-z0-9<>-]*)`")


def code_phases() -> FrozenSet[str]:
    """Every phase name the code records, a CTyun SSH step without PROGRESS_PHASE as
    `bootstrap-<its kebab-case name>` (SshStepProvider.progress_phase)."""
    from components.ctyun_hcc.ssh_resource import SshStepProvider

    found = set()
    for source in (ROOT / "components").rglob("*.py"):
        for m in PHASE_IN_CODE.finditer(source.read_text(encoding="utf-8")):
            found |= {g for g in m.groups() if g}

    def steps(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from steps(sub)

    for module in sorted((ROOT / "components" / "ctyun_hcc").glob("*.py")):  # every step module
        importlib.import_module(f"components.ctyun_hcc.{module.stem}")
    second_replica = {"jobName": "kimi-k3-r1", "serviceJobNames": ["kimi-k3", "kimi-k3-r1"]}
    found |= {c.progress_phase(c(), p) for c in steps(SshStepProvider) for p in ({}, second_replica)
              if c.create is SshStepProvider.create}  # a create of its own records its own
    return frozenset(found)


def documented_phases(text: str) -> List[str]:
    """The phase column of docs/progress.md's "Wired so far" table."""
    table = text.split("Wired so far:", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    return [name for row in rows[1:] for name in PHASE_IN_DOCS.findall(row[2])]


def _as_pattern(name: str) -> "re.Pattern[str]":
    return re.compile(re.sub(r"<[a-z]+>", "[a-z0-9-]+", re.escape(name).replace(r"\<", "<").replace(r"\>", ">")) + "$")


def test_the_status_phases_the_docs_name_are_the_ones_the_code_records():
    """`status` shows progress phases by name: docs/progress.md's table (and day-two's pointers
    into `status`) name only phases the code writes, and every phase the code writes is there;
    a doc naming `ehpc-order-identify`, which nothing records, failed here."""
    code = code_phases()
    assert {"vllm-start", "ehpc-expand", "router-start"} <= code  # the extraction works
    docs = documented_phases((ROOT / "docs" / "progress.md").read_text(encoding="utf-8"))
    day_two = (ROOT / "docs" / "day-two.md").read_text(encoding="utf-8")
    docs += re.findall(r"`([a-z-]+)`(?:/`[a-z-]+`)* in `status`", day_two)
    docs += re.findall(r"/`([a-z-]+)` in `status`", day_two)
    patterns = [_as_pattern(n) for n in docs]
    assert [n for n, p in zip(docs, patterns) if not any(p.match(c) for c in code)] == []
    assert sorted(c for c in code if not any(p.match(c) for p in patterns)) == []
