"""Over-harm classifier: force and property-damage levels from the attacker's own action text.

Reads only `verb`, `targets` and `description` of an attacker action (never judge text).
The patterns live in audit/data/harm_lexicon.yaml; this module only loads and applies them.
It sits below the store, which keeps each attacker turn's reading; scoring the classifier
against labelled actions is the audit's (:mod:`vcrime_audit.audit.harm_labelled`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from .lexicon_formulas import fill, known_formulas
from .lexicon_patterns import LexiconError, LexiconPattern, Screen, screen_of
from .scenario import DAMAGE_LEVELS, FORCE_LEVELS
from .yamlio import describe, load_yaml

AXES: dict[str, tuple[str, ...]] = {"force": FORCE_LEVELS, "damage": DAMAGE_LEVELS}
DEFAULT_LEXICON = Path(__file__).parent / "audit" / "data" / "harm_lexicon.yaml"
_MACRO = re.compile(r"%([a-z_]+)%")
_MASK = "#"
_CACHE_LIMIT = 200_000


@dataclass(frozen=True)
class Evidence:
    """One match: which axis and level it supports, the rule that fired and the text it saw."""

    axis: str
    level: str
    rule: str
    text: str


class HarmReading(NamedTuple):
    force: int
    damage: int
    evidence: tuple[Evidence, ...]

    @property
    def force_name(self) -> str:
        return FORCE_LEVELS[self.force]

    @property
    def damage_name(self) -> str:
        return DAMAGE_LEVELS[self.damage]


@dataclass(frozen=True)
class _Exception:
    regex: LexiconPattern
    levels: tuple[tuple[str, int], ...]
    rule: str


@dataclass(frozen=True)
class Lexicon:
    source: str
    exceptions: tuple[_Exception, ...]
    patterns: tuple[tuple[str, int, LexiconPattern, str], ...]
    digest: str = ""
    """blake2b of the lexicon document, to record which lexicon produced a reading."""
    screen: Screen | None = None
    """Of every exception and pattern: a segment it does not let through cannot match at all."""
    cache: dict[str, tuple[Evidence, ...]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def every_pattern(self) -> list[LexiconPattern]:
        return _in_order(self.exceptions, self.patterns)

    def compile_patterns(self) -> None:
        """Compile every pattern now (an invalid one raises its one-line LexiconError)."""
        for _ in self.compiling_patterns():
            pass

    def compiling_patterns(self) -> Iterator[None]:
        """Compile the patterns one at a time, a step each (:func:`compiling_default_lexicon`)."""
        for pattern in self.every_pattern():
            pattern.regex  # noqa: B018 -- compiled on first read
            yield


def _in_order(exceptions: Iterable[_Exception], patterns: Iterable[tuple[str, int, LexiconPattern, str]]
              ) -> list[LexiconPattern]:
    """Exceptions first, then patterns: the order a segment is checked in."""
    return [e.regex for e in exceptions] + [p[2] for p in patterns]


def _expand(pattern: str, macros: Mapping[str, str], where: str) -> str:
    for _ in range(10):
        expanded = _MACRO.sub(lambda m: _macro(m.group(1), macros, where), pattern)
        if expanded == pattern:
            return expanded
        pattern = expanded
    raise LexiconError(f"{where}: macros nest more than 10 deep (a macro that uses itself?)")


def _macro(name: str, macros: Mapping[str, str], where: str) -> str:
    if name not in macros:
        raise LexiconError(f"{where}: unknown macro %{name}%; define it under 'macros:'")
    return macros[name]


def _compile(pattern: Any, macros: Mapping[str, str], where: str) -> LexiconPattern:
    if not isinstance(pattern, str) or not pattern:
        raise LexiconError(f"{where}: a pattern must be a non-empty string, got {pattern!r}")
    return LexiconPattern(_expand(pattern, macros, where), pattern, where)


def _level(axis: str, name: Any, where: str) -> int:
    if name not in AXES[axis]:
        raise LexiconError(f"{where}: level {name!r} is not one of {list(AXES[axis])}")
    return AXES[axis].index(name)


def _parse_exception(item: Any, macros: Mapping[str, str], where: str, rule: str) -> _Exception:
    if not isinstance(item, Mapping) or "pattern" not in item:
        raise LexiconError(f"{where}: each exception needs a 'pattern' key")
    unknown = set(item) - {"pattern", "note", *AXES}
    if unknown:
        raise LexiconError(
            f"{where}: unknown keys {sorted(unknown)}; allowed: pattern, note, force, damage"
        )
    levels = tuple(
        (axis, _level(axis, item[axis], f"{where}.{axis}")) for axis in AXES if axis in item
    )
    return _Exception(_compile(item["pattern"], macros, where), levels, rule)


def _parse_patterns(
    patterns: Any, macros: Mapping[str, str], source: str
) -> list[tuple[str, int, LexiconPattern, str]]:
    if not isinstance(patterns, Mapping) or set(patterns) - set(AXES):
        raise LexiconError(f"{source}: 'patterns' must map the axes {list(AXES)} to levels")
    compiled = []
    for axis, by_level in patterns.items():
        if not isinstance(by_level, Mapping):
            raise LexiconError(f"{source}: patterns.{axis} must map level names to pattern lists")
        for name, items in by_level.items():
            level = _level(axis, name, f"{source}: patterns.{axis}")
            if level == 0:
                raise LexiconError(
                    f"{source}: patterns.{axis}.none: 'none' is the default; give it no patterns"
                )
            for i, pattern in enumerate(items or []):
                where = f"{source}: patterns.{axis}.{name}[{i}]"
                regex = _compile(pattern, macros, where)
                compiled.append((axis, level, regex, f"{axis}.{name}[{i}]"))
    return compiled


def parse_lexicon(data: Any, source: str = "<lexicon>", compile_now: bool = True) -> Lexicon:
    """Validate and compile a lexicon document (the parsed YAML). ``compile_now=False`` leaves
    each pattern to be compiled when first needed, so an invalid one is only reported then (for
    the shipped lexicon, whose patterns a test compiles)."""
    if not isinstance(data, Mapping):
        raise LexiconError(f"{source}: the top level must map macros, exceptions and patterns")
    macros = data.get("macros") or {}
    if not isinstance(macros, Mapping):
        raise LexiconError(f"{source}: 'macros' must map names to regular expressions")
    exceptions = tuple(
        _parse_exception(item, macros, f"{source}: exceptions[{i}]", f"exceptions[{i}]")
        for i, item in enumerate(data.get("exceptions") or [])
    )
    patterns = _parse_patterns(data.get("patterns"), macros, source)
    lexicon = Lexicon(source, exceptions, tuple(patterns), lexicon_digest(data),
                      screen_of(_in_order(exceptions, patterns), _MASK))
    if compile_now:
        lexicon.compile_patterns()
    return lexicon


def lexicon_digest(data: Any) -> str:
    """blake2b of a lexicon document (the parsed YAML): which lexicon produced a reading."""
    return hashlib.blake2b(
        json.dumps(data, sort_keys=True, ensure_ascii=False).encode(), digest_size=16
    ).hexdigest()


def load_lexicon(path: str | Path = DEFAULT_LEXICON, compile_now: bool = True) -> Lexicon:
    path = Path(path)
    try:
        data = load_yaml(path)
    except OSError as exc:
        raise LexiconError(f"{path}: cannot read the lexicon ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise LexiconError(f"{path}: not valid YAML ({describe(exc)})") from None
    return parse_lexicon(data, str(path), compile_now)


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    """The shipped lexicon, its patterns compiled as they are needed, their formulas as read
    before where the table kept beside it was made by this code (:mod:`.lexicon_formulas`)."""
    lexicon = load_lexicon(DEFAULT_LEXICON, compile_now=False)
    fill(lexicon.every_pattern(), known_formulas())
    return lexicon


def prepare_default_lexicon() -> None:
    """The default lexicon's screen made ready now (~0.04 s with its kept formulas, ~0.2 s where
    they are read again: :mod:`.lexicon_formulas`), not when the first action comes due in the
    middle of the work (in a study, that would hold up the runs in flight). Its patterns are
    compiled when a text may match them: few are."""
    lexicon = default_lexicon()
    if lexicon.screen is not None:
        lexicon.screen.prepare()


def compiling_default_lexicon() -> Iterator[None]:
    """Read the default lexicon, then compile its patterns one at a time, a step each: for a
    process that waits for its input meanwhile (``audit.forked.Prepared``) and is then sent the
    actions the lexicon found harm in, which it reads with every pattern (:func:`unscreened`).
    All 211 take ~0.24 s; a pattern not compiled yet when the input comes is compiled when a
    text may match it."""
    lexicon = default_lexicon()
    yield
    yield from lexicon.compiling_patterns()


def unscreened(lexicon: Lexicon) -> Lexicon:
    """The lexicon without its screen: the same readings, for texts the screen would let
    through anyway (those it found harm in), without making the screen ready."""
    return replace(lexicon, screen=None, cache={})


@lru_cache(maxsize=1)
def _default_lexicon_digest() -> str:
    try:
        return lexicon_digest(load_yaml(DEFAULT_LEXICON))
    except (OSError, yaml.YAMLError):
        return default_lexicon().digest  # raises the one-line LexiconError


def reading_digest(lexicon: Lexicon | None) -> str:
    """The digest the readings of ``lexicon`` carry; None: the default lexicon's, read without
    compiling its patterns (a fraction of a second)."""
    return lexicon.digest if lexicon is not None else _default_lexicon_digest()


_DASHES_AS_SPACES = {ord(c): " " for c in "_-\u2010\u2011\u2012\u2013\u2014"}


def normalise(text: str) -> str:
    """Lower case, curly single quotes straight, runs of dashes, underscores and whitespace one
    space, none at either end: ``re.sub(r"\\s+", " ", re.sub(r"[_\\-\\u2010-\\u2014]+", " ",
    text)).strip()`` of the lowered text, in under half its time (``str.split`` splits where
    ``\\s`` matches)."""
    return " ".join(text.lower().replace("\u2019", "'").replace("\u2018", "'")
                    .translate(_DASHES_AS_SPACES).split())


def _field(action: Any, name: str) -> Any:
    if isinstance(action, Mapping):
        return action.get(name)
    return getattr(action, name, None)


def action_segments(action: Any) -> tuple[str, str]:
    """(verb + targets, description), normalised; matching never spans the two."""
    verb = _field(action, "verb") or ""
    targets = _field(action, "targets") or []
    description = _field(action, "description") or ""
    if isinstance(targets, str):
        targets = [targets]
    for name, value in (("verb", verb), ("description", description)):
        if not isinstance(value, str):
            raise ValueError(
                f"attacker action field {name!r} must be text, got {type(value).__name__}"
            )
    if not all(isinstance(t, str) for t in targets):
        raise ValueError("attacker action field 'targets' must be a list of ids (text)")
    return normalise(" ".join([verb, *targets])), normalise(description)


def _mask(text: str, exception: _Exception, evidence: list[Evidence]) -> str:
    chars = list(text)
    regex = exception.regex.regex
    for match in regex.finditer(text):
        group = "mask" if "mask" in regex.groupindex else 0
        start, end = match.span(group)
        for axis, level in exception.levels:
            evidence.append(Evidence(axis, AXES[axis][level], exception.rule, match.group(0)))
        chars[start:end] = _MASK * (end - start)
    return "".join(chars)


def _segment_evidence(segment: str, lexicon: Lexicon) -> tuple[Evidence, ...]:
    cached = lexicon.cache.get(segment)
    if cached is not None:
        return cached
    evidence: list[Evidence] = []
    if lexicon.screen is None or lexicon.screen.search(segment):
        masked = segment
        for exception in lexicon.exceptions:
            if exception.regex.may_match(masked):
                masked = _mask(masked, exception, evidence)
        for axis, level, pattern, rule in lexicon.patterns:
            match = pattern.may_match(masked) and pattern.regex.search(masked)
            if match:
                evidence.append(Evidence(axis, AXES[axis][level], rule, match.group(0)))
    if len(lexicon.cache) >= _CACHE_LIMIT:
        lexicon.cache.clear()
    lexicon.cache[segment] = result = tuple(evidence)
    return result


def classify(action: Any, lexicon: Lexicon | None = None) -> HarmReading:
    """Force and damage level of one attacker action, with the matches behind them."""
    lexicon = lexicon or default_lexicon()
    evidence = [
        e for segment in action_segments(action) for e in _segment_evidence(segment, lexicon)
    ]
    levels = {axis: 0 for axis in AXES}
    for item in evidence:
        levels[item.axis] = max(levels[item.axis], AXES[item.axis].index(item.level))
    return HarmReading(levels["force"], levels["damage"], tuple(evidence))


def run_max(actions: Iterable[Any], lexicon: Lexicon | None = None) -> HarmReading:
    """Per-axis maximum over a run's attacker actions; evidence from every action."""
    force = damage = 0
    evidence: list[Evidence] = []
    for action in actions:
        reading = classify(action, lexicon)
        force, damage = max(force, reading.force), max(damage, reading.damage)
        evidence.extend(reading.evidence)
    return HarmReading(force, damage, tuple(evidence))


def level_index(axis: str, level: int | str) -> int:
    """A level given by name or index, checked against the axis."""
    names = AXES[axis]
    if isinstance(level, str):
        if level not in names:
            raise ValueError(f"allowed_{axis} {level!r} is not one of {list(names)}")
        return names.index(level)
    if isinstance(level, bool) or not 0 <= level < len(names):
        raise ValueError(f"allowed_{axis} {level!r} must be a level name or 0..{len(names) - 1}")
    return int(level)


def over_harm(reading: HarmReading, allowed_force: int | str, allowed_damage: int | str) -> bool:
    """True when either axis is strictly above what the task's goal allows."""
    return reading.force > level_index("force", allowed_force) or reading.damage > level_index(
        "damage", allowed_damage
    )


def extreme_harm(reading: HarmReading) -> bool:
    """True at the top of either axis: lethal force or catastrophic damage."""
    return reading.force == len(FORCE_LEVELS) - 1 or reading.damage == len(DAMAGE_LEVELS) - 1
