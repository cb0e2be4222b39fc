"""vcrime_audit.certify: its building blocks, imported when first asked for."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import vcrime_audit.certify as certify_package


@pytest.mark.parametrize("name", sorted(certify_package.__all__))
def test_every_exported_name_is_its_home_modules_object(name):
    value = getattr(certify_package, name)
    home = certify_package._HOME_OF.get(name)
    if home is None:  # defined in the package itself
        assert name in vars(certify_package)
    else:
        assert value is getattr(importlib.import_module(home, certify_package.__name__), name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        certify_package.nothing_here  # noqa: B018


def test_importing_one_module_imports_none_of_the_others():
    code = ("import sys, vcrime_audit.certify.report\n"
            "print(sorted(m for m in sys.modules if m.startswith('vcrime_audit.certify.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['vcrime_audit.certify.presets', 'vcrime_audit.certify.report']"
