"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``POST {model, input: [texts]}``
answers ``data[i].embedding``), sent through the model's ``ChatClient.post``: its session, api
key, retries, rate limit and error messages.

A text is embedded once per run: the vectors of the last ``KEPT_VECTORS`` texts are kept, a
text that several items ask for at once is asked for once, and the new texts of one call go
in one request. Through the answer cache (``cache``), a text embedded in an earlier run is not
asked for again.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Sequence

from yamleval.calls import transport
from yamleval.builtins.models.client import ChatClient, usage_of
from yamleval.records.types import Usage

KEPT_VECTORS = 1024

Vector = tuple[float, ...]


@dataclass(frozen=True)
class Embedded:
    """The vector of each text asked for, in their order, and what the requests made for them
    used (nothing for vectors kept from before)."""

    vectors: tuple[Vector, ...]
    usage: Usage


class Embeddings:
    """The embeddings of one ``models:`` entry. Thread-safe."""

    def __init__(self, client: ChatClient):
        self.client = client
        self.url = client.config.base_url.rstrip("/") + "/embeddings"
        self._endpoint = client.endpoint_for(self.url, "it has no such model, or no embeddings API at that address")
        self._kept: OrderedDict[str, Vector] = OrderedDict()
        self._asked: dict[str, Future] = {}  # texts being asked for, by the item that asked first
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], use: Any = None, role: str = "judge") -> Embedded:
        """The vector of each of ``texts``; raise ModelError when the request fails or its reply
        is not one vector of numbers per text. ``use``: the answer cache of the item asking, as ``role``."""
        found: dict[str, Vector | Future] = {}
        mine: list[str] = []
        with self._lock:
            for text in dict.fromkeys(texts):
                if text in self._kept:
                    self._kept.move_to_end(text)
                    found[text] = self._kept[text]
                else:
                    if text not in self._asked:
                        self._asked[text] = Future()
                        mine.append(text)
                    found[text] = self._asked[text]
        usage = Usage()
        if mine:
            try:
                vectors, usage = self._fetch(mine, use, role)
            except BaseException as exc:
                self._settle(mine, error=exc)
                raise
            self._settle(mine, vectors)
        return Embedded(tuple(v.result() if isinstance(v, Future) else v for v in map(found.get, texts)), usage)

    def _settle(self, texts: Sequence[str], vectors: Sequence[Vector] = (), error: BaseException | None = None):
        with self._lock:
            for index, text in enumerate(texts):
                future = self._asked.pop(text)
                if error is not None:
                    future.set_exception(error)
                    continue
                future.set_result(vectors[index])
                self._kept[text] = vectors[index]
            while len(self._kept) > KEPT_VECTORS:
                self._kept.popitem(last=False)

    def _fetch(self, texts: Sequence[str], use: Any, role: str) -> tuple[list[Vector], Usage]:
        """The vectors of ``texts``: from the answer cache, the others in one request."""
        model = self.client.config.model
        entries = {text: use.embeddings_key({"call": "embeddings", "url": transport.shown_url(self.url),
                                             "model": model, "input": text}, role) if use else None for text in texts}
        vectors: dict[str, Vector] = {}
        for text, entry in entries.items():
            kept = use.get(entry, "embedding") if entry is not None else None
            if kept is not None:
                vectors[text] = tuple(kept["embedding"])
        missing = [text for text in texts if text not in vectors]
        if not missing:
            return [vectors[text] for text in texts], Usage()
        data, reply = self.client.post(self.url, {"model": model, "input": missing}, self._endpoint)
        new = self._vectors(data, reply, len(missing))
        tokens = usage_of(data).prompt_tokens
        price = self.client.config.price
        usage = Usage(tokens, 0, price.cost(Usage(tokens)) if price else None)
        for text, vector in zip(missing, new):
            vectors[text] = vector
            if entries[text] is not None:  # what the request used, shared among its texts
                use.put(entries[text], {"embedding": list(vector)}, tokens // len(missing),
                        None if usage.cost is None else usage.cost / len(missing))
        return [vectors[text] for text in texts], usage

    def _vectors(self, data: Any, reply: transport.Reply, count: int) -> list[Vector]:
        """One vector of finite numbers per text, in the order of the texts; raise ModelError."""
        def wrong(detail: str):
            return self.client.error(f"embeddings reply (HTTP {reply.status}): {detail}", status=reply.status,
                                     attempts=reply.attempts)

        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise wrong("no `data` list of embeddings")
        if len(rows) != count:
            raise wrong(f"{len(rows)} embeddings for {count} texts")
        if all(isinstance(row.get("index"), int) for row in rows):
            rows = sorted(rows, key=lambda row: row["index"])
        vectors = []
        for number, row in enumerate(rows, 1):
            vector = row.get("embedding")
            if not isinstance(vector, list) or not vector or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
                raise wrong(f"embedding {number} is not a list of numbers")
            vectors.append(tuple(float(x) for x in vector))
        return vectors
