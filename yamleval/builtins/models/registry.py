"""The ``models:`` of a project as clients, created on first use and shared by all items of a run.

A run's ``Models`` (``for_run``) makes its clients with the run's ``Network``; each item's
runner and scorers get a view of it (``calling``) whose clients answer from that item's cache.
"""
from __future__ import annotations

import difflib
import os
import threading
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from yamleval.builtins.models.client import ChatClient
    from yamleval.builtins.models.config import ModelConfig
    from yamleval.builtins.models.embeddings import Embedded, Embeddings
    from yamleval.calls.network import RunNetwork


class Models:
    """Name -> ChatClient for the endpoints a config declares; plugins receive it as ``models``."""

    def __init__(self, configs: Mapping[str, Mapping[str, Any]], retries: int = 2, timeout: float = 60.0,
                 base_dir: str = ".", network: RunNetwork | None = None):
        """``network``: the run's limiters and endpoint records the clients call through (None:
        each client has its own)."""
        self.configs = dict(configs)
        self.base_dir = base_dir
        self.retries = retries
        self.timeout = timeout
        self.network = network
        self._clients: dict[str, ChatClient] = {}
        self._embeddings: dict[str, Embeddings] = {}
        self._lock = threading.Lock()

    def for_run(self, network: RunNetwork) -> "Models":
        """The same endpoints with clients of their own, made with ``network`` (a run's); close it after the run."""
        return Models(self.configs, self.retries, self.timeout, self.base_dir, network)

    def calling(self, use: Any, role: str) -> "Models":
        """These models as one item's ``role`` ("runner" or "judge") calls them: answered from its
        answer cache ``use``; themselves without one."""
        return self if use is None else _Calling(self, use, role)

    def names(self) -> list[str]:
        return sorted(self.configs)

    def unknown(self, name: str) -> str | None:
        """Why ``name`` is not a model here, or None when it is."""
        if name in self.configs:
            return None
        close = difflib.get_close_matches(name, self.names(), n=1)
        if close:
            return f"no model '{name}' in `models:` (did you mean '{close[0]}'?)"
        return f"no model '{name}' in `models:` (declared: {', '.join(self.names()) or 'none'})"

    def config(self, name: str) -> ModelConfig:
        """The settings of the endpoint ``name``; a scripted one's ``base_url`` is ``script:<file>``."""
        from yamleval.builtins.models.config import ModelConfig

        entry = self.configs[name]
        if "script" in entry:
            return ModelConfig(name=name, base_url=f"script:{entry['script']}", model=str(entry.get("model")))
        return ModelConfig.from_mapping(name, entry, retries=self.retries, timeout=self.timeout)

    def client(self, name: str) -> ChatClient:
        problem = self.unknown(name)
        if problem:
            raise KeyError(problem)
        from yamleval.builtins.models.client import ChatClient  # requests is slow to import

        with self._lock:
            if name not in self._clients and "script" in self.configs[name]:
                from yamleval.builtins.models.scripted import ScriptedClient

                path = os.path.join(self.base_dir, str(self.configs[name]["script"]))
                self._clients[name] = ScriptedClient.from_file(name, path, str(self.configs[name].get("model")))
            if name not in self._clients:
                self._clients[name] = ChatClient(self.config(name), network=self.network)
            return self._clients[name]

    def embeddings(self, name: str) -> Embeddings:
        """The embeddings of the endpoint ``name``, its vectors kept for as long as this run."""
        from yamleval.builtins.models.client import ChatClient
        from yamleval.builtins.models.embeddings import Embeddings

        client = self.client(name)
        if not isinstance(client, ChatClient):
            raise ValueError(f"model '{name}' answers from a script, which has no embeddings: give a base_url")
        with self._lock:
            if name not in self._embeddings:
                self._embeddings[name] = Embeddings(client)
            return self._embeddings[name]

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
            self._embeddings.clear()


class _Calling(Models):
    """A run's models as one item's calls use them: the same clients, answering from its cache."""

    def __init__(self, models: Models, use: Any, role: str):
        self.__dict__.update(models.__dict__)  # the configs, and the run's clients and their lock, shared
        self._models, self._use, self._role = models, use, role

    def client(self, name: str) -> ChatClient:
        from yamleval.builtins.models.client import ChatClient

        client = self._models.client(name)  # a scripted one answers from its script, never the cache
        return client.calling(self._use, self._role) if isinstance(client, ChatClient) else client

    def embeddings(self, name: str) -> "_CallingEmbeddings":
        return _CallingEmbeddings(self._models.embeddings(name), self._use, self._role)

    def calling(self, use: Any, role: str) -> Models:
        return self._models.calling(use, role)

    def close(self) -> None:
        self._models.close()


class _CallingEmbeddings:
    """An endpoint's embeddings as one item asks for them: through its answer cache."""

    def __init__(self, embeddings: Embeddings, use: Any, role: str):
        self.embeddings, self.use, self.role = embeddings, use, role
        self.client, self.url = embeddings.client, embeddings.url

    def embed(self, texts) -> Embedded:
        return self.embeddings.embed(texts, self.use, self.role)
