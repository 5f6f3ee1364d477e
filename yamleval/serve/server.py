"""uvicorn serving the Eval Center's application, its log lines in yamleval's words."""
from __future__ import annotations

import socket

import uvicorn

from yamleval.records.errors import UsageError
from yamleval.serve.app import application


class _Server(uvicorn.Server):
    def __init__(self, config, ready):
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets=None):
        await super().startup(sockets)
        if self.started and self.ready is not None:
            self.ready(self.address)

    @property
    def address(self) -> str:
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.config.port}/"


def run(location: str, host: str, port: int, tokens: dict[str, str] | None, ready, reviews=None) -> None:
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind((host.strip("[]"), port))  # taken or not ours: say so before uvicorn would
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port") from None
    config = uvicorn.Config(application(location, tokens, reviews), host=host.strip("[]"), port=port, log_level="warning",
                            access_log=False, server_header=False, proxy_headers=True, timeout_graceful_shutdown=2)
    _Server(config, ready).run()
