"""Security as Kafka users set it up, end to end: SASL/PLAIN and SCRAM-SHA-256 users in the
controller, TLS with a certificate made here, ACLs added with ``cohort acls`` and checked on
every group API by a gateway started with the authorizer."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import ray
from kafka.protocol.consumer import OffsetCommitResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from actors.gateway.launch import start_gateway, stop_gateway
from actors.tools import admin_security
from protocol import messages as m
from protocol.errors import Errors
from protocol.security.acls import AclBinding, AclFilter
from tests.gateway.conftest import unique, wait_for, whole
from tests.gateway.scram_client import ScramClient
from tests.gateway.wire_client import WireClient, offset_commit_request

pytestmark = pytest.mark.ray

NAME = "gateway-secure"
COHORT = str(Path(sys.executable).with_name("cohort"))
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}


def _certificate(directory: Path) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1, made with the openssl command."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


@pytest.fixture(scope="module")
def secure(cluster, tmp_path_factory):
    """A SASL_SSL gateway with the authorizer on; users alice, bob and admin (super user)."""
    cert, key = _certificate(tmp_path_factory.mktemp("tls"))
    for user, password in PASSWORDS.items():
        admin_security.add_user(user, password)
    bootstrap = start_gateway(cluster.num_partitions, cluster.config, port=0, name=NAME,
                              sasl_mechanisms=["PLAIN", "SCRAM-SHA-256"], tls_certfile=cert,
                              tls_keyfile=key, authorizer=True, super_users=["User:admin"])
    yield bootstrap, cert
    stop_gateway(NAME)
    for user in PASSWORDS:
        admin_security.delete_user(user)


def _tls(cert: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cert)
    return ctx


def _client_config(cert: str, user: str, mechanism: str, password: str | None = None) -> dict:
    return {"security.protocol": "SASL_SSL", "ssl.ca.location": cert,
            "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password or PASSWORDS[user]}


def _cohort(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run([COHORT, *args, "--address", address, "--json"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return done


def _authenticate(client: WireClient, user: str, password: str, mechanism: str) -> int:
    """SaslHandshake then SaslAuthenticate; the last error code."""
    hs = client.call(SaslHandshakeRequest[1](mechanism=mechanism), SaslHandshakeResponse, 1)
    assert hs.error_code == 0, hs
    if mechanism == "PLAIN":
        token = f"\x00{user}\x00{password}".encode()
        return client.call(SaslAuthenticateRequest[2](auth_bytes=token),
                           SaslAuthenticateResponse, 2).error_code
    scram = ScramClient(user, password)
    first = client.call(SaslAuthenticateRequest[2](auth_bytes=scram.first()),
                        SaslAuthenticateResponse, 2)
    if first.error_code:
        return first.error_code
    final = client.call(SaslAuthenticateRequest[2](auth_bytes=scram.final(first.auth_bytes)),
                        SaslAuthenticateResponse, 2)
    assert final.error_code or scram.verify(final.auth_bytes)
    return final.error_code


def test_acls_are_added_listed_and_removed_with_cohort_acls(cluster):
    group, topic = unique("acl-cli"), unique("acl-cli-t")
    added = json.loads(_cohort("acls", "--add", "--allow-principal", "User:carol",
                               "--operation", "Read", "--group", group, "--topic", topic).stdout)
    assert {(r["resource_type"], r["resource_name"], r["operation"]) for r in added} == {
        ("GROUP", group, "READ"), ("TOPIC", topic, "READ")}
    listed = json.loads(_cohort("acls", "--list", "--principal", "User:carol").stdout)
    assert {r["resource_name"] for r in listed} >= {group, topic}
    _cohort("acls", "--remove", "--allow-principal", "User:carol", "--group", group,
            "--topic", topic)
    assert admin_security.list_acls(AclFilter(principal="User:carol")) == []


def test_an_authorised_scram_user_joins_over_tls_and_reads(cluster, secure, members):
    bootstrap, cert = secure
    group, topic = unique("sec-g"), unique("sec-t")
    cluster.create_topic(topic, 2)
    admin_security.add_acls([
        AclBinding("User:alice", "GROUP", group, "READ"),
        AclBinding("User:alice", "TOPIC", topic, "READ")])
    alice = members.add(bootstrap, group, [topic],
                        config=_client_config(cert, "alice", "SCRAM-SHA-256"))
    wait_for(lambda: whole([alice], [(topic, 0), (topic, 1)]))
    wait_for(lambda: sum(alice.processed().values()) > 0)
    assert cluster.describe(group).members[0].client_host == "/127.0.0.1"  # as Kafka shows it


def test_an_unauthorised_principal_gets_group_authorization_failed_and_changes_nothing(
        cluster, secure, members):
    bootstrap, cert = secure
    group, topic = unique("sec-deny"), unique("sec-deny-t")
    cluster.create_topic(topic, 2)
    admin_security.add_acls([AclBinding("User:bob", "TOPIC", topic, "READ")])
    bob = members.add(bootstrap, group, [topic], config=_client_config(cert, "bob", "PLAIN"))
    wait_for(lambda: any("authorization" in e.lower() for e in bob.errors))
    assert bob.assignment() == []
    assert cluster.describe(group).error_code == Errors.GROUP_ID_NOT_FOUND  # never created
    client = WireClient(bootstrap, tls=_tls(cert))
    assert _authenticate(client, "bob", PASSWORDS["bob"], "PLAIN") == 0
    reply = client.call(offset_commit_request(group, topic, 99), OffsetCommitResponse, 8)
    assert reply.topics[0].partitions[0].error_code == 30  # GROUP_AUTHORIZATION_FAILED
    assert cluster.call(m.OffsetFetchRequest(group_id=group)).topics == []
    client.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_wrong_password_fails_sasl_and_closes_the_connection(secure, mechanism):
    bootstrap, cert = secure
    client = WireClient(bootstrap, tls=_tls(cert))
    assert _authenticate(client, "alice", "not-her-password", mechanism) == 58
    assert client.closed_by_peer()
    right = WireClient(bootstrap, tls=_tls(cert))
    assert _authenticate(right, "alice", PASSWORDS["alice"], mechanism) == 0
    reply = right.call(ApiVersionsRequest[0](), ApiVersionsResponse, 0)
    assert reply.error_code == 0
    right.close()


def test_a_request_before_authentication_closes_the_connection(secure):
    bootstrap, cert = secure
    client = WireClient(bootstrap, tls=_tls(cert))
    client.send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))
    assert client.closed_by_peer()


def test_a_super_user_needs_no_acl(cluster, secure, members):
    bootstrap, cert = secure
    group, topic = unique("sec-admin"), unique("sec-admin-t")
    cluster.create_topic(topic, 1)
    admin = members.add(bootstrap, group, [topic],
                        config=_client_config(cert, "admin", "SCRAM-SHA-256"))
    wait_for(lambda: whole([admin], [(topic, 0)]))


def test_a_partition_listener_demands_what_its_gateway_demands(cluster, secure):
    """Group traffic goes to the partitions' own listeners: TLS, SASL and the same ACLs and
    users hold there as at the gateway."""
    _, cert = secure
    group, topic = unique("sec-part"), unique("sec-part-t")
    cluster.create_topic(topic, 1)
    gateway = ray.get_actor(NAME, namespace="cohort")
    address = wait_for(lambda: ray.get(gateway.coordinators.remote()).get(
        cluster.partition_for(group)))
    early = WireClient(address, tls=_tls(cert))
    early.send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))
    assert early.closed_by_peer()
    bob = WireClient(address, tls=_tls(cert))
    assert _authenticate(bob, "bob", "not-his-password", "SCRAM-SHA-256") == 58
    bob = WireClient(address, tls=_tls(cert))
    assert _authenticate(bob, "bob", PASSWORDS["bob"], "PLAIN") == 0
    denied = bob.call(offset_commit_request(group, topic, 5), OffsetCommitResponse, 8)
    assert denied.topics[0].partitions[0].error_code == 30  # GROUP_AUTHORIZATION_FAILED
    bob.close()
    admin_security.add_acls([AclBinding("User:alice", "GROUP", group, "READ"),
                             AclBinding("User:alice", "TOPIC", topic, "READ")])
    alice = WireClient(address, tls=_tls(cert))
    assert _authenticate(alice, "alice", PASSWORDS["alice"], "SCRAM-SHA-256") == 0
    allowed = alice.call(offset_commit_request(group, topic, 6), OffsetCommitResponse, 8)
    alice.close()
    assert allowed.topics[0].partitions[0].error_code == 0
    fetched = cluster.call(m.OffsetFetchRequest(group_id=group)).topics
    assert [(t.name, p.committed_offset) for t in fetched for p in t.partitions] == [(topic, 6)]
