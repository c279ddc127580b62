"""Fixtures of the container tests: the image, built once per session (per xdist worker; a lock
and podman's layer cache make the second build a cache hit), and its figures."""
from __future__ import annotations

import json
import time

import pytest

from tests.container import podman as P


@pytest.fixture(scope="session")
def image():
    missing = P.have_tools()
    if missing:
        pytest.fail(f"container tools missing (run `make deps`): {', '.join(missing)}", pytrace=False)
    seconds = P.build(P.IMAGE)
    P.FIGURES["container_image_build"] = seconds
    P.FIGURES["container_image_size"] = P.image_size_mb(P.IMAGE)
    yield P.IMAGE
    if P.FIGURES:
        # the figures for the closing note / bench: image size, build and time to healthy
        P.CACHE.mkdir(parents=True, exist_ok=True)
        f = P.CACHE / "figures.json"
        with P._lock(".figures.lock"):  # each xdist worker adds what it measured
            try:
                old = json.loads(f.read_text())
            except (OSError, ValueError):
                old = {}
            f.write_text(json.dumps({**old, **P.FIGURES, "at": time.time()}, indent=1))


@pytest.fixture(scope="session")
def pipeline_image(image):
    P.pipeline_wheels()
    P.FIGURES["container_pipeline_image_build"] = P.build(P.PIPELINE_IMAGE, target="pipeline")
    P.FIGURES["container_pipeline_image_size"] = P.image_size_mb(P.PIPELINE_IMAGE)
    return P.PIPELINE_IMAGE


@pytest.fixture(scope="session")
def docker_api(image, tmp_path_factory):
    """The Docker-compatible API Testcontainers drives (podman's), for the image's drop-in tests."""
    with P.DockerApi(tmp_path_factory.mktemp("docker-api")) as api:
        yield api
