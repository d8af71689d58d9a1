"""``cohort gateway``, ``cohort acls`` and ``cohort users``: the Kafka wire gateway's commands.

``cohort gateway --port 9092`` starts the gateway on a running Cohort (``--stop`` stops it),
with SASL, TLS and the authorizer as Kafka's listener and broker settings name them;
``cohort acls`` takes ``kafka-acls.sh``'s options; ``cohort users`` manages SCRAM-SHA-256
users. ``cli`` registers these through ``add_gateway_parsers`` and ``gateway_commands``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from actors.tools.cli_io import connect, emit
from actors.tools.cli_io import print_result as out
from protocol.security.acls import CLUSTER_NAME, AclBinding, AclFilter

PATTERNS = {"literal": "LITERAL", "prefixed": "PREFIXED"}


def add_gateway_parsers(sub: argparse._SubParsersAction) -> None:
    chaos = sub.choices.get("chaos")
    if chaos is not None:
        chaos.add_argument("--kafka-clients", type=int, default=0, metavar="N",
                           help="also run N real confluent-kafka consumers (KIP-848, through "
                                "the gateway) in the groups; their timelines are checked too")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", default=None,
                        help="the Ray cluster (default: RAY_ADDRESS, else the local Ray)")
    common.add_argument("--json", action="store_true", help="print JSON for scripts")

    gw = sub.add_parser("gateway", parents=[common],
                        help="serve Kafka's wire protocol (unmodified Kafka clients join groups)")
    gw.add_argument("--port", type=int, default=9092)
    gw.add_argument("--host", default="127.0.0.1", help="address to listen on")
    gw.add_argument("--advertised-host", default=None,
                    help="the host clients are told to connect to (default: --host)")
    gw.add_argument("--sasl", default="", metavar="MECHS",
                    help="require SASL: PLAIN, SCRAM-SHA-256 or both (comma-separated)")
    gw.add_argument("--tls-cert", default=None, metavar="PEM", help="serve TLS with this cert")
    gw.add_argument("--tls-key", default=None, metavar="PEM", help="... and this key")
    gw.add_argument("--authorizer", action="store_true",
                    help="check ACLs (without it, every principal may do everything)")
    gw.add_argument("--super-user", action="append", default=[], metavar="PRINCIPAL",
                    help="a principal the authorizer always allows (repeatable)")
    gw.add_argument("--max-connections", type=int, default=None, metavar="N",
                    help="open client connections at most, as Kafka's max.connections "
                         "(default 1000); one more is closed at once")
    gw.add_argument("--coordinator-port", type=int, default=None, metavar="N",
                    help="partition p, the coordinator of its groups, listens on N + p "
                         "(default: any free port)")
    gw.add_argument("--stop", action="store_true", help="stop the running gateway")

    acls = sub.add_parser("acls", parents=[common], help="add, list, remove ACLs",
                          description="ACLs on groups, topics and the cluster, as "
                                      "kafka-acls.sh takes them; enforced by a gateway "
                                      "started with --authorizer.")
    action = acls.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true")
    action.add_argument("--remove", action="store_true")
    action.add_argument("--list", action="store_true")
    acls.add_argument("--allow-principal", action="append", default=[], metavar="P")
    acls.add_argument("--deny-principal", action="append", default=[], metavar="P")
    acls.add_argument("--principal", default=None, metavar="P", help="--list: only this one")
    acls.add_argument("--allow-host", default="*")
    acls.add_argument("--deny-host", default="*")
    acls.add_argument("--operation", action="append", default=[], metavar="OP",
                      help="Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, "
                           "AlterConfigs, All (repeatable; --add default: All)")
    acls.add_argument("--group", action="append", default=[], metavar="G")
    acls.add_argument("--topic", action="append", default=[], metavar="T")
    acls.add_argument("--cluster", action="store_true")
    acls.add_argument("--resource-pattern-type", default="literal", choices=list(PATTERNS))
    acls.add_argument("--force", action="store_true", help="accepted; Cohort never prompts")

    users = sub.add_parser("users", parents=[common], help="add, list, delete SCRAM users")
    what = users.add_mutually_exclusive_group(required=True)
    what.add_argument("--add", metavar="USER")
    what.add_argument("--delete", metavar="USER")
    what.add_argument("--list", action="store_true")
    users.add_argument("--password", default=None, help="--add: the user's password")
    users.add_argument("--iterations", type=int, default=4096)


def gateway_commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    """The commands, keyed by their name on the command line."""

    def gateway(args: argparse.Namespace) -> int:
        cluster = connect(args)
        if args.stop:
            cluster.stop_gateway()
            out("Gateway stopped.")
            return 0
        options = {"authorizer": args.authorizer, "super_users": args.super_user}
        if args.sasl:
            options["sasl_mechanisms"] = [m.strip() for m in args.sasl.split(",") if m.strip()]
        if args.tls_cert or args.tls_key:
            options.update(tls_certfile=args.tls_cert, tls_keyfile=args.tls_key)
        if args.advertised_host:
            options["advertised_host"] = args.advertised_host
        if args.max_connections is not None:
            options["max_connections"] = args.max_connections
        if args.coordinator_port is not None:
            options["coordinator_port"] = args.coordinator_port
        out(cluster.start_gateway(args.port, args.host, **options))
        return 0

    def acls(args: argparse.Namespace) -> int:
        from actors.tools import admin_security as sec

        resources = _resources(args)
        pattern = PATTERNS[args.resource_pattern_type]
        connect(args)
        if args.list:
            flt_principal = args.principal
            rows = [sec.acl_row(b) for b in sec.list_acls(AclFilter(principal=flt_principal))
                    if not resources or (b.resource_type, b.resource_name) in resources]
            emit(args, sec.ACL_COLUMNS, rows, [] if rows else ["No ACLs."])
            return 0
        bindings = _bindings(args, resources, pattern)
        if args.add:
            added = sec.add_acls(bindings)
            emit(args, sec.ACL_COLUMNS, [sec.acl_row(b) for b in bindings],
                 [f"Added {added} ACL(s):"])
        else:
            gone = [b for flt in _filters(args, resources, pattern)
                    for b in sec.remove_acls(flt)]
            emit(args, sec.ACL_COLUMNS, [sec.acl_row(b) for b in gone],
                 [f"Removed {len(gone)} ACL(s)."])
        return 0

    def users(args: argparse.Namespace) -> int:
        from actors.tools import admin_security as sec

        connect(args)
        if args.add:
            if not args.password:
                raise ValueError("--add needs --password")
            sec.add_user(args.add, args.password, args.iterations)
            out(f"User {args.add} set (SCRAM-SHA-256; PLAIN checks the same password).")
        elif args.delete:
            sec.delete_user(args.delete)
            out(f"User {args.delete} deleted.")
        else:
            emit(args, sec.USER_COLUMNS,
                 [{"user": u, "mechanism": "SCRAM-SHA-256"} for u in sec.list_users()])
        return 0

    return {"gateway": gateway, "acls": acls, "users": users}


def _resources(args: argparse.Namespace) -> list[tuple[str, str]]:
    out = [("GROUP", g) for g in args.group] + [("TOPIC", t) for t in args.topic]
    if args.cluster:
        out.append(("CLUSTER", CLUSTER_NAME))
    return out


def _principals(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    return ([(p, "ALLOW", args.allow_host) for p in args.allow_principal]
            + [(p, "DENY", args.deny_host) for p in args.deny_principal])


def _bindings(args, resources, pattern) -> list[AclBinding]:
    if not resources or not _principals(args):
        raise ValueError("--add needs a principal (--allow-principal / --deny-principal) and "
                         "a resource (--group, --topic or --cluster)")
    ops = [_camel(op) for op in args.operation] or ["ALL"]
    return [AclBinding(p, rtype, name, op, permission, pattern, host)
            for p, permission, host in _principals(args) for rtype, name in resources
            for op in ops]


def _filters(args, resources, pattern) -> list[AclFilter]:
    if not resources:
        raise ValueError("--remove needs a resource (--group, --topic or --cluster)")
    principals = _principals(args) or [(None, None, None)]
    ops = [_camel(op) for op in args.operation] or [None]
    return [AclFilter(p, rtype, name, op, permission, pattern, None if host == "*" else host)
            for p, permission, host in principals for rtype, name in resources for op in ops]


def _camel(op: str) -> str:
    """``DescribeConfigs`` / ``describe-configs`` / ``DESCRIBE_CONFIGS`` -> ``DESCRIBE_CONFIGS``."""
    out = ""
    for i, ch in enumerate(op):
        if ch.isupper() and i and op[i - 1].islower():
            out += "_"
        out += ch
    return out.replace("-", "_").upper()
