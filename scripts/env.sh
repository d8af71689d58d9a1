# Sourced by the scripts: the environment Cohort runs in.
# Spark's Python workers must use the venv's interpreter, not whatever python is on PATH.
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
# Ray runs its workers at nice 15 by default; Cohort's coordinators are a latency-bound
# service (members' sessions expire when a partition is starved), so a Ray this shell starts
# gives them the same share of a busy machine as anything else (docs/operations.md).
export RAY_worker_niceness="${RAY_worker_niceness:-0}"
# A raylet waits 15 s for its dashboard agent to report its ports; on a loaded machine, or
# beside another Ray holding the agent's default port (the agent retries it), the agent takes
# longer and the raylet aborts ("node timed out during startup"): seen with a second Ray
# running beside the test session. Two minutes, as for any process start here.
export RAY_agent_register_timeout_ms="${RAY_agent_register_timeout_ms:-120000}"
