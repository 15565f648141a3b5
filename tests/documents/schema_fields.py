"""Field paths of a JSON Schema, for checking docs/formats.md against the document models."""

from __future__ import annotations


def _resolve(schema: dict, defs: dict) -> dict:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _objects(schema: dict, defs: dict, suffix: str = "") -> list[tuple[str, dict]]:
    """The object schemas reachable from `schema` without a field name: through unions,
    nullable wrappers, list items (`[]`) and map values (`.*`)."""
    schema = _resolve(schema, defs)
    out: list[tuple[str, dict]] = []
    for branch in schema.get("anyOf", []):
        out += _objects(branch, defs, suffix)
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        out += _objects(schema["items"], defs, suffix + "[]")
    if schema.get("type") == "object" and "properties" in schema:
        out.append((suffix, schema))
    elif schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        out += _objects(schema["additionalProperties"], defs, suffix + ".*")
    return out


def field_lines(schema: dict) -> dict[str, list[str]]:
    """{object path: [field, field!, ...]} ('!' marks a required field), in schema order."""
    defs = schema.get("$defs", {})
    lines: dict[str, list[str]] = {}

    def walk(path: str, node: dict) -> None:
        required = set(node.get("required", []))
        fields = lines.setdefault(path, [])
        for name, sub in node["properties"].items():
            entry = name + ("!" if name in required else "")
            if entry not in fields:
                fields.append(entry)
            for suffix, obj in _objects(sub, defs):
                walk(f"{path}.{name}{suffix}" if path else f"{name}{suffix}", obj)

    walk("", _resolve(schema, defs))
    return lines


def listing(name: str, schema: dict) -> list[str]:
    """The lines docs/formats.md carries for one document."""
    return [f"{name}{' ' + path if path else ''}: {', '.join(fields)}"
            for path, fields in field_lines(schema).items()]
