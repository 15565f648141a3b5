"""`--anonymize`: stable stand-ins for host names, domains, IPs and users."""

from __future__ import annotations

from sparktriage.redact.anonymize import Anonymizer


def _anon(*hosts: str, users: tuple[str, ...] = ()) -> Anonymizer:
    anonymizer = Anonymizer()
    for host in hosts:
        anonymizer.learn_host(host)
    for user in users:
        anonymizer.learn_user(user)
    anonymizer.seal()
    return anonymizer


def test_hosts_are_numbered_in_sorted_order_and_stable():
    a = _anon("spark-02", "spark-01")
    assert a.apply("spark-01 talks to spark-02; spark-01 again") == "host-1 talks to host-2; host-1 again"
    assert a.apply("SPARK-01") == "host-1"
    assert a.apply("spark-010 and myspark-01") == "spark-010 and myspark-01"  # whole names only


def test_domains_cover_unseen_subdomain_hosts_consistently():
    a = _anon("gpu1.lab.acme.net")
    assert a.apply("gpu1.lab.acme.net") == "host-1"
    first = a.apply("gpu7.lab.acme.net joined")
    assert first.startswith("host-2") and a.apply("gpu7.lab.acme.net") == "host-2"
    assert a.apply("search lab.acme.net") == "search domain-1.example"


def test_ips_get_documentation_addresses_in_order_of_appearance():
    a = _anon()
    out = a.apply("10.0.0.5 -> 10.0.0.6 -> 10.0.0.5 and fe80::1ff:fe23:4567:890a")
    assert out == "192.0.2.1 -> 192.0.2.2 -> 192.0.2.1 and 2001:db8::1"
    assert a.apply("127.0.0.1 0.0.0.0 ::1 12:30:45") == "127.0.0.1 0.0.0.0 ::1 12:30:45"
    assert a.apply("version 2.27.7 and 1.2.3.4.5") == "version 2.27.7 and 1.2.3.4.5"


def test_users_from_text_and_common_accounts_kept():
    a = Anonymizer()
    a.learn_text("ssh jdoe@spark-01 ls /home/mkumar/models https://svc:pw@hub.acme.net/x")
    a.learn_user("root")
    a.seal()
    out = a.apply("jdoe and mkumar as root on spark-01, hub.acme.net")
    assert "jdoe" not in out and "mkumar" not in out and "spark-01" not in out
    assert "hub.acme.net" not in out and "root" in out


def test_map_round_trip_keeps_stand_ins():
    a = _anon("spark-01", users=("jdoe",))
    a.apply("10.1.1.1")
    b = Anonymizer.from_map(a.as_map())
    assert b.apply("jdoe@spark-01 10.1.1.1 10.1.1.2") == "user-1@host-1 192.0.2.1 192.0.2.2"
