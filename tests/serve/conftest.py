"""The `served` fixture: a fresh `kubesched serve` process per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.harness import Served


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path).start()
    try:
        yield server
    finally:
        server.kill()
