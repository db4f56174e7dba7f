"""deploy/kubernetes/: every kustomization renders (kubectl's own kustomize, pinned in the dev
extras, offline) and every object validates against Kubernetes' published schemas (bundled with
kubernetes-validate, strict: an unknown field is an error), and the manifests agree with the
server they run: its port, its health service, its secrets, its image's user."""

from __future__ import annotations

import base64
import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from croupier.service import config
from croupier.service.cli import main
from croupier.service.server import SERVICE_NAME

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
BASE = KUBERNETES / "base"
DEV = KUBERNETES / "overlays" / "dev"
KUSTOMIZATIONS = [BASE, DEV]
KUBECTL = Path(sys.executable).parent / "kubectl"
#: The oldest Kubernetes release still supported upstream when this was written, and the newest
#: whose schemas kubernetes-validate bundles.
VERSIONS = ["1.29", "1.37"]
SECRET_NAME = "croupier"
#: The settings the Deployment takes from the Secret, and whether each must be there.
SECRET_KEYS = {
    "CROUPIER_STORE": True,
    config.SECRET_ENV: True,
    config.STUDIO_SECRET_ENV: True,
    config.PREVIOUS_SECRETS_ENV: False,
    config.STUDIO_PREVIOUS_SECRETS_ENV: False,
}
Object = dict[str, Any]


def render(kustomization: Path) -> list[Object]:
    built = subprocess.run(
        [str(KUBECTL), "kustomize", str(kustomization)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def manifests(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.yaml") if p.name != "kustomization.yaml")


def kustomization(folder: Path) -> Object:
    loaded: Object = yaml.safe_load((folder / "kustomization.yaml").read_text())
    return loaded


def one(objects: list[Object], kind: str, name: str | None = None) -> Object:
    [found] = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return found


def validate(obj: Object, version: str) -> None:
    """Strict schema validation; a kind without a schema fails too (nothing passes unchecked)."""
    kubernetes_validate.validate(obj, version, strict=True)


@pytest.fixture(scope="module")
def base() -> list[Object]:
    return render(BASE)


@pytest.fixture(scope="module")
def dev() -> list[Object]:
    return render(DEV)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("folder", KUSTOMIZATIONS, ids=lambda p: p.name)
def test_every_rendered_object_validates(folder: Path, version: str) -> None:
    objects = render(folder)
    assert objects
    for obj in objects:
        validate(obj, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_file_validates(version: str) -> None:
    files = [p for folder in KUBERNETES.rglob("*") if folder.is_dir() for p in manifests(folder)]
    assert len(files) >= 8
    for path in files:
        for obj in yaml.safe_load_all(path.read_text()):
            validate(obj, version)


def test_every_manifest_is_in_its_kustomization() -> None:
    """A manifest left out of kustomization.yaml would never be applied; examples (real secrets
    stay out of the repository) are the only exception."""
    folders = {p.parent for p in KUBERNETES.rglob("kustomization.yaml")}
    assert folders == {BASE, DEV, KUBERNETES / "components" / "dev-postgres"}
    for folder in folders:
        listed = set(kustomization(folder).get("resources", []))
        files = {p.name for p in manifests(folder) if not p.name.endswith(".example.yaml")}
        assert files == {r for r in listed if not r.startswith("..")}, folder
    assert not list(KUBERNETES.glob("*.yaml"))  # every manifest is in a kustomization's folder


def test_the_validation_catches_a_broken_manifest(base: list[Object]) -> None:
    deployment = copy.deepcopy(one(base, "Deployment"))
    deployment["spec"]["replica"] = 3  # a typo strict validation rejects
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment, VERSIONS[-1])
    deployment = copy.deepcopy(one(base, "Deployment"))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["grpc"]["port"] = "grpc"  # gRPC probes take numbers only
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment, VERSIONS[-1])


def pod_spec(objects: list[Object]) -> Object:
    spec: Object = one(objects, "Deployment")["spec"]["template"]["spec"]
    return spec


def server_container(objects: list[Object]) -> Object:
    [container] = [c for c in pod_spec(objects)["containers"] if c["name"] == "croupier"]
    return container


def env_of(container: Object) -> dict[str, Object]:
    return {e["name"]: e for e in container.get("env", [])}


def test_three_replicas_scaled_by_an_autoscaler_and_kept_by_a_budget(base: list[Object]) -> None:
    deployment = one(base, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    hpa = one(base, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert hpa["spec"]["minReplicas"] == 3 < hpa["spec"]["maxReplicas"]
    pods = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pods.items()
    pdb = one(base, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pods.items()
    assert pdb["spec"]["maxUnavailable"] == 1


def test_the_probes_ask_the_servers_health_service_on_its_port(base: list[Object]) -> None:
    container = server_container(base)
    env = env_of(container)
    port = int(env["CROUPIER_ADDRESS"]["value"].rpartition(":")[2])
    http = int(env["CROUPIER_HTTP_ADDRESS"]["value"].rpartition(":")[2])
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "grpc": port,
        "http": http,
    }
    # The server reports "" (itself) and the game service (service/server.py).
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["grpc"] == {"port": port, "service": SERVICE_NAME}
    assert container["livenessProbe"]["grpc"]["port"] == port
    assert container["livenessProbe"]["grpc"].get("service", "") == ""
    assert env["CROUPIER_LOG_FORMAT"]["value"] == "json"


def test_a_stop_gives_balancers_a_delay_and_calls_their_grace_before_the_kill(
    base: list[Object],
) -> None:
    """SIGTERM's drain (the delay in which health says NOT_SERVING, then the grace for calls in
    flight) ends before the kubelet's SIGKILL, with room for the store's close."""
    from croupier.service.shutdown import DEFAULT_GRACE_S, DELAY_ENV, GRACE_ENV

    env = env_of(server_container(base))
    delay = float(env[DELAY_ENV]["value"])
    grace = float(env[GRACE_ENV]["value"]) if GRACE_ENV in env else DEFAULT_GRACE_S
    assert delay > 0
    assert delay + grace + 5 <= pod_spec(base)["terminationGracePeriodSeconds"]


def test_the_http_port_behind_the_ingress_limits_no_client_address(base: list[Object]) -> None:
    """Every connection comes from the ingress's pods: the per-address default would have
    refused players once one pod held 256."""
    env = env_of(server_container(base))
    assert env[config.HTTP_PER_ADDRESS_ENV]["value"] == "0"


def test_the_service_is_headless_on_the_grpc_and_http_ports(base: list[Object]) -> None:
    service = one(base, "Service")
    assert service["spec"]["clusterIP"] == "None"  # why: service.yaml
    pods = one(base, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pods.items()
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    named = {p["name"]: p["containerPort"] for p in server_container(base)["ports"]}
    assert {p["targetPort"] for p in ports.values()} == set(named)
    assert {n: p["port"] for n, p in ports.items()} == named
    assert ports["grpc"]["appProtocol"] == "grpc"


def test_every_container_is_non_root_and_bounded(base: list[Object]) -> None:
    spec = pod_spec(base)
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    [uid] = re.findall(r"^ARG UID=(\d+)$", dockerfile, re.MULTILINE)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == int(uid)
    assert spec["automountServiceAccountToken"] is False
    containers = spec["initContainers"] + spec["containers"]
    assert len(containers) == 2
    for container in containers:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][bound]), container["name"]


def test_the_settings_come_from_the_secret(base: list[Object]) -> None:
    env = env_of(server_container(base))
    for name, required in SECRET_KEYS.items():
        ref = env[name]["valueFrom"]["secretKeyRef"]
        assert ref["name"] == SECRET_NAME and ref["key"] == name
        assert ref.get("optional", False) is not required
    example = yaml.safe_load((BASE / "secret.example.yaml").read_text())
    assert example["metadata"]["name"] == SECRET_NAME
    assert {k for k, required in SECRET_KEYS.items() if required} <= set(example["stringData"])


def test_the_schema_is_migrated_by_an_init_step(base: list[Object]) -> None:
    [init] = pod_spec(base)["initContainers"]
    assert init["image"] == server_container(base)["image"]
    assert init["args"] == ["migrate"] and "migrate" in main.commands
    store = env_of(init)["CROUPIER_STORE"]["valueFrom"]["secretKeyRef"]
    assert (store["name"], store["key"]) == (SECRET_NAME, "CROUPIER_STORE")


def test_the_dev_overlay_brings_its_postgres_and_usable_secrets(dev: list[Object]) -> None:
    """The development Secret (a generated name, which kustomize writes into the Deployment)
    reaches the component's PostgreSQL, and its keys are ones the server accepts."""
    env = env_of(server_container(dev))
    secret_name = env["CROUPIER_STORE"]["valueFrom"]["secretKeyRef"]["name"]
    assert secret_name.startswith(f"{SECRET_NAME}-")
    secret = one(dev, "Secret", secret_name)

    values = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert {k for k, required in SECRET_KEYS.items() if required} <= set(values)
    assert not config.token_keys(values).generated and not config.studio_keys(values).generated
    postgres = one(dev, "Service", "croupier-postgres")
    host = values["CROUPIER_STORE"].rpartition("@")[2].partition("/")[0]
    assert host == f"{postgres['metadata']['name']}:{postgres['spec']['ports'][0]['port']}"
    assert one(dev, "StatefulSet")["spec"]["serviceName"] == postgres["metadata"]["name"]
    [database] = [o for o in dev if o["metadata"]["name"].startswith("croupier-postgres-")]
    user, password = (
        base64.b64decode(database["data"][k]).decode()
        for k in ("POSTGRES_USER", "POSTGRES_PASSWORD")
    )
    assert values["CROUPIER_STORE"].startswith(f"postgresql://{user}:{password}@")
    assert {o["metadata"]["namespace"] for o in dev} == {"croupier-dev"}
