"""deploy/compose.yaml (Docker Compose is not run here: this reads the file): two replicas on one
PostgreSQL, migrated first, with the same settings, pinned images, no anonymous volumes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from croupier.service import config
from croupier.service.shutdown import DEFAULT_GRACE_S

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose.yaml"
REPLICAS = ["croupier-1", "croupier-2"]


def services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]  # merge keys too
    return loaded


def test_two_replicas_share_one_database_and_the_secrets() -> None:
    found = services()
    envs = [found[name]["environment"] for name in REPLICAS]
    assert envs[0] == envs[1]
    env = envs[0]
    assert (
        env["CROUPIER_STORE"].startswith("postgresql://") and "@postgres:" in env["CROUPIER_STORE"]
    )
    assert env["CROUPIER_LOG_FORMAT"] == "json"
    for name in (config.SECRET_ENV, config.STUDIO_SECRET_ENV):
        assert env[name].startswith(f"${{{name}:?")  # required: compose refuses to start without
    host_ports = [found[name]["ports"][0].rsplit(":", 2)[1] for name in REPLICAS]
    assert len(set(host_ports)) == 2


def test_the_replicas_start_after_the_migration() -> None:
    found = services()
    assert found["migrate"]["command"] == ["migrate"]
    assert found["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert found["migrate"]["environment"] == found["croupier-1"]["environment"]
    for name in REPLICAS:
        assert found[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"}
        }


def seconds(duration: str) -> float:
    """A Compose duration (``30s``, ``1m30s``, ``1500ms``) in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", duration)
    assert "".join(number + unit for number, unit in parts) == duration, duration
    return sum(float(number) * units[unit] for number, unit in parts)


def test_a_stop_leaves_the_server_its_grace() -> None:
    """``docker compose stop`` (and ``down``) sends SIGTERM, then SIGKILL after the service's
    ``stop_grace_period``: left at Docker's default, 10 s, it could cut a drain whose calls in
    flight have the server's whole grace (10 s), before the store's threads end and it closes."""
    found = services()
    for name in [*REPLICAS, "croupier-sqlite"]:
        assert seconds(found[name].get("stop_grace_period", "10s")) > DEFAULT_GRACE_S, name
    assert "CROUPIER_SHUTDOWN_GRACE" not in found["croupier-1"]["environment"]


def test_images_are_pinned_and_volumes_named() -> None:
    found = services()
    assert re.fullmatch(r"postgres:\d+\.\d+-alpine\d+\.\d+", found["postgres"]["image"])
    for service in found.values():
        for volume in service.get("volumes", []):
            assert ":" in volume, volume  # NAME:/path, never an anonymous /path
    assert found["croupier-sqlite"]["volumes"] == ["croupier-data:/var/lib/croupier"]


def test_the_dev_postgres_of_kubernetes_is_the_same_image() -> None:
    statefulset = Path(COMPOSE.parent / "kubernetes" / "components" / "dev-postgres")
    manifest = yaml.safe_load((statefulset / "statefulset.yaml").read_text())
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    assert container["image"] == services()["postgres"]["image"]
