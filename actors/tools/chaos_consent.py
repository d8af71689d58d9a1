"""``cohort chaos`` kills only a Cohort its caller named.

Chaos kills partition actors, the controller and client actors. Like every ``cohort``
command it finds Ray on its own (``RAY_ADDRESS``, else the local ``ray start``), so a shell
that happens to point at a cluster running a real Cohort would have had its coordinators
killed by a command meant for a test. The rule: chaos attacks a Cohort only when

- it started that Cohort itself (no controller was running on that Ray: the run's own), or
- the caller named the cluster with ``--address`` (the Ray is the one they meant), or
- the caller passed ``--yes`` (they know a Cohort runs there and want chaos on it).

Otherwise the command refuses before it changes anything (no actor started, no topic
created, nothing killed), with exit code 1 and a message that says how to go ahead.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Ray is imported only when chaos runs, not by every `cohort` command
    from actors.cluster import Cluster
    from protocol.config import CoordinatorConfig


class ChaosRefused(Exception):
    """Chaos would attack a running Cohort its caller did not name."""


def add_consent_arguments(chaos: argparse.ArgumentParser) -> None:
    chaos.add_argument("--address", default=None,
                       help="the Ray cluster to run on; naming it allows chaos on the Cohort "
                            "running there (default: RAY_ADDRESS, else the local Ray, else a "
                            "new local Ray)")
    chaos.add_argument("--yes", action="store_true",
                       help="run chaos on a Cohort already running on the Ray found without "
                            "--address (its actors are killed)")


def refusal(cohort_running: bool, address: str | None, yes: bool, where: str) -> str | None:
    """Why chaos must not run (None: it may). Pure: the rule of this module's docstring."""
    if not cohort_running or address is not None or yes:
        return None
    return (
        f"refusing to run: a Cohort is already running on the Ray at {where}, and chaos "
        f"kills its partitions, its controller and its clients; name that cluster with "
        f"--address {where}, or pass --yes to run chaos on it anyway"
    )


def attach(args: argparse.Namespace, config: CoordinatorConfig) -> tuple[Cluster, bool]:
    """The Cohort chaos may attack, and whether this process started the Ray it runs on;
    ``ChaosRefused`` (nothing changed) when the caller did not name a running Cohort."""
    import ray

    from actors.cluster import Cluster
    from actors.runtime.controller import CONTROLLER_NAME
    from actors.runtime.ray_driver import init_ray, named_actor_exists

    owns_ray = init_ray(args.address)
    running = named_actor_exists(CONTROLLER_NAME)
    reason = refusal(running, args.address, args.yes, ray.get_runtime_context().gcs_address)
    if reason is not None:
        raise ChaosRefused(reason)
    cluster = Cluster.start(num_partitions=args.partitions, storage_path=args.storage_path,
                            config=config)
    return cluster, owns_ray
