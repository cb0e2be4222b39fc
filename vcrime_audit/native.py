"""Compiled copies of the modules a replay spends its time in, used only where built from the very
source beside them.

``scripts/build_native.py`` compiles each module of :data:`MODULES` with Cython (plain Python
semantics: annotations are not used as C types) to ``<name>.<digest>.<suffix>`` next to
``<name>.py``, where ``<digest>`` is that source's blake2b. The finder :func:`install` puts first
on ``sys.meta_path`` hashes the source on import and loads the compiled copy only if one of that
digest is there: a module edited since its build runs as Python until the next build, and a
build never shadows other code (Python's own finder looks for ``<name>.<suffix>`` only).

``VCRIME_AUDIT_NATIVE=0`` imports every module from its source (a profiler such as py-spy or
cProfile sees no frame of compiled code). A compiled copy that cannot be loaded (cut short,
built for another machine) is reported in one line and its source runs instead.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import os
import sys
from importlib.machinery import ExtensionFileLoader, ModuleSpec, SourceFileLoader
from importlib.util import spec_from_file_location
from pathlib import Path
from types import ModuleType

PACKAGE = "vcrime_audit"
PACKAGE_DIR = Path(__file__).resolve().parent
SWITCH = "VCRIME_AUDIT_NATIVE"
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]

MODULES = (
    "agents.attacker", "agents.calling", "agents.judge", "agents.prompting", "agents.render",
    "agents.world_manager", "backends.base", "canonical", "cassette.call_records",
    "cassette.cassette", "cassette.keys", "cassette.lines", "cassette.persist", "cassette.recording",
    "clock", "engine", "flags", "harm", "identity", "jsonparse", "lexicon_patterns", "memo", "patch",
    "recorder", "rowdigest", "runner", "seeds", "store.db", "store.kept", "store.rows", "world",
)
"""The modules (under the package) that a replay's profile spends its Python time in; together
~13 % fewer instructions a verified run when compiled (``benchmarks/bench_instructions.py``).
Not ``regex_literals``: ``lexicon_formulas`` identifies its table by that module's source file."""

_NAMES = frozenset(f"{PACKAGE}.{module}" for module in MODULES)


def source_path(name: str, package: Path | None = None) -> Path:
    """The source file of the module ``name`` (``vcrime_audit.store.db``) in ``package`` (by
    default this package's folder)."""
    return (package or PACKAGE_DIR).joinpath(*name.split(".")[1:]).with_suffix(".py")


def built_path(source: Path, code: bytes) -> Path:
    """Where the compiled copy of ``code`` (the bytes of ``source``) lies."""
    digest = hashlib.blake2b(code, digest_size=8).hexdigest()
    return source.with_name(f"{source.stem}.{digest}{SUFFIX}")


def _current_build(name: str) -> tuple[Path, Path] | None:
    """The source of ``name`` and its compiled copy, where one is built from the source as it is."""
    source = source_path(name)
    try:
        built = built_path(source, source.read_bytes())
    except OSError:
        return None
    return (source, built) if built.is_file() else None


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def _cut_short(path: Path) -> str | None:
    """Why the shared library at ``path`` would crash the process that loads it, if it would: on
    Linux, an ELF file ends with its section headers, and the loader maps a file cut short before
    them and dies of SIGBUS touching what is not there. Checked from the header (~10 us), not by
    hashing the file. Elsewhere None: the loader's own error is reported."""
    if not sys.platform.startswith("linux"):
        return None
    with open(path, "rb") as handle:
        header = handle.read(64)
        size = os.fstat(handle.fileno()).st_size
    if len(header) < 64 or header[:5] != b"\x7fELF\x02" or header[5] != 1:
        return "not a 64-bit little-endian ELF file"
    ends = int.from_bytes(header[0x28:0x30], "little") + \
        int.from_bytes(header[0x3A:0x3C], "little") * int.from_bytes(header[0x3C:0x3E], "little")
    return None if ends == size else f"{size} bytes where its headers say {ends}"


class _Loader(ExtensionFileLoader):
    """A compiled copy's loader that runs the module's source where the copy cannot be loaded."""

    def __init__(self, name: str, built: Path, source: Path) -> None:
        super().__init__(name, str(built))
        self.source = source
        self.fallback: SourceFileLoader | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        try:
            problem = _cut_short(Path(self.path))
            if problem is None:
                return super().create_module(spec)
        except (ImportError, OSError) as exc:
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"{self.path}: cannot be loaded ({problem}); fix: python scripts/build_native.py "
              f"(running {self.source.name} meanwhile)", file=sys.stderr)
        self.fallback = SourceFileLoader(self.name, str(self.source))
        spec.origin = str(self.source)
        return None

    def exec_module(self, module: ModuleType) -> None:
        if self.fallback is None:
            super().exec_module(module)
            return
        module.__file__ = str(self.source)
        module.__loader__ = self.fallback
        self.fallback.exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        current = _current_build(name) if name in _NAMES else None
        if current is None:
            return None
        source, built = current
        return spec_from_file_location(name, built, loader=_Loader(name, built, source))


_FINDER = _Finder()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), unless ``VCRIME_AUDIT_NATIVE=0``."""
    if enabled() and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def loaded() -> list[str]:
    """The modules of :data:`MODULES` imported so far from a compiled copy."""
    return sorted(name for name in _NAMES
                  if type(getattr(sys.modules.get(name), "__loader__", None)) is _Loader)


def built() -> list[str]:
    """The modules of :data:`MODULES` whose compiled copy matches their source now."""
    return sorted(name for name in _NAMES if _current_build(name) is not None)


def summary() -> str:
    """One line for a benchmark's header: how many modules run compiled."""
    if not enabled():
        return f"native modules off ({SWITCH}=0): all run as Python"
    return (f"native modules: {len(built())} of {len(MODULES)} built from their current source "
            "(scripts/build_native.py)")
