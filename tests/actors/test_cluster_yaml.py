"""cluster.yaml is a config `ray up` accepts, and it launches Cohort the way the README says.

Validation goes through the same steps `ray up` takes (`prepare_config`, then
`validate_config` with the `ray-schema.json` shipped in the ray package); the `ray start`
lines are parsed by `ray start`'s own option parser, so a misspelt flag fails here, not on
a freshly launched head node.
"""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import re
import shlex
from pathlib import Path

import jsonschema
import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from ray.autoscaler._private.util import prepare_config, validate_config
from ray.scripts.scripts import start as ray_start_cli

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_YAML = ROOT / "cluster.yaml"


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def _validate(config: dict) -> dict:
    """What `ray up` does with the loaded YAML before it touches a cloud."""
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    return prepared


def _commands(config: dict, *keys: str) -> list[str]:
    return [c for key in keys for c in config.get(key) or []]


def _simple_commands(command: str) -> list[list[str]]:
    """Split a shell line into its simple commands (at ; && || | and parentheses)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    out: list[list[str]] = [[]]
    for token in lexer:
        if token and set(token) <= set(";&|()"):
            out.append([])
        else:
            out[-1].append(token)
    return [words for words in out if words]


def _ray_start(commands: list[str]):
    """Parse the one `ray start` in ``commands`` with ray's CLI; return (env, click params)."""
    found = []
    for command in commands:
        for words in _simple_commands(command):
            env = {}
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                key, _, value = words.pop(0).partition("=")
                env[key] = value
            if words[:2] == ["ray", "start"]:
                found.append((env, ray_start_cli.make_context("start", words[2:]).params))
    assert len(found) == 1, f"expected one `ray start`, found {len(found)} in {commands}"
    return found[0]


def _cohort_start_calls(config: dict) -> list[tuple[str, dict]]:
    """Every ``python -c`` command that calls Cluster.start: (command, literal keywords)."""
    calls = []
    for command in _commands(config, "setup_commands", "head_setup_commands",
                             "worker_setup_commands", "head_start_ray_commands",
                             "worker_start_ray_commands"):
        words = [w for simple in _simple_commands(command) for w in simple]
        for i, word in enumerate(words[:-1]):
            if word == "-c" and "Cluster.start" in words[i + 1]:
                for node in ast.walk(ast.parse(words[i + 1])):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr == "start"):
                        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
                        calls.append((command, kwargs))
    return calls


def test_ray_up_accepts_the_config_with_rays_own_schema(raw):
    prepared = _validate(raw)
    assert raw["provider"]["type"] == "aws"
    assert prepared["head_node_type"] in prepared["available_node_types"]
    workers = prepared["available_node_types"]["ray.worker.default"]
    assert workers["max_workers"] > workers["min_workers"], "workers must be able to autoscale"


@pytest.mark.parametrize(
    ("break_it", "error"),
    [
        (lambda c: c.update(max_workers="four"), jsonschema.ValidationError),
        (lambda c: c.update(head_start_ray_commands="ray start --head"),
         jsonschema.ValidationError),
        (lambda c: c.update(head_start_ray_commands=[["ray", "start"]]),
         jsonschema.ValidationError),
        (lambda c: c.update(storage_path="/mnt/efs/cohort-data"), jsonschema.ValidationError),
        (lambda c: c.update(head_node_type="no.such.type"), ValueError),
    ],
    ids=["max_workers-not-int", "commands-not-list", "command-not-string", "unknown-field",
         "head-type-not-declared"],
)
def test_a_broken_copy_is_rejected_so_the_validator_really_runs(raw, break_it, error):
    broken = copy.deepcopy(raw)
    break_it(broken)
    with pytest.raises(error):
        _validate(broken)


def test_the_head_serves_ray_clients_on_the_port_the_readme_connects_to(raw):
    ports = set(re.findall(r"ray://[\w.<>-]+:(\d+)", (ROOT / "README.md").read_text()))
    assert len(ports) == 1, ports
    env, params = _ray_start(raw["head_start_ray_commands"])
    assert params["head"] is True
    assert params["ray_client_server_port"] == int(ports.pop())
    assert params["autoscaling_config"] == "~/ray_bootstrap_config.yaml"  # the autoscaler
    assert env.get("RAY_AUTH_MODE") == "token"


def test_workers_join_the_head_in_token_mode(raw):
    head_env, head = _ray_start(raw["head_start_ray_commands"])
    env, params = _ray_start(raw["worker_start_ray_commands"])
    assert params["head"] is False
    assert params["address"] == f"$RAY_HEAD_IP:{head['port']}"
    assert env.get("RAY_AUTH_MODE") == head_env.get("RAY_AUTH_MODE") == "token"
    # Every node gets the launching machine's token.
    assert raw["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"


def test_cohort_starts_on_the_head_after_ray(raw):
    head = raw["head_start_ray_commands"]
    calls = _cohort_start_calls(raw)
    assert len(calls) == 1
    command, kwargs = calls[0]
    assert command in head
    assert head.index(command) > next(i for i, c in enumerate(head) if "ray start" in c)
    assert "RAY_AUTH_MODE=token" in command
    assert isinstance(kwargs["num_partitions"], int) and kwargs["num_partitions"] > 0


def _pip_installs(commands: list[str]) -> list[list[str]]:
    """The arguments of every ``pip install`` in ``commands``."""
    return [words[words.index("install") + 1:]
            for command in commands for words in _simple_commands(command)
            if "pip" in words and "install" in words]


def test_every_node_installs_cohort_with_the_pins_of_pyproject(raw):
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pinned = set(pyproject["project"]["dependencies"])
    assert all("==" in spec for spec in pinned)
    installs = [args for args in _pip_installs(raw["setup_commands"]) if "-e" in args]
    assert len(installs) == 1
    args = installs[0]
    editable = args[args.index("-e") + 1]
    specs = {a for a in args if not a.startswith("-") and a != editable}
    assert specs == pinned, f"cluster.yaml pins {specs ^ pinned} differently from pyproject"
    # The repository itself is what gets installed: file_mounts copies it there.
    assert raw["file_mounts"][editable] == "."
    assert ".venv" in raw["rsync_exclude"]
    # Java 17 for Spark, on every node (RayDP's executors may run anywhere).
    assert any("openjdk-17" in c for c in raw["setup_commands"])


def test_the_nodes_python_can_install_every_pin(raw):
    """A pin whose wheels need a newer Python than the nodes' fails only at `ray up` time."""
    venvs = {m for c in raw["setup_commands"]
             for m in re.findall(r"(python3\.\d+) -m venv ~/cohort-venv", c)}
    assert len(venvs) == 1, venvs
    version = venvs.pop().removeprefix("python")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert version in SpecifierSet(pyproject["project"]["requires-python"])
    checked = 0
    for spec in pyproject["project"]["dependencies"]:
        req = Requirement(spec)
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            continue  # this venv predates the pin; its metadata is not here to read
        if dist.version not in req.specifier:
            continue
        needs = dist.metadata["Requires-Python"] or ""
        assert version in SpecifierSet(needs), f"{spec} needs Python {needs}, nodes run {version}"
        checked += 1
    assert checked, "no pinned distribution installed here to check"


def test_storage_path_is_one_shared_path_mounted_on_every_node(raw):
    (_, kwargs), = _cohort_start_calls(raw)
    storage = kwargs["storage_path"]
    assert storage.startswith("/"), "a relative path would resolve per node"
    # Every command naming the storage directory names the same path.
    all_commands = _commands(raw, "setup_commands", "head_setup_commands",
                             "worker_setup_commands", "head_start_ray_commands",
                             "worker_start_ray_commands")
    name = storage.rstrip("/").rsplit("/", 1)[1]
    mentioned = {p for c in all_commands for p in re.findall(rf"[\w/~.-]*{name}", c)}
    assert mentioned == {storage}
    # The setup of every node (not only the head) mounts NFS at a parent and creates it.
    mounts = [m for c in raw["setup_commands"]
              for m in re.findall(r"mount -t nfs4? .*?\S+:/\S* (/[^\s)]+)", c)]
    assert mounts, "no NFS mount in setup_commands"
    assert any(storage.startswith(mnt.rstrip("/") + "/") for mnt in mounts), (mounts, storage)
    assert any(f"mkdir -p {storage}" in c for c in raw["setup_commands"])


def _commented_s3_start(text: str) -> dict:
    """The keywords of the commented-out ``Cluster.start`` that keeps the logs on S3."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "# - >-")
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  #   "):
            break
        block.append(line.removeprefix("  #   "))
    config = {"head_start_ray_commands": [" ".join(block)]}
    (_, kwargs), = _cohort_start_calls(config)
    return kwargs


def test_the_s3_option_starts_the_same_cohort_with_its_logs_in_a_bucket(raw):
    s3 = _commented_s3_start(CLUSTER_YAML.read_text())
    (_, efs), = _cohort_start_calls(raw)
    assert s3["storage_path"].startswith("s3://") and s3["storage_path"].count("/") >= 3
    assert s3["num_partitions"] == efs["num_partitions"]
    assert set(s3) == set(efs)
