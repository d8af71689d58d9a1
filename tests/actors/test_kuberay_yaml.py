"""deploy/kuberay/ holds together: one image at Cohort's Ray, the env names Ray and the S3
client read, the ports the gateway listens on and the Service exposes, and bootstrap commands
that `cohort`'s own parser accepts.

Each check is a function over the parsed documents, and a broken copy of the documents must
fail it, so a check that passes vacuously would show.
"""

from __future__ import annotations

import argparse
import copy
import re
import string
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.specifiers import SpecifierSet

from actors.tools.cli_gateway import add_gateway_parsers
from actors.tools.cli_service_parsers import add_service_parsers
from tests.actors.test_cluster_yaml import _simple_commands

ROOT = Path(__file__).resolve().parents[2]
KUBERAY = ROOT / "deploy" / "kuberay"
# What the object-store log reads (issue 21), and Ray's token.
AWS_NAMES = {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION",
             "AWS_ALLOW_HTTP"}
SHELL_KEYWORDS = ("while", "until", "do", "done", "if", "then", "else", "fi", "!")
SECRET_KEYS = {"RAY_AUTH_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}


@pytest.fixture()
def docs() -> dict:
    loaded = list(yaml.safe_load_all((KUBERAY / "raycluster.yaml").read_text()))
    by_kind = {d["kind"]: d for d in loaded}
    assert len(by_kind) == len(loaded) == 3
    return by_kind


def _ray_containers(docs: dict) -> list[dict]:
    spec = docs["RayCluster"]["spec"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"]
    workers = [c for g in spec["workerGroupSpecs"] for c in g["template"]["spec"]["containers"]]
    return [*head, *workers]


def _head(docs: dict) -> dict:
    return docs["RayCluster"]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]


def _bootstrap_commands(docs: dict) -> dict[str, list[str]]:
    """The bootstrap's ``cohort`` commands by subcommand, with the ConfigMap's values in."""
    containers = docs["RayCluster"]["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    (boot,) = [c for c in containers if c["name"] == "cohort-bootstrap"]
    script = " ".join([*boot["command"], *boot["args"]])
    values = docs["ConfigMap"]["data"]
    out: dict[str, list[str]] = {}
    for words in _simple_commands(script):
        while words and words[0] in SHELL_KEYWORDS:
            words = words[1:]
        if words and words[0] == "cohort":
            out[words[1]] = [string.Template(w).substitute(values) for w in words[1:]]
    return out


def _cohort_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cohort", exit_on_error=False)
    sub = parser.add_subparsers(dest="command", required=True)
    add_service_parsers(sub)
    add_gateway_parsers(sub)
    return parser


def _parsed(docs: dict, command: str) -> argparse.Namespace:
    return _cohort_parser().parse_args(_bootstrap_commands(docs)[command])


# ---------------------------------------------------------------------------- the checks


def check_one_image_at_cohorts_ray(docs: dict) -> None:
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (ray_pin,) = [d for d in pins["dependencies"] if d.startswith("ray[")]
    ray_version = ray_pin.split("==")[1]
    images = {c["image"] for c in _ray_containers(docs)}
    assert len(images) == 1, f"every pod must run one image, found {images}"
    assert docs["RayCluster"]["spec"]["rayVersion"] == ray_version
    dockerfile = (KUBERAY / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", dockerfile, re.M)
    assert base == f"rayproject/ray:{ray_version}-py311", base
    assert "3.11" in SpecifierSet(pins["requires-python"])
    (copied,) = re.findall(r"^COPY \S* ?\. (\S+)", dockerfile, re.M)
    assert re.search(rf"^RUN pip install .*{re.escape(copied)}$", dockerfile, re.M)
    assert images.pop().endswith(":" + pins["version"])


def check_token_and_s3_settings_everywhere(docs: dict) -> None:
    config = docs["ConfigMap"]["metadata"]["name"]
    scoped = [*_ray_containers(docs), docs["RayCluster"]["spec"]["autoscalerOptions"]]
    for c in scoped:
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        assert env.get("RAY_AUTH_MODE") == "token", c.get("name", "autoscaler")
        refs = {next(iter(r.values()))["name"] for r in c["envFrom"]}
        assert "cohort-secrets" in refs, c.get("name", "autoscaler")
        if c is not scoped[-1]:  # the Ray containers also read the S3 settings
            assert config in refs, c["name"]
    data = docs["ConfigMap"]["data"]
    aws = {k for k in data if k.startswith("AWS_")}
    commented = set(re.findall(r"#\s*(AWS_\w+):", (KUBERAY / "raycluster.yaml").read_text()))
    assert aws | commented | {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} == AWS_NAMES
    assert not aws & SECRET_KEYS, "credentials belong in the Secret"


def check_bootstrap_starts_cohort_on_s3_through_the_head(docs: dict) -> None:
    start, gateway = _parsed(docs, "start"), _parsed(docs, "gateway")
    client = {p["name"]: p["containerPort"] for p in _head(docs)["ports"]}["client"]
    assert start.address == gateway.address == f"ray://127.0.0.1:{client}"
    assert start.storage.startswith("s3://") and start.storage.count("/") >= 3
    assert int(start.partitions) > 0
    assert not gateway.stop


def check_the_service_reaches_the_gateway(docs: dict) -> None:
    gateway = _parsed(docs, "gateway")
    service = docs["Service"]
    cluster = docs["RayCluster"]["metadata"]["name"]
    assert service["spec"]["selector"] == {"ray.io/cluster": cluster, "ray.io/node-type": "head"}
    ports = {p["name"]: p["containerPort"] for p in _head(docs)["ports"]}
    (port,) = service["spec"]["ports"]
    assert ports[port["targetPort"]] == port["port"] == gateway.port
    assert gateway.host == "0.0.0.0"
    assert gateway.advertised_host == service["metadata"]["name"]


CHECKS = [check_one_image_at_cohorts_ray, check_token_and_s3_settings_everywhere,
          check_bootstrap_starts_cohort_on_s3_through_the_head,
          check_the_service_reaches_the_gateway]


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_the_kuberay_sample_holds_together(docs, check):
    check(docs)


def _spec(d):
    return d["RayCluster"]["spec"]


def _boot(d):
    return _spec(d)["headGroupSpec"]["template"]["spec"]["containers"][1]


BREAKS = {
    "worker image differs": (check_one_image_at_cohorts_ray, lambda d: _spec(d)[
        "workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(image="x:0.1.0")),
    "ray version differs": (check_one_image_at_cohorts_ray,
                            lambda d: _spec(d).update(rayVersion="2.59.0")),
    "worker without token mode": (check_token_and_s3_settings_everywhere, lambda d: _spec(d)[
        "workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(env=[])),
    "autoscaler without the secret": (check_token_and_s3_settings_everywhere,
                                      lambda d: _spec(d)["autoscalerOptions"].update(envFrom=[])),
    "credentials in the config map": (check_token_and_s3_settings_everywhere,
                                      lambda d: d["ConfigMap"]["data"].update(
                                          AWS_SECRET_ACCESS_KEY="x")),
    "local storage": (check_bootstrap_starts_cohort_on_s3_through_the_head,
                      lambda d: d["ConfigMap"]["data"].update(COHORT_STORAGE="/data/cohort")),
    "misspelt flag": (check_bootstrap_starts_cohort_on_s3_through_the_head,
                      lambda d: _boot(d).update(args=[_boot(d)["args"][0].replace(
                          "--storage", "--storage-path")])),
    "service port differs": (check_the_service_reaches_the_gateway,
                             lambda d: d["Service"]["spec"]["ports"][0].update(port=9093)),
    "selector on workers": (check_the_service_reaches_the_gateway,
                            lambda d: d["Service"]["spec"]["selector"].update(
                                {"ray.io/node-type": "worker"})),
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_a_broken_copy_fails_its_check(docs, name):
    check, break_it = BREAKS[name]
    broken = copy.deepcopy(docs)
    break_it(broken)
    with pytest.raises((AssertionError, argparse.ArgumentError, SystemExit)):
        check(broken)


def test_the_readme_creates_the_secret_the_pods_read():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## On Kubernetes", 1)[1].split("\n## ", 1)[0]
    keys = set(re.findall(r"--from-literal=(\w+)=", section))
    assert keys == SECRET_KEYS
    assert "deploy/kuberay/raycluster.yaml" in section
    assert "deploy/kuberay/Dockerfile" in section
    sample = (KUBERAY / "raycluster.yaml").read_text()
    assert set(re.findall(r"--from-literal=(\w+)=", sample)) == SECRET_KEYS
