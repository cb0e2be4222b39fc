"""JSON Schemas for constrained decoding: inlined, every property required, id fields as enums."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import cache
from typing import Any

from pydantic import BaseModel

_DROP = ("title", "default", "description")
MAX_ENUM_RANGE = 32  # integer ranges up to this size become enums: the grammar can enforce those


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].split("/")[-1]], defs)
        out = {k: (_inline_properties(v, defs) if k == "properties" else _inline(v, defs))
               for k, v in node.items() if k not in _DROP and k != "$defs"}
        if out.get("type") == "object" and "properties" in out:
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        if out.get("type") == "integer" and {"minimum", "maximum"} <= set(out) and \
                out["maximum"] - out["minimum"] <= MAX_ENUM_RANGE:
            return {"enum": list(range(out["minimum"], out["maximum"] + 1))}
        if "discriminator" in out:
            del out["discriminator"]
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf")
        return out
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _inline_properties(props: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    return {name: _inline(prop, defs) for name, prop in props.items()}


@cache
def decoding_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Built once per model class; shared, so callers must not change it (``restrict`` copies)."""
    raw = model.model_json_schema()
    return _inline(raw, raw.get("$defs", {}))


def restrict(schema: dict[str, Any], enums: dict[str, list[Any]]) -> dict[str, Any]:
    """Give named scalar properties (at any depth) a fixed set of allowed values."""
    if schema.get("type") == "object":
        props = {}
        for name, prop in schema.get("properties", {}).items():
            if name in enums and prop.get("type") in ("string", "integer", "number"):
                prop = {"enum": enums[name]}
            elif name in enums and prop.get("type") == "array":
                prop = {**prop, "items": {"enum": enums[name]}}
            else:
                prop = restrict(prop, enums)
            props[name] = prop
        return {**schema, "properties": props}
    for key in ("anyOf", "items"):
        if key in schema:
            value = schema[key]
            schema = {**schema, key: [restrict(v, enums) for v in value]
                      if isinstance(value, list) else restrict(value, enums)}
    return schema


class KeptSchemas:
    """Schemas made once per key of what they are made from, the last ``limit`` keys kept: equal
    inputs give the very same schema object. Shared, so callers must not change one; a request's
    canonical JSON walks each shared part once (``canonical.written_alike_shared_parts``), so a
    schema made again per call was walked again per call."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._schemas: dict[Hashable, dict[str, Any]] = {}

    def get(self, key: Hashable, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        schemas = self._schemas
        schema = schemas.get(key)
        if schema is None:
            if len(schemas) >= self.limit:
                del schemas[next(iter(schemas))]
            schema = schemas[key] = make()
        return schema
