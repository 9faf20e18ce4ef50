"""Hosts for Ray surveys on one machine: each a Linux network namespace with an address of its own on a
switch (a bridge in a namespace of its own), so a cluster's nodes talk over a network, not loopback. The
head (where the survey runs, as on a cluster's head machine) sees this machine's files; every other host
has a /tmp and a home directory of its own (a mount namespace with a tmpfs on /tmp), so it sees neither
the survey's checkout nor its store nor another host's files: only regsurvey and the toolchain, as a
machine of a real cluster would.

Needs root and ``ip`` (iproute2) and ``unshare`` (util-linux): :func:`unavailable` says why not.
Everything is made under names of this process's own and removed by :meth:`Hosts.close`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

# No usage reports; no token authentication: a head that finds a token (~/.ray/auth_token) turns it on,
# and the hosts, with homes of their own, would not have it.
RAY_ENV = ("RAY_USAGE_STATS_ENABLED=0", "RAY_AUTH_MODE=disabled")
SUBNET = "10.231.0"
HEAD = f"{SUBNET}.10"
PORT = 6379


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def unavailable() -> str | None:
    """Why hosts cannot be made here (None: they can)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "network namespaces need root on Linux"
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    name = f"rsprobe{os.getpid()}"
    try:
        _ip("netns", "add", name)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"cannot make a network namespace: {getattr(exc, 'stderr', '') or exc}".strip()
    _ip("netns", "del", name)
    return None


class Hosts:
    """A switch and the hosts on it; host 0 is the Ray head (no CPU for actors: they all run on the other
    hosts), the others nodes of ``cpus`` CPUs each."""

    def __init__(self, logs: Path):
        self.tag = f"rs{os.getpid() % 100000}"
        self.logs = logs
        self.switch = f"{self.tag}sw"
        self.started: dict[int, subprocess.Popen[bytes]] = {}
        self.ns: dict[int, str] = {}
        # What of this machine's /tmp the hosts see: what they run with (a venv, a checkout on the path), and
        # the Triton cache the environment names (the test run's own, tests/conftest.py), which Triton makes.
        cache = [os.environ["TRITON_CACHE_DIR"]] if os.environ.get("TRITON_CACHE_DIR") else []
        self.kept = _under_tmp([sys.executable, sys.prefix, *sys.path, *cache])
        _ip("netns", "add", self.switch)
        self.run_in(self.switch, "ip", "link", "add", "br0", "type", "bridge")
        self.run_in(self.switch, "ip", "link", "set", "br0", "up")

    @property
    def address(self) -> str:
        return f"{HEAD}:{PORT}"

    def ip_of(self, i: int) -> str:
        return f"{SUBNET}.{10 + i}"

    def run_in(self, ns: str, *argv: str) -> None:
        subprocess.run(["ip", "netns", "exec", ns, *argv], check=True, capture_output=True, timeout=30)

    def command(self, i: int, argv: list[str]) -> list[str]:
        """``argv`` run on host ``i`` (with this machine's files)."""
        return ["ip", "netns", "exec", self.ns[i], "env", *RAY_ENV, *argv]

    def _wire(self, i: int) -> str:
        ns = f"{self.tag}h{i}"
        _ip("netns", "add", ns)
        self.ns[i] = ns
        port, there = f"{self.tag}p{i}", f"{self.tag}e{i}"
        _ip("link", "add", port, "type", "veth", "peer", "name", there)
        _ip("link", "set", port, "netns", self.switch)
        _ip("link", "set", there, "netns", ns)
        self.run_in(self.switch, "ip", "link", "set", port, "master", "br0", "up")
        self.run_in(ns, "ip", "addr", "add", f"{self.ip_of(i)}/24", "dev", there)
        self.run_in(ns, "ip", "link", "set", there, "up")
        self.run_in(ns, "ip", "link", "set", "lo", "up")
        return ns

    def start_head(self, env: dict[str, str] | None = None) -> None:
        self._wire(0)
        ray = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--node-ip-address={HEAD}",
               f"--port={PORT}", "--num-cpus=0", "--include-dashboard=false", "--disable-usage-stats", "--block"]
        self._start(0, self.command(0, ray), env or {})

    def add_node(self, i: int, cpus: int = 1) -> None:
        """Host ``i``, a Ray node of ``cpus`` CPUs with a /tmp and a home of its own. What the host runs
        with (this Python, its environment, the packages on its path: in a venv or a checkout under /tmp,
        as in a CI run) is mounted back into that /tmp, and nothing else of this machine's /tmp."""
        self._wire(i)
        ray = (f"exec {shlex.quote(sys.executable)} -m ray.scripts.scripts start --address={self.address} "
               f"--node-ip-address={self.ip_of(i)} --num-cpus={cpus} --disable-usage-stats --block")
        keep = " ".join(shlex.quote(name) for name in self.kept)
        private = ("set -e; hold=$(mktemp -d /var/tmp/regsurvey-host.XXXXXX); mount --bind /tmp \"$hold\"; "
                   "mount -t tmpfs tmpfs /tmp; "
                   f"for d in {keep}; do mkdir -p \"/tmp/$d\"; mount --bind \"$hold/$d\" \"/tmp/$d\"; done; "
                   "umount -l \"$hold\"; rmdir \"$hold\"; mkdir /tmp/home; "
                   f"HOME=/tmp/home {ray}")
        self._start(i, self.command(i, ["unshare", "--mount", "--propagation", "private", "sh", "-c", private]),
                    {})

    def _start(self, i: int, argv: list[str], env: dict[str, str]) -> None:
        log = (self.logs / f"host{i}.log").open("wb")
        self.started[i] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                           env={**os.environ, **dict(e.split("=", 1) for e in RAY_ENV), **env})

    def wait_for_nodes(self, n: int, timeout: float = 120) -> None:
        """Until the cluster has ``n`` nodes alive."""
        probe = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
                 "print(sum(1 for n in ray.nodes() if n['Alive']))")
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            out = subprocess.run(self.command(0, [sys.executable, "-c", probe, self.address]), capture_output=True,
                                 text=True, timeout=120)
            seen = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr.strip()[-300:]
            if seen == str(n):
                return
            time.sleep(1)
        raise TimeoutError(f"the cluster did not reach {n} nodes (last seen: {seen})")

    def private_tmp(self, i: int) -> list[str]:
        """What host ``i``'s own /tmp holds (its top level), read from inside its mount namespace."""
        pid = self.started[i].pid
        # The host's ray process is the child of ``ip netns exec``'s unshare: the one in another mount
        # namespace than ours.
        for child in _descendants(pid):
            if os.readlink(f"/proc/{child}/ns/mnt") != os.readlink(f"/proc/{os.getpid()}/ns/mnt"):
                out = subprocess.run(["nsenter", "-t", str(child), "-m", "ls", "-A", "/tmp"], capture_output=True,
                                     text=True, check=True, timeout=30)
                return out.stdout.split()
        raise LookupError(f"host {i} has no process in a mount namespace of its own")

    def cut(self, i: int) -> list[str]:
        """Host ``i`` cut off the network (its port on the switch down): as a machine whose link fails, its
        processes live on. The command, for a process on another host to run."""
        return ["ip", "netns", "exec", self.switch, "ip", "link", "set", f"{self.tag}p{i}", "down"]

    def close(self) -> None:
        for proc in self.started.values():
            _kill_group(proc)
        for ns in [*self.ns.values(), self.switch]:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for proc in self.started.values():
            proc.wait(timeout=30)
        for ns in [*self.ns.values(), self.switch]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _under_tmp(paths: list[str]) -> list[str]:
    """The entries of /tmp (names) that hold any of ``paths``."""
    names: dict[str, None] = {}
    for path in paths:
        try:
            rel = Path(path).resolve().relative_to("/tmp")
        except ValueError:
            continue
        if rel.parts:
            names[rel.parts[0]] = None
    return list(names)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        kids = [int(c) for c in children]
        out.extend(kids)
        todo.extend(kids)
    return out
