"""One ``models:`` entry: where an OpenAI-compatible endpoint is, how to call it, what it costs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from yamleval.calls import limits as throttle
from yamleval.records.errors import ConfigError
from yamleval.records.types import Usage

MODEL_KEYS = frozenset({"base_url", "model", "api_key", "temperature", "max_tokens", "seed",
                        "timeout", "headers", "price", "retries", "rate_limit", "adaptive"})


@dataclass(frozen=True)
class Price:
    """Price in currency units per million tokens."""

    prompt: float = 0.0
    completion: float = 0.0

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.prompt + usage.completion_tokens * self.completion) / 1e6


@dataclass(frozen=True, repr=False)
class ModelConfig:
    """One named OpenAI-compatible endpoint, as the ``models:`` section describes it."""

    name: str
    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    timeout: float = 60.0
    headers: Mapping[str, str] = field(default_factory=dict)
    retries: int = 2
    price: Price | None = None
    rate_limit: throttle.RateLimit | None = None
    adaptive: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.price, Mapping):
            object.__setattr__(self, "price", Price(float(self.price.get("prompt", 0)),
                                                    float(self.price.get("completion", 0))))

    def __repr__(self) -> str:
        # Header values may hold credentials too: show their names only.
        key = "'***'" if self.api_key else "None"
        return (f"ModelConfig(name={self.name!r}, base_url={self.base_url!r}, model={self.model!r}, "
                f"api_key={key}, temperature={self.temperature!r}, max_tokens={self.max_tokens!r}, "
                f"seed={self.seed!r}, timeout={self.timeout!r}, headers={sorted(self.headers)!r}, "
                f"retries={self.retries!r}, price={self.price!r}, rate_limit={self.rate_limit!r}, "
                f"adaptive={self.adaptive!r})")

    @classmethod
    def from_mapping(cls, name: str, mapping: Mapping[str, Any], retries: int = 2,
                     timeout: float = 60.0) -> "ModelConfig":
        """Build from one ``models:`` entry; ``retries`` and ``timeout`` are the defaults it may override."""
        unknown = sorted(set(mapping) - MODEL_KEYS)
        if unknown:
            raise ConfigError(f"models.{name}: unknown key(s): {', '.join(unknown)}")
        for key in ("base_url", "model"):
            if not mapping.get(key):
                raise ConfigError(f"models.{name}: {key} is required")
        price = mapping.get("price")
        try:
            rate_limit = throttle.RateLimit.from_value(mapping.get("rate_limit"))
            adaptive = throttle.check_adaptive(mapping.get("adaptive", True))
        except ValueError as exc:
            raise ConfigError(f"models.{name}: {exc}") from None
        return cls(
            name=name, base_url=str(mapping["base_url"]), model=str(mapping["model"]),
            api_key=mapping.get("api_key") or None,
            temperature=mapping.get("temperature"), max_tokens=mapping.get("max_tokens"),
            seed=mapping.get("seed"), timeout=float(mapping.get("timeout", timeout)),
            headers={str(k): str(v) for k, v in (mapping.get("headers") or {}).items()},
            retries=int(mapping.get("retries", retries)),
            price=Price(float(price.get("prompt", 0)), float(price.get("completion", 0))) if price else None,
            rate_limit=rate_limit, adaptive=adaptive,
        )
