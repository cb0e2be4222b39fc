"""The one YAML reader of the project: JSON-shaped data only, read strictly.

Every YAML file (scenarios, studies, query files, model entries, lexicons, rubrics) is read
with :func:`load_yaml`, which refuses what plain ``yaml.safe_load`` lets through silently:

- a key given twice in one mapping (safe_load keeps the last);
- any tag or implicit type JSON does not have (``!!set``, ``!!binary``, ``!!timestamp`` and
  unquoted dates, ``!!omap``, ``!!python/...``) and anchors/aliases (``&a`` / ``*a``);
- nesting deeper than :data:`MAX_DEPTH` (a 3,000-deep file would exhaust the stack);
- files that are not UTF-8 or larger than :data:`MAX_BYTES`.

Problems raise :class:`YamlInputError` (a ``yaml.YAMLError``) whose text names the line,
the column, the problem and the fix.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node

from .regular_files import NotARegularFile, read_regular

MAX_DEPTH = 64
MAX_BYTES = 16 * 1024 * 1024
JSON_TAGS = frozenset({
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
})


class YamlInputError(yaml.YAMLError):
    """A YAML file that is readable text but not plain JSON-shaped data, with the fix."""

    def __init__(self, problem: str, mark: yaml.Mark | None = None, fix: str = "") -> None:
        self.problem, self.problem_mark, self.fix = problem, mark, fix
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        super().__init__(f"{where}{problem}" + (f"; fix: {fix}" if fix else ""))


class StrictLoader(yaml.SafeLoader):
    """SafeLoader limited to JSON: unique keys, JSON types only, no aliases, bounded depth."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            raise YamlInputError("anchors and aliases (*name) are not allowed",
                                 self.peek_event().start_mark, "write the value out in full")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlInputError(f"nested deeper than {MAX_DEPTH} levels",
                                     self.peek_event().start_mark, "flatten the data")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        if node.tag not in JSON_TAGS:
            shown = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise YamlInputError(f"type {shown} is not plain data (only strings, numbers, "
                                 "booleans, null, lists and mappings)", node.start_mark,
                                 "quote the value or write it as a list or mapping")
        return super().construct_object(node, deep)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise YamlInputError("a mapping key must be a string or number",
                                     key_node.start_mark, "use a plain key") from None
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise YamlInputError(f"key '{key}' appears twice in one mapping (first on line "
                                     f"{first})", key_node.start_mark, "keep one of the two")
            seen[key] = key_node
        return super().construct_mapping(node, deep)


# YAML 1.1 reads "1e-05" (an exponent without a dot) as a string; JSON reads it as a number.
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def loads(text: str) -> Any:
    """Parse YAML text strictly (see the module docstring)."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader


def load_yaml(path: Path | str) -> Any:
    """Read a YAML file strictly. Raises OSError when it cannot be read and
    :class:`YamlInputError` when its bytes or its content are not plain YAML data."""
    try:
        data = read_regular(Path(path), MAX_BYTES)
    except NotARegularFile as exc:
        raise YamlInputError(exc.strerror, fix="give the path of the file itself") from None
    if len(data) > MAX_BYTES:
        raise YamlInputError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB",
                             fix="split the file or check that it is the right file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise YamlInputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line})",
                             fix="save the file as UTF-8") from None
    return loads(text)


_PARSED: dict[tuple[str, int, int], Any] = {}
_PARSED_MAX = 512


def load_yaml_once(path: Path | str) -> Any:
    """:func:`load_yaml`, but a file read before and unchanged (same size and mtime) is not parsed
    again: a study loads each task, map, goal and model file once per run, and PyYAML takes up to
    ~0.2 s for a task with its map. Each caller gets its own copy."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = load_yaml(path)
    return copy.deepcopy(_PARSED[key])


def problem_of(exc: yaml.YAMLError) -> tuple[str, str, str]:
    """(where, problem, fix) of any YAML error, each on one line."""
    if isinstance(exc, YamlInputError):
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return where, exc.problem, exc.fix
    if isinstance(exc, yaml.reader.ReaderError):
        return (f"character {exc.position}", f"invalid YAML: character {exc.character!r} is not "
                "allowed in YAML text", "remove the control character or quote it as an escape")
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    return where, f"invalid YAML: {problem}", "fix the YAML syntax at that position"


def describe(exc: yaml.YAMLError) -> str:
    """One line for any YAML error: position, problem and the fix."""
    where, problem, fix = problem_of(exc)
    return (f"{where}: " if where else "") + problem + (f"; fix: {fix}" if fix else "")
