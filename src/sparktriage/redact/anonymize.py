"""`--anonymize`: host names, domains, IP addresses and user names replaced by stable stand-ins.

The same original always gets the same stand-in, in every file and on every node, so that
cross-node timelines still line up (sos clean's idea). Host and user names are learned first
from where the run directory names them (deployment nodes, bundle node lists, line records'
`node`, URLs, `user@host`, `/home/<user>`, `USER`/`HOSTNAME` values) and numbered in sorted
order; then every string is rewritten. IP addresses are recognised by shape wherever they occur
and numbered in order of appearance, with stand-ins from the documentation ranges (RFC 5737
192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24; RFC 3849 2001:db8::/32), so that the result
still reads as an address. Loopback and unspecified addresses and the local node name are kept.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

HOST_KEYS = {"host", "hostname", "hosts", "node", "nodes", "node_name", "nodename", "ssh",
             "ssh_host", "ssh_target", "target_host", "master_addr", "master_address",
             "head_address", "head_node", "fqdn", "server", "address", "head"}
USER_KEYS = {"user", "username", "user_name", "login", "ssh_user", "owner", "logname",
             "sudo_user"}
_KEEP_HOSTS = {"localhost", "local", "localhost.localdomain", "ip6-localhost", "none", "null",
               "true", "false", "unknown", "node", "host", "server", "head", "worker", "master",
               "all", "any", "default", "main", "gpu", "cpu"}
_KEEP_USERS = {"root", "nobody", "admin", "user", "ubuntu", "debian", "nvidia", "ec2-user",
               "runner", "daemon", "www-data", "centos", "fedora", "ray", "vllm", "docker",
               "guest", "none", "null"}
_HOSTNAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
_USERNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}\Z")
_URL_HOST = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://(?:([^\s:/?#@\"']+)(?::[^\s/?#@\"']*)?@)?"
                       r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)")
_USER_AT_HOST = re.compile(r"(?<![\w.@/-])([A-Za-z_][A-Za-z0-9_.-]{0,31})@([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])")
_HOME = re.compile(r"/(?:home|Users)/([A-Za-z_][A-Za-z0-9_.-]{0,31})(?=/|\b)")
IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}"
                  r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\w]|\.\d)")
IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:.])")
_V4_POOLS = ("192.0.2.", "198.51.100.", "203.0.113.")


@dataclass
class Anonymizer:
    """The stand-in map and the rewriting of strings with it."""

    hosts: dict[str, str] = field(default_factory=dict)  # lowercase original → stand-in
    domains: dict[str, str] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    ips: dict[str, str] = field(default_factory=dict)
    _pending_hosts: set[str] = field(default_factory=set)
    _pending_users: set[str] = field(default_factory=set)
    _pattern: re.Pattern | None = None
    _domain_pattern: re.Pattern | None = None
    hits: int = 0

    # -- learning ---------------------------------------------------------------------------
    def learn_host(self, name: str) -> None:
        name = name.strip().strip("[]").rstrip(".").lower()
        if not name or name in _KEEP_HOSTS or name in self.hosts or self._is_ip(name):
            return
        if len(name) >= 2 and not name.isdigit() and _HOSTNAME.match(name):
            self._pending_hosts.add(name)

    def learn_user(self, name: str) -> None:
        name = name.strip().lower()
        if name in _KEEP_USERS or name in self.users or len(name) < 2:
            return
        if _USERNAME.match(name) and not name.isdigit():
            self._pending_users.add(name)

    def learn_pair(self, key: str, value: str) -> None:
        """Learn from a key/value pair of a document (hostnames under host keys, users...)."""
        lowered = key.lower()
        if lowered in HOST_KEYS or lowered.endswith(("_host", "_hostname", "_node")):
            user, sep, host = value.rpartition("@")
            if sep and user:
                self.learn_user(user)
            self.learn_host(host.split(":")[0] if host.count(":") == 1 else host)
        elif lowered in USER_KEYS:
            self.learn_user(value)

    def learn_text(self, text: str) -> None:
        """Learn hosts and users named inside free text (URLs, user@host, home folders)."""
        if "://" in text:
            for match in _URL_HOST.finditer(text):
                if match.group(1):
                    self.learn_user(match.group(1))
                self.learn_host(match.group(2))
        if "@" in text:
            for match in _USER_AT_HOST.finditer(text):
                self.learn_user(match.group(1))
                self.learn_host(match.group(2))
        if "/home/" in text or "/Users/" in text:
            for match in _HOME.finditer(text):
                self.learn_user(match.group(1))

    def seal(self) -> None:
        """Number the learned names (sorted, so the numbering does not depend on file order)."""
        taken = set(self.hosts.values()) | set(self.users.values())
        for name in sorted(self._pending_hosts - set(self.hosts)):
            self.hosts[name] = _next("host-", self.hosts.values(), taken | self._pending_hosts)
            if "." in name:
                domain = name.split(".", 1)[1]
                if "." in domain and domain not in self.domains:
                    self.domains[domain] = f"domain-{len(self.domains) + 1}.example"
        for name in sorted(self._pending_users - set(self.users)):
            self.users[name] = _next("user-", self.users.values(), taken | self._pending_users)
        self._pending_hosts.clear()
        self._pending_users.clear()
        self._compile()

    def _compile(self) -> None:
        terms = [(t, "h") for t in self.hosts] + [(t, "u") for t in self.users]
        terms.sort(key=lambda item: (-len(item[0]), item[0]))
        if terms:
            alternation = "|".join(re.escape(t) for t, _ in terms)
            self._pattern = re.compile(rf"(?<![\w.-])(?:{alternation})(?![\w-])", re.IGNORECASE)
        if self.domains:
            alternation = "|".join(re.escape(d) for d in sorted(self.domains, key=len, reverse=True))
            self._domain_pattern = re.compile(
                rf"(?<![\w-])((?:[A-Za-z0-9-]+\.)*)({alternation})(?![\w-])", re.IGNORECASE)

    # -- rewriting --------------------------------------------------------------------------
    def apply(self, text: str) -> str:
        """Rewrite one string with the current map (learning new IPs and subdomain hosts)."""
        if not text:
            return text
        if self._domain_pattern is not None:
            text = self._domain_pattern.sub(self._domain_sub, text)
        if self._pattern is not None:
            text = self._pattern.sub(self._term_sub, text)
        if "." in text:
            text = IPV4.sub(self._ip_sub, text)
        if text.count(":") >= 2:
            text = IPV6.sub(self._ip_sub, text)
        return text

    def _term_sub(self, match: re.Match) -> str:
        original = match.group(0)
        lowered = original.lower()
        stand_in = self.hosts.get(lowered) or self.users.get(lowered)
        if stand_in is None:
            return original
        self.hits += 1
        return stand_in

    def _domain_sub(self, match: re.Match) -> str:
        prefix, domain = match.group(1), match.group(2).lower()
        self.hits += 1
        if not prefix:
            return self.domains[domain]
        full = (prefix + domain).lower()
        if full not in self.hosts:
            taken = set(self.hosts.values()) | set(self.users.values())
            self.hosts[full] = _next("host-", self.hosts.values(), taken)
        return self.hosts[full]

    def _ip_sub(self, match: re.Match) -> str:
        text = match.group(0)
        if self._is_ip(text) is False:
            return text
        address = ipaddress.ip_address(text)
        if address.is_loopback or address.is_unspecified or text == "255.255.255.255":
            return text
        key = address.compressed
        if key not in self.ips:
            self.ips[key] = self._ip_stand_in(address.version)
        self.hits += 1
        return self.ips[key]

    def _ip_stand_in(self, version: int) -> str:
        used = set(self.ips.values())
        if version == 6:
            n = sum(1 for v in used if ":" in v) + 1
            return f"2001:db8::{n:x}"
        n = sum(1 for v in used if ":" not in v)
        pool, host = divmod(n, 254)
        if pool < len(_V4_POOLS):
            return f"{_V4_POOLS[pool]}{host + 1}"
        n -= 254 * len(_V4_POOLS)
        return f"10.255.{n // 254}.{n % 254 + 1}"

    @staticmethod
    def _is_ip(text: str) -> bool:
        try:
            ipaddress.ip_address(text)
        except ValueError:
            return False
        return True

    # -- the private map ----------------------------------------------------------------------
    def as_map(self) -> dict:
        return {"hosts": dict(sorted(self.hosts.items())), "domains": dict(sorted(self.domains.items())),
                "users": dict(sorted(self.users.items())), "ips": dict(self.ips)}

    @classmethod
    def from_map(cls, data: dict) -> "Anonymizer":
        anonymizer = cls()
        for name in ("hosts", "domains", "users", "ips"):
            values = data.get(name) or {}
            if isinstance(values, dict):
                getattr(anonymizer, name).update({str(k): str(v) for k, v in values.items()})
        anonymizer._compile()
        return anonymizer


def _next(prefix: str, used, avoid: set[str]) -> str:
    taken = set(used)
    number = len(taken) + 1
    while f"{prefix}{number}" in taken or f"{prefix}{number}" in avoid:
        number += 1
    return f"{prefix}{number}"
