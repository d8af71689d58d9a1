"""The upstream's settings are refused at start, naming the setting to fix."""

from __future__ import annotations

import pytest

from actors.upstream.settings import UpstreamConfigError, UpstreamSettings


def test_bootstrap_list_is_read_in_order():
    s = UpstreamSettings.parse("a:9092, b:9093")
    assert s.bootstrap == (("a", 9092), ("b", 9093))
    assert s.text == "a:9092,b:9093"
    assert s.security_protocol == "PLAINTEXT" and s.sasl_mechanism is None


@pytest.mark.parametrize("bad", ["", "host", "host:", ":9092", "host:0", "host:70000",
                                 "host:nine"])
def test_an_address_that_is_not_host_port_is_refused(bad):
    with pytest.raises(UpstreamConfigError, match="host:port"):
        UpstreamSettings.parse(bad)


def test_an_unknown_setting_is_refused_by_name():
    with pytest.raises(UpstreamConfigError, match=r"sasl\.usernme"):
        UpstreamSettings.parse("a:1", {"sasl.usernme": "x"})


def test_sasl_needs_a_username_and_password():
    with pytest.raises(UpstreamConfigError, match=r"sasl\.username and sasl\.password"):
        UpstreamSettings.parse("a:1", {"security.protocol": "SASL_PLAINTEXT"})


def test_an_unknown_mechanism_or_protocol_is_refused():
    with pytest.raises(UpstreamConfigError, match="GSSAPI"):
        UpstreamSettings.parse("a:1", {"security.protocol": "SASL_PLAINTEXT",
                                       "sasl.mechanism": "GSSAPI", "sasl.username": "u",
                                       "sasl.password": "p"})
    with pytest.raises(UpstreamConfigError, match=r"security\.protocol"):
        UpstreamSettings.parse("a:1", {"security.protocol": "TLS"})


def test_the_password_never_shows_in_status():
    s = UpstreamSettings.parse("a:1", {"security.protocol": "SASL_SSL",
                                       "sasl.mechanism": "SCRAM-SHA-512",
                                       "sasl.username": "cohort", "sasl.password": "secret"})
    assert s.sasl_mechanism == "SCRAM-SHA-512"
    assert "secret" not in str(s.redacted())
    assert s.tls_context("a") is not None
