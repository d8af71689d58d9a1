"""One Spark-on-Ray session (RayDP) for the whole test session, on the session's Ray.

It starts after the ``cluster`` fixture's Ray and stops before it. One executor with one core:
the session's Ray has 2 CPUs, the executor actor holds one for as long as Spark runs, and the
RayDP app master is placed with none, which leaves one CPU for ``ray.data``'s tasks.
"""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def spark(cluster):
    # scripts/setup.sh installs Java; without it these tests must fail, not vanish.
    assert shutil.which("java") is not None, "Spark needs a Java runtime (java on PATH)"
    import raydp

    from actors.tools.export import start_spark

    session = start_spark(app_name="cohort-tests", num_executors=1, executor_cores=1,
                          executor_memory="1GB")
    yield session
    raydp.stop_spark()
