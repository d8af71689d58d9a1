# Sourced by the scripts: the environment Cohort runs in.
# Spark's Python workers must use the venv's interpreter, not whatever python is on PATH.
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
