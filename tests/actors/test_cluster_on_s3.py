"""``Cluster.start`` on ``s3://`` end to end: the Controller's and the partitions' logs in a
real S3 endpoint (SeaweedFS), the AWS_* variables handed to the actors, the storage marker
adopted across a full restart. Runs ``cluster_on_s3.py`` in a process of its own, since it
needs a Ray and a Cohort of its own next to the session's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

SCRIPT = Path(__file__).with_name("cluster_on_s3.py")
ROOT = Path(__file__).resolve().parents[2]


def test_a_cohort_started_on_s3_serves_from_the_bucket_and_comes_back_after_a_restart(
    seaweedfs,
):
    env = {**os.environ, **seaweedfs.env, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), seaweedfs.url()], env=env, cwd=ROOT,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert "cluster on s3: ok" in done.stdout
