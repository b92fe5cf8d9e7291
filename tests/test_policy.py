"""browserskill/base/policy.py as pure data: parsing, URL matching, rules, narrowing.

The browser-side enforcement is tests/test_policy_enforced.py; here the matching alone,
by example and by property (hypothesis), with no daemon and no browser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from browserskill.base import policy as pol
from browserskill.base.catalog import tool_names
from browserskill.base.policy import Policy, PolicyError, domain_matches, parse

ISSUE_EXAMPLE = {
    "allow_domains": ["127.0.0.1", "*.example.com"], "block_domains": ["localhost"],
    "confirm": [{"role": "button", "name": "(?i)pay|buy"}, {"tool": "upload"}],
    "deny": [{"tool": "eval", "domain": "bank.example"}],
}


def test_the_issue_example_parses_as_json_and_toml_alike(tmp_path: Path) -> None:
    as_json = tmp_path / "p.json"
    as_json.write_text(json.dumps(ISSUE_EXAMPLE))
    as_toml = tmp_path / "p.toml"
    as_toml.write_text('allow_domains = ["127.0.0.1", "*.example.com"]\n'
                       'block_domains = ["localhost"]\n'
                       '[[confirm]]\nrole = "button"\nname = "(?i)pay|buy"\n'
                       '[[confirm]]\ntool = "upload"\n'
                       '[[deny]]\ntool = "eval"\ndomain = "bank.example"\n')
    a, b = pol.load(as_json, tool_names()), pol.load(as_toml, tool_names())
    assert a == b and a.active
    assert a.to_json()["confirm"] == ISSUE_EXAMPLE["confirm"]
    assert a.allow_schemes == pol.DEFAULT_SCHEMES


def test_urls_by_domain_port_and_scheme() -> None:
    p = parse({"allow_domains": ["127.0.0.1", "*.example.com", "localhost:8080"],
               "block_domains": ["evil.example.com"]})
    assert p.url_refusal("http://127.0.0.1:9/x") is None
    assert p.url_refusal("https://example.com/") is None  # *.x covers x itself
    assert p.url_refusal("https://a.b.example.com/") is None
    assert "block_domains" in (p.url_refusal("https://evil.example.com/") or "")
    # Another spelling of the same host is the same host (case, DNS's trailing dot).
    for url in ("https://EVIL.example.com/", "https://evil.example.com./"):
        assert "block_domains" in (p.url_refusal(url) or ""), url
        assert "block_domains" in (parse({"block_domains": ["evil.example.com"]})
                                   .url_refusal(url) or ""), url
    assert p.url_refusal("http://localhost:8080/") is None
    assert "allow_domains" in (p.url_refusal("http://localhost:8081/") or "")
    assert "allow_domains" in (p.url_refusal("https://example.com.evil.net/") or "")
    assert "allow_domains" in (p.url_refusal("wss://other.net/socket") or "")
    for url in ("file:///etc/shadow", "chrome://settings", "FILE:///etc/passwd",
                "chrome-extension://abc/x.html", "view-source:http://127.0.0.1/"):
        assert "schemes" in (p.url_refusal(url) or ""), url
    for url in ("about:blank", "data:text/html,x", "blob:http://127.0.0.1/1"):
        assert p.url_refusal(url) is None, url
    assert parse({"allow_schemes": ["http", "https", "file"]}).url_refusal("file:///x") is None


def test_no_policy_allows_everything() -> None:
    p = Policy()
    assert not p.active and not p.restricts_urls
    assert p.url_refusal("file:///etc/shadow") is None
    assert p.verdict(tool="eval", role="button", name="Pay", url="https://x/").kind == "allow"


def test_rules_match_on_every_key_they_give_deny_first() -> None:
    p = parse(ISSUE_EXAMPLE)
    assert p.verdict(tool="click", role="button", name="Buy now").kind == "confirm"
    assert p.verdict(tool="click", role="link", name="Buy now").kind == "allow"
    assert p.verdict(tool="click").kind == "allow"  # no target: a target rule can't match
    assert p.verdict(tool="upload").kind == "confirm"
    denied = p.verdict(tool="eval", url="https://bank.example/acct")
    assert denied.kind == "deny" and denied.index == 0
    assert denied.rule is not None and denied.rule.describe() == "tool=eval domain=bank.example"
    assert p.verdict(tool="eval", url="https://other.example/").kind == "allow"
    assert p.verdict(tool="eval").kind == "allow"  # a domain rule needs a page
    both = parse({"confirm": [{"tool": "eval"}], "deny": [{"tool": "eval"}]})
    assert both.verdict(tool="eval").kind == "deny"


def test_tools_are_named_as_the_cli_says_them() -> None:
    p = parse({"confirm": [{"tool": "state load"}, {"tool": "cookies-set"}]}, tools=tool_names())
    assert p.verdict(tool="state_load").kind == "confirm"
    assert p.verdict(tool="cookies_set").kind == "confirm"
    with pytest.raises(PolicyError, match="no tool 'evall'"):
        parse({"deny": [{"tool": "evall"}]}, tools=tool_names())


@pytest.mark.parametrize(("data", "says"), [
    ([], "a policy is an object"),
    ({"allow_domain": ["x"]}, "unknown key(s) allow_domain"),
    ({"allow_domains": "x"}, "allow_domains: a list of non-empty strings"),
    ({"allow_domains": [""]}, "allow_domains: a list of non-empty strings"),
    ({"deny": {"tool": "eval"}}, "deny: a list of rules"),
    ({"deny": [{}]}, "deny[0]: a rule is an object"),
    ({"deny": [{"tool": "eval", "when": "x"}]}, "deny[0]: unknown key(s) when"),
    ({"confirm": [{"name": "("}]}, "confirm[0].name: not a regular expression"),
    ({"confirm": [{"role": 3}]}, "confirm[0].role: a non-empty string"),
])
def test_a_bad_policy_names_what_is_wrong(data: object, says: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse(data)
    assert says in str(e.value)


def test_load_names_the_file_and_its_format(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        pol.load(tmp_path / "none.json")
    bad = tmp_path / "p.toml"
    bad.write_text("allow_domains = [")
    with pytest.raises(PolicyError, match="is not valid TOML"):
        pol.load(bad)


def test_narrowing_only_narrows() -> None:
    p = parse({"allow_domains": ["*.example.com", "127.0.0.1:8080"],
               "block_domains": ["bad.example.com"]})
    n = p.narrowed(allow_domains=["shop.example.com"], block_domains=["ads.example.com"])
    assert n.url_refusal("https://shop.example.com/") is None
    assert n.url_refusal("https://www.example.com/") is not None
    assert n.url_refusal("https://ads.example.com/") is not None
    assert n.block_domains[0] == "bad.example.com"  # the daemon's blocks stay
    p.narrowed(allow_domains=["*.shop.example.com", "127.0.0.1:8080"])
    for wider in (["example.org"], ["*"], ["*.com"], ["127.0.0.1"], ["127.0.0.1:9"]):
        with pytest.raises(PolicyError, match="never widen"):
            p.narrowed(allow_domains=wider)
    # No allow list in the daemon's policy: any allow list narrows it.
    assert Policy().narrowed(allow_domains=["x.test"]).url_refusal("http://y.test/")


# -- properties ------------------------------------------------------------------------

labels = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)
hosts = st.lists(labels, min_size=1, max_size=4).map(".".join)
ports = st.none() | st.integers(min_value=1, max_value=65535)
schemes = st.sampled_from(["http", "https", "ws", "wss"])


def _url(scheme: str, host: str, port: int | None) -> str:
    return f"{scheme}://{host}{f':{port}' if port else ''}/path?q=1"


@settings(max_examples=150, deadline=None)
@given(hosts, hosts, ports, schemes)
def test_a_block_always_wins(allowed: str, blocked: str, port: int | None,
                             scheme: str) -> None:
    p = parse({"allow_domains": [allowed, blocked, "*." + blocked],
               "block_domains": [blocked]})
    assert p.url_refusal(_url(scheme, blocked, port)) is not None


@settings(max_examples=150, deadline=None)
@given(hosts, labels, ports, schemes)
def test_a_star_glob_covers_the_domain_and_its_subdomains_only(
        domain: str, sub: str, port: int | None, scheme: str) -> None:
    p = parse({"allow_domains": ["*." + domain]})
    assert p.url_refusal(_url(scheme, domain, port)) is None
    assert p.url_refusal(_url(scheme, f"{sub}.{domain}", port)) is None
    # A look-alike that only ends with the same letters is not covered.
    assert p.url_refusal(_url(scheme, f"{sub}{domain}", port)) is not None
    assert p.url_refusal(_url(scheme, f"{domain}.{sub}x", port)) is not None


@settings(max_examples=150, deadline=None)
@given(hosts, st.integers(min_value=1, max_value=65535), st.integers(min_value=1,
                                                                      max_value=65535))
def test_a_port_in_a_pattern_covers_that_port_only(host: str, port: int, other: int) -> None:
    assert domain_matches(f"{host}:{port}", host, port)
    assert domain_matches(host, host, other)  # no port: every port
    assert domain_matches(f"{host}:{port}", host, other) == (port == other)


@settings(max_examples=100, deadline=None)
@given(st.lists(hosts, min_size=1, max_size=3), st.lists(hosts, min_size=1, max_size=3),
       hosts, ports, schemes)
def test_a_narrowed_policy_allows_no_url_the_daemons_refuses(
        allowed: list[str], narrow: list[str], probe: str, port: int | None,
        scheme: str) -> None:
    """Whatever a session asks, what it gets is within the daemon's policy (or refused)."""
    daemon = parse({"allow_domains": [*allowed, *("*." + a for a in allowed)]})
    try:
        session = daemon.narrowed(allow_domains=narrow, block_domains=[probe])
    except PolicyError:
        return
    for host in [probe, *narrow, *allowed, "x." + probe]:
        url = _url(scheme, host, port)
        if daemon.url_refusal(url) is not None:
            assert session.url_refusal(url) is not None, (url, narrow)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.sampled_from(["button", "link", "textbox"]))
def test_a_name_rule_is_a_regular_expression_search(name: str, role: str) -> None:
    p = parse({"deny": [{"role": "button", "name": "(?i)pay|buy|delete"}]})
    expected = role == "button" and any(w in name.lower() for w in ("pay", "buy", "delete"))
    assert (p.verdict(tool="click", role=role, name=name).kind == "deny") == expected
