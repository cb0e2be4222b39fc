"""`--help` shows every option's help whole: a bracketed word such as `[ray]` in a help text is
rich markup unless escaped, and would vanish from the output."""

import re

import click
import typer

from vcrime_audit.cli import app

EATEN = re.compile(r"(?<!\\)\[[a-z/][^\]]*\]")


def commands(group: click.Command, path: str = "vcrime-audit"):
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from commands(sub, f"{path} {name}")


def test_no_help_text_loses_a_bracketed_word_to_markup():
    lost = [f"{path} {param.opts[0]}: {param.help!r}"
            for path, command in commands(typer.main.get_command(app))
            for param in command.params
            if isinstance(getattr(param, "help", None), str) and EATEN.search(param.help)]
    assert not lost, "escape these with rich.markup.escape:\n" + "\n".join(lost)
