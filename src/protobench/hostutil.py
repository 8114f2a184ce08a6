"""Small host helpers shared by the engine, the targets, tests and benches.

Loopback checks (only loopback is ever bound by our targets), the open-file
limit (many connections per process), free loopback ports, and log tails.
"""

from __future__ import annotations

import contextlib
import ipaddress
import resource
import socket
from pathlib import Path


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback IP address (``[::1]`` too)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def raise_fd_limit(wanted: int = 0) -> tuple[int, int]:
    """Raise the soft open-file limit to the hard one, and both to ``wanted`` when the
    OS allows (root with CAP_SYS_RESOURCE); return ``(soft, hard)`` after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if wanted > hard:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def fd_limit_note(who: str, wanted: int) -> str | None:
    """One line saying ``who`` stays below ``wanted`` open files, or None if it does not."""
    soft, hard = raise_fd_limit(wanted)
    if soft >= wanted:
        return None
    return (
        f"{who}: the open-file limit stays {soft} (RLIMIT_NOFILE hard {hard}; the OS refused "
        f"{wanted}: raising it needs root with CAP_SYS_RESOURCE or `ulimit -Hn`), so it holds "
        f"at most about {max(0, soft - 32)} connections"
    )


def fd_limit_text(strerror: str | None) -> str:
    """The one-line cause of a connection refused by the process's open-file limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return (
        f"out of file descriptors ({strerror}): the OS limit is the cap "
        f"(RLIMIT_NOFILE soft={soft} hard={hard}); raise it with `ulimit -n` "
        "or spread the sessions over more --processes"
    )


def free_port(host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    """A port free on ``host`` right now (whoever binds it next may still race)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, kind) as sock:
        sock.bind((host.strip("[]"), 0))
        return int(sock.getsockname()[1])


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a text file, or ``""`` when it cannot be read."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
