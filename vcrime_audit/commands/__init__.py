"""Typer sub-apps that cli.py mounts."""
