"""`--help` as people read it: flags without a value type, arguments in capitals on the usage line.

Some typer releases print every boolean flag as ``--replay <bool>`` (``--help`` too) and a
required argument as ``{cassette}``; :func:`plain_flags_and_arguments` adjusts the two methods
that render them, where this typer has them, and leaves every other release alone.
"""

from __future__ import annotations

from typing import Any


def plain_flags_and_arguments() -> None:
    try:
        from typer.core import TyperArgument, TyperOption
    except ImportError:  # pragma: no cover - typer without these classes renders help itself
        return
    if hasattr(TyperOption, "display_type_rich") and not getattr(TyperOption, "_vcrime_plain", False):
        option_type = TyperOption.display_type_rich

        def flag_type(self: Any, ctx: Any) -> str | None:
            return None if self.is_flag and not self.count else option_type(self, ctx)

        TyperOption.display_type_rich = flag_type  # type: ignore[method-assign]
        TyperOption._vcrime_plain = True  # type: ignore[attr-defined]
    if hasattr(TyperArgument, "_usage_display_name") and not getattr(TyperArgument, "_vcrime_plain", False):

        def usage_name(self: Any) -> str:
            name = (self.metavar or self.name or "").upper()
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
        TyperArgument._vcrime_plain = True  # type: ignore[attr-defined]
