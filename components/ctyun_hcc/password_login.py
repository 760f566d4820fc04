"""Password login to the master, switched off for the SSH user once the stack's own key works,
and switched back on by `pulumi destroy` (remote commands as plain text; no I/O here).

Why: E-HPC creates the master with a root password and sshd accepting it (the seed logs in
with it); the stack needs it once, for first contact (HostKeyPin), then logs in with its own
generated key. A password that keeps working on a host with a public address is a standing
invitation to guess it. `kimi-k3:sshPasswordLogin` (`off`, the default, or `keep`) decides.

How: a block appended at the end of sshd's config, between two marker lines naming the stack,
`Match User <user>` + `PasswordAuthentication no` + `KbdInteractiveAuthentication no`
(sshd_config(5): both are allowed in a Match block; a Match block runs to the end of the file,
hence at the end). `sshd -t` checks the result before sshd is told to reload (systemd's reload
where it runs, else SIGHUP to the pid in sshd's PidFile, which is how sshd(8) re-reads its
config); a config sshd refuses is put back as it was. Removing the block is the reverse.
Other users, the keys, and everything else in the file are left alone.
"""

from __future__ import annotations

import re

from ..inference.quoting import shell_word

DEFAULT_SSHD_CONFIG = "/etc/ssh/sshd_config"
MODES = ("off", "keep")


def _markers(owner: str):
    tag = re.sub(r"[^A-Za-z0-9._/:@-]", "-", owner or "kimi-k3")[:100]
    return (f"# >>> {tag}: password login off for the stack's SSH user (kimi-k3 "
            "kimi-k3:sshPasswordLogin; pulumi destroy removes this block)",
            f"# <<< {tag}")


_RELOAD = (
    "sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)\n"
    "reload_sshd() {\n"
    "  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then\n"
    "    systemctl reload sshd 2>/dev/null || systemctl reload ssh\n"
    "  else\n"
    "    pidfile=$(\"$sshd_bin\" -T -f \"$f\" 2>/dev/null | awk '$1 == \"pidfile\" {print $2}')\n"
    "    kill -HUP \"$(cat \"${pidfile:-/run/sshd.pid}\")\"\n"
    "  fi\n"
    "}\n")


def off_command(user: str, owner: str, config: str = DEFAULT_SSHD_CONFIG) -> str:
    """Append the block (once), check it with `sshd -t`, reload; prints `changed` or `as is`.
    An sshd too old for `KbdInteractiveAuthentication` in a Match block gets the
    PasswordAuthentication line alone."""
    begin, end = _markers(owner)
    return (
        f"f={shell_word(config)}\n{_RELOAD}"
        f"if grep -qxF {shell_word(begin)} \"$f\"; then echo 'as is'; exit 0; fi\n"
        "cp -p \"$f\" \"$f.kk3-before\"\n"
        "for kbd in yes no; do\n"
        "  cp -p \"$f.kk3-before\" \"$f\"\n"
        f"  {{ echo; echo {shell_word(begin)}; echo {shell_word('Match User ' + user)}; "
        "echo '    PasswordAuthentication no'\n"
        "    [ \"$kbd\" = no ] || echo '    KbdInteractiveAuthentication no'\n"
        f"    echo {shell_word(end)}; }} >> \"$f\"\n"
        "  if \"$sshd_bin\" -t -f \"$f\" 2>/dev/null; then break; fi\n"
        "  if [ \"$kbd\" = no ]; then\n"
        "    cp -p \"$f.kk3-before\" \"$f\"; rm -f \"$f.kk3-before\"\n"
        "    echo \"sshd refused the change (sshd -t); $f was left as it was\" >&2\n"
        "    exit 1\n"
        "  fi\n"
        "done\n"
        "rm -f \"$f.kk3-before\"\n"
        "reload_sshd\n"
        "echo changed")


def on_command(owner: str, config: str = DEFAULT_SSHD_CONFIG) -> str:
    """Remove the block (if there), check, reload; prints `changed` or `as is`."""
    begin, end = _markers(owner)
    return (
        f"f={shell_word(config)}\n{_RELOAD}"
        f"if ! grep -qxF {shell_word(begin)} \"$f\"; then echo 'as is'; exit 0; fi\n"
        f"awk -v b={shell_word(begin)} -v e={shell_word(end)} "
        "'$0 == b {skip = 1} !skip {print} $0 == e {skip = 0}' \"$f\" > \"$f.kk3tmp\"\n"
        # the blank line the block was appended after goes with it
        "sed -i -e ':a' -e '/^\\n*$/{$d;N;ba' -e '}' \"$f.kk3tmp\"\n"
        "\"$sshd_bin\" -t -f \"$f.kk3tmp\"\n"
        "cat \"$f.kk3tmp\" > \"$f\"; rm -f \"$f.kk3tmp\"\n"
        "reload_sshd\n"
        "echo changed")


def state_command(owner: str, config: str = DEFAULT_SSHD_CONFIG) -> str:
    """Prints `off` when the block is in the config, else `on`."""
    begin, _ = _markers(owner)
    return (f"if grep -qxF {shell_word(begin)} {shell_word(config)} 2>/dev/null; then echo off; "
            "else echo on; fi")
