"""PodGCController (placeholder until built)."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.server import APIServer


class PodGCController:
    def __init__(self, api: APIServer, clock: Any) -> None:
        self.api = api
        self.clock = clock

    def start(self) -> None:
        pass
