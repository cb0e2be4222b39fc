"""The OpenAI chat-completions wire format: the entry's options, the request body, the answer
and the model listing, each read with one clear error naming the server and the fix."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import ModelEntry
from ..scrub import scrub_text
from .base import BackendError, GenerateRequest, Usage

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
SERVER_MODEL_FIELDS = ("owned_by", "max_model_len", "meta")
START_HINT = ("start one, e.g. `python -m llama_cpp.server --model <gguf> --model_alias <served_name> "
              "--port 8080` or `vllm serve <model> --served-model-name <served_name>`, and point "
              "$VCRIME_OPENAI_BASE_URL or options.base_url at it (http://HOST:PORT/v1)")


def _error(message: str) -> BackendError:
    """A BackendError whose text is scrubbed: server bodies may echo the request headers, and
    the base URL may carry credentials."""
    return BackendError(scrub_text(message))


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str | None = None
    base_urls: list[str] | None = Field(None, description="Several servers of the same model (one "
                                        "per GPU node): each call goes to the least-busy healthy one.")
    base_url_env: str = "VCRIME_OPENAI_BASE_URL"
    api_key_env: str = "OPENAI_API_KEY"
    response_format: Literal["json_object", "json_schema"] = Field(
        "json_object", description="json_object: llama.cpp servers; json_schema: vLLM and OpenAI.")
    extra_body: dict[str, Any] = Field(default_factory=dict,
                                       description="Extra request fields (server sampler settings).")
    timeout_s: float = Field(120.0, gt=0, description="The most one attempt may take, from sending "
                             "the request to the answer's last byte (then it is retried).")
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(0.5, ge=0)
    max_backoff_s: float = Field(30.0, ge=0)


def parse_options(entry: ModelEntry) -> OpenAIOptions:
    return entry.backend_options(OpenAIOptions)


def backoff_delay(attempt: int, options: OpenAIOptions, retry_after: str | None = None) -> float:
    """Seconds to wait before retry ``attempt + 1``: doubling from ``backoff_s``, capped; a
    numeric Retry-After from the server wins when it is longer."""
    delay = min(options.backoff_s * 2 ** attempt, options.max_backoff_s)
    try:
        asked = float(retry_after) if retry_after is not None else 0.0
    except ValueError:
        asked = 0.0
    return min(max(delay, asked), options.max_backoff_s)


def response_format(kind: str, schema: dict[str, Any], call: str) -> dict[str, Any]:
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    name = re.sub(r"[^A-Za-z0-9_-]", "_", call)[:64] or "output"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def chat_body(request: GenerateRequest, served_name: str, options: OpenAIOptions) -> dict[str, Any]:
    s = request.sampling
    body: dict[str, Any] = {
        **options.extra_body, "model": served_name,
        "messages": [m.model_dump() for m in request.messages],
        "temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens, "seed": s.seed,
    }
    if request.output_schema is not None:
        body["response_format"] = response_format(options.response_format, request.output_schema,
                                                  request.call)
    return body


def parse_chat_response(data: Any, url: str) -> tuple[str, str, Usage]:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
        usage = data.get("usage") or {}
        return text, choice.get("finish_reason") or "stop", Usage(
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0)
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _error(f"{url} answered with no choices[0].message.content: {str(data)[:300]}; "
                           "fix: check that the server speaks the OpenAI chat completions API") from None


def server_model_fingerprint(listing: Any, served_name: str, url: str) -> dict[str, Any]:
    """The server's model ids and the stable fields it reports for the served one."""
    try:
        models = {m["id"]: m for m in listing["data"]}
    except (KeyError, TypeError):
        raise _error(f"{url} is not an OpenAI model list: {str(listing)[:300]}") from None
    if served_name not in models:
        raise _error(f"{url} does not serve '{served_name}' (it serves: "
                           f"{', '.join(sorted(models)) or 'nothing'}); fix: set weights.served_name "
                           "to one of those or start the server with that model name")
    served = models[served_name]
    return {"ids": sorted(models), **{k: served[k] for k in SERVER_MODEL_FIELDS if k in served}}


def served_model(listing: Any, served_name: str, url: str) -> dict[str, Any]:
    """:func:`server_model_fingerprint`, or the ids alone marked ``missing`` when the server does
    not serve ``served_name`` (so a pool can name every server that differs)."""
    try:
        return server_model_fingerprint(listing, served_name, url)
    except BackendError:
        try:
            return {"ids": sorted(m["id"] for m in listing["data"]), "missing": served_name}
        except (KeyError, TypeError):
            raise _error(f"{url} is not an OpenAI model list: {str(listing)[:300]}") from None
