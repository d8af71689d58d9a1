"""Starting the one local Ray of a test session, on a machine whose cores are busy.

Ray 2.60's raylet gives the dashboard agent it spawns 15 s, a fixed bound, to write its port
files, and aborts when the agent has not (``NodeManager::WaitForDashboardAgentPorts``:
"Timed out waiting for file .../metrics_agent_port_..."); ``ray.init`` then fails with "The
current node timed out during startup". The agent is Python that imports aiohttp and
OpenTelemetry before it listens, which took longer than 15 s with three test lanes and
another session's jobs on two cores (ci57: the whole upstream session errored at setup).
``RAY_agent_register_timeout_ms`` does not reach that wait. A start that failed so is
started again, as a user would: its processes are gone (the raylet aborted, ``ray.shutdown``
reaps the rest), and the second agent finds its imports in the page cache.
"""

from __future__ import annotations

import logging
import os
import time

log = logging.getLogger(__name__)

STARTS = 3
STARTUP_FAILURE = "timed out during startup"


def start_local_ray(**kwargs) -> None:
    """``ray.init(address="local", namespace="cohort", ...)`` as the test sessions start it,
    ``kwargs`` added; started again (up to ``STARTS`` times) if the node timed out starting."""
    import ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # Coordinators are a service: at Ray's default nice 15 a busy machine starves them
    # (docs/decisions.md, "Cohort's processes run at nice 0"); scripts/env.sh says the same.
    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_agent_register_timeout_ms", "120000")  # scripts/env.sh
    options = dict(address="local", namespace="cohort", include_dashboard=False,
                   log_to_driver=False, num_cpus=2, object_store_memory=256 << 20)
    options.update(kwargs)
    for start in range(1, STARTS + 1):
        try:
            ray.init(**options)
            return
        except Exception as e:
            if STARTUP_FAILURE not in str(e) or start == STARTS:
                raise
            log.warning("local Ray start %d of %d failed (%s); starting it again",
                        start, STARTS, e)
            ray.shutdown()
            time.sleep(2)
