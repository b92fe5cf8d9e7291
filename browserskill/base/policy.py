"""A person's policy: where a session's pages may go, what waits for a person, what is refused.

Loaded once when the daemon starts (`daemon start --policy FILE`, `BSK_POLICY`; TOML or
JSON, the same keys); nothing an agent can call changes it while the daemon runs. A
session may narrow it at its start (`narrowed`), never widen it. docs/safety.md says
what each measure stops and what it does not.

Invariants (pure data and matching, no I/O but `load`'s one read):
- No policy (`Policy()`) allows everything, as bsk did before policies: every check
  passes, no rule holds or refuses anything.
- A URL is allowed only if its scheme is allowed and, for a scheme with a host, the
  host is in `allow_domains` (when given) and in no `block_domains`; a block wins.
  Under a policy file `file:`, `chrome:` and the like are refused unless
  `allow_schemes` names them.
- A rule matches an operation when every key it gives matches (`tool`, `role`, `name`
  as a regular expression searched in the target's accessible name, `domain` as a host
  glob); a key the rule gives that the operation lacks (no target, no page) does not
  match. `deny` is checked before `confirm`.
- Narrowing only removes: a session's allowed domains must each be covered by the
  daemon's, its blocked domains are added, its schemes must be a subset.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

# Schemes a page may use under a policy unless `allow_schemes` says otherwise: the web's
# own, and the documents a browser makes for itself without reading anything local.
DEFAULT_SCHEMES = ("http", "https", "ws", "wss", "about", "data", "blob")
# Schemes whose URL names a host the domain lists judge.
HOST_SCHEMES = frozenset({"http", "https", "ws", "wss"})
RULE_KEYS = ("tool", "role", "name", "domain")
POLICY_KEYS = ("allow_domains", "block_domains", "allow_schemes", "confirm", "deny")


class PolicyError(ValueError):
    """A policy file or a narrowing that cannot be used; the message says why."""


def tool_name(name: str) -> str:
    """A tool as a rule may write it (`state load`, `state-load`) as bsk names it
    (`state_load`)."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def _host_port(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL; host lower-case, '' when it has none."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    # `evil.example.` is `evil.example` to DNS: the trailing dot must not slip past.
    return parts.scheme.lower(), (parts.hostname or "").lower().rstrip("."), port


def domain_matches(pattern: str, host: str, port: int | None = None) -> bool:
    """Whether a host (and port) is covered by a glob like `*.example.com` or `127.0.0.1:8080`.

    `*.example.com` covers example.com itself and every subdomain; a pattern without a
    port covers every port; `[::1]` style IPv6 hosts are written without brackets or with.
    """
    pattern = pattern.strip().lower()
    want_port: int | None = None
    if pattern.startswith("["):  # [::1]:8080
        end = pattern.find("]")
        rest = pattern[end + 1:]
        pattern = pattern[1:end]
        if rest.startswith(":") and rest[1:].isdigit():
            want_port = int(rest[1:])
    elif pattern.count(":") == 1:
        name, _, port_text = pattern.partition(":")
        if port_text.isdigit():
            pattern, want_port = name, int(port_text)
    if want_port is not None and port != want_port:
        return False
    host = host.strip("[]").lower()
    if fnmatch.fnmatchcase(host, pattern):
        return True
    return pattern.startswith("*.") and host == pattern[2:]


@dataclass(frozen=True)
class Rule:
    """One `confirm` or `deny` entry: every key it gives must match."""

    tool: str | None = None
    role: str | None = None
    name: re.Pattern[str] | None = None
    domain: str | None = None

    @classmethod
    def parse(cls, raw: Any, where: str) -> Rule:
        if not isinstance(raw, dict) or not raw:
            raise PolicyError(f"{where}: a rule is an object with any of {', '.join(RULE_KEYS)}")
        unknown = sorted(set(raw) - set(RULE_KEYS))
        if unknown:
            raise PolicyError(f"{where}: unknown key(s) {', '.join(unknown)}; a rule takes "
                              f"{', '.join(RULE_KEYS)}")
        for key, value in raw.items():
            if not isinstance(value, str) or not value:
                raise PolicyError(f"{where}.{key}: a non-empty string")
        try:
            name = re.compile(raw["name"]) if "name" in raw else None
        except re.error as exc:
            raise PolicyError(f"{where}.name: not a regular expression ({exc})") from None
        tool = tool_name(raw["tool"]) if "tool" in raw else None
        return cls(tool=tool, role=raw.get("role"), name=name, domain=raw.get("domain"))

    def matches(self, *, tool: str, role: str | None = None, name: str | None = None,
                url: str | None = None) -> bool:
        if self.tool is not None and self.tool != tool_name(tool):
            return False
        if self.role is not None and (role is None or role.lower() != self.role.lower()):
            return False
        if self.name is not None and (name is None or not self.name.search(name)):
            return False
        if self.domain is not None:
            if not url:
                return False
            _, host, port = _host_port(url)
            if not host or not domain_matches(self.domain, host, port):
                return False
        return True

    def to_json(self) -> dict[str, str]:
        out = {"tool": self.tool, "role": self.role,
               "name": self.name.pattern if self.name else None, "domain": self.domain}
        return {k: v for k, v in out.items() if v is not None}

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.to_json().items())


@dataclass(frozen=True)
class Verdict:
    """What the policy says of one operation: go ahead, wait for a person, or refuse."""

    kind: Literal["allow", "confirm", "deny"]
    rule: Rule | None = None
    index: int | None = None  # the rule's place in its list, for messages


ALLOW = Verdict("allow")


@dataclass(frozen=True)
class Policy:
    allow_domains: tuple[str, ...] | None = None  # None: any domain
    block_domains: tuple[str, ...] = ()
    allow_schemes: tuple[str, ...] | None = None  # None: any scheme (no policy file)
    confirm: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    source: str | None = field(default=None, compare=False)  # the file it came from

    @property
    def active(self) -> bool:
        """Whether anything is restricted at all (no policy: every check passes)."""
        return bool(self.allow_domains is not None or self.block_domains
                    or self.allow_schemes is not None or self.confirm or self.deny)

    @property
    def restricts_urls(self) -> bool:
        """Whether some URL is refused (the session's pages are then intercepted)."""
        return bool(self.allow_domains is not None or self.block_domains
                    or self.allow_schemes is not None)

    def url_refusal(self, url: str) -> str | None:
        """Why a page may not load `url` (naming the rule), or None when it may."""
        scheme, host, port = _host_port(url)
        if self.allow_schemes is not None and scheme and scheme not in self.allow_schemes:
            return (f"the policy allows the schemes {', '.join(self.allow_schemes)}; "
                    f"{scheme}: is not among them")
        if scheme not in HOST_SCHEMES or not host:
            return None
        for pattern in self.block_domains:
            if domain_matches(pattern, host, port):
                return f"{host} is blocked by the policy's block_domains entry {pattern!r}"
        if self.allow_domains is not None and not any(
                domain_matches(p, host, port) for p in self.allow_domains):
            return f"{host} is not in the policy's allow_domains"
        return None

    def verdict(self, *, tool: str, role: str | None = None, name: str | None = None,
                url: str | None = None) -> Verdict:
        """The first deny rule that matches, else the first confirm rule, else allow."""
        for kind, rules in (("deny", self.deny), ("confirm", self.confirm)):
            for index, rule in enumerate(rules):
                if rule.matches(tool=tool, role=role, name=name, url=url):
                    return Verdict(kind, rule, index)  # type: ignore[arg-type]
        return ALLOW

    def narrowed(self, *, allow_domains: list[str] | None = None,
                 block_domains: list[str] | None = None) -> Policy:
        """This policy for one session, narrowed by what the session's start asked."""
        allow = self.allow_domains
        if allow_domains:
            if self.allow_domains is not None:
                wider = [d for d in allow_domains if not _covered(d, self.allow_domains)]
                if wider:
                    raise PolicyError(
                        f"--allow-domain {', '.join(wider)} is outside the daemon's "
                        f"allow_domains ({', '.join(self.allow_domains)}); a session can "
                        "narrow the policy, never widen it")
            allow = tuple(allow_domains)
        block = self.block_domains + tuple(block_domains or ())
        return replace(self, allow_domains=allow, block_domains=block)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "active": self.active,
                "allow_domains": list(self.allow_domains) if self.allow_domains is not None
                else None,
                "block_domains": list(self.block_domains),
                "allow_schemes": list(self.allow_schemes) if self.allow_schemes is not None
                else None,
                "confirm": [r.to_json() for r in self.confirm],
                "deny": [r.to_json() for r in self.deny]}


def _split_port(pattern: str) -> tuple[str, int | None]:
    pattern = pattern.strip().lower()
    if pattern.startswith("["):
        host, _, rest = pattern[1:].partition("]")
        return host, int(rest[1:]) if rest[1:].isdigit() else None
    if pattern.count(":") == 1:
        host, _, port = pattern.partition(":")
        if port.isdigit():
            return host, int(port)
    return pattern, None


def _covered(pattern: str, allowed: tuple[str, ...]) -> bool:
    """Whether every host `pattern` covers is covered by one of `allowed` (conservatively:
    an exact entry, a plain host one of them covers, or `*.a.b` under an outer `*.b`)."""
    host, port = _split_port(pattern)
    for outer in allowed:
        outer_host, outer_port = _split_port(outer)
        if outer_port is not None and outer_port != port:
            continue  # the session's entry reaches ports the daemon's does not
        if host.startswith("*."):
            if outer_host.startswith("*.") and (host[2:] == outer_host[2:]
                                                or host.endswith("." + outer_host[2:])):
                return True
        elif not any(c in host for c in "*?[") and domain_matches(outer_host, host):
            return True
    return False


def _string_list(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
        raise PolicyError(f"{where}: a list of non-empty strings")
    return tuple(x.strip() for x in raw)


def parse(data: Any, source: str | None = None,
          tools: Collection[str] | None = None) -> Policy:
    """A policy from its JSON/TOML data; PolicyError naming the first key that is wrong.
    `tools`: the tool names there are (a rule naming another would never match)."""
    if not isinstance(data, dict):
        raise PolicyError("a policy is an object (a JSON object or a TOML table)")
    unknown = sorted(set(data) - set(POLICY_KEYS))
    if unknown:
        raise PolicyError(f"unknown key(s) {', '.join(unknown)}; a policy takes "
                          f"{', '.join(POLICY_KEYS)}")
    rules: dict[str, tuple[Rule, ...]] = {}
    for kind in ("confirm", "deny"):
        raw = data.get(kind, [])
        if not isinstance(raw, list):
            raise PolicyError(f"{kind}: a list of rules")
        rules[kind] = tuple(Rule.parse(r, f"{kind}[{i}]") for i, r in enumerate(raw))
        for i, rule in enumerate(rules[kind]):
            if tools is not None and rule.tool is not None and rule.tool not in tools:
                raise PolicyError(f"{kind}[{i}].tool: no tool {rule.tool!r} (tools are "
                                  "named as `bsk --help` lists them, e.g. eval, upload, "
                                  "state load)")
    schemes = (tuple(s.lower().rstrip(":") for s in _string_list(data["allow_schemes"],
                                                                  "allow_schemes"))
               if "allow_schemes" in data else DEFAULT_SCHEMES)
    return Policy(
        allow_domains=(_string_list(data["allow_domains"], "allow_domains")
                       if "allow_domains" in data else None),
        block_domains=_string_list(data.get("block_domains", []), "block_domains"),
        allow_schemes=schemes, confirm=rules["confirm"], deny=rules["deny"], source=source)


def load(path: str | Path, tools: Collection[str] | None = None) -> Policy:
    """Read a policy file: `.toml` as TOML, anything else as JSON."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"cannot read the policy file {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".toml":
            import tomllib
            data: Any = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError and tomllib.TOMLDecodeError
        raise PolicyError(f"{path} is not valid {'TOML' if path.suffix == '.toml' else 'JSON'}"
                          f": {exc}") from None
    return parse(data, str(path.resolve()), tools)
