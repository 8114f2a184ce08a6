"""Every command is a module-level function (no logic in closures inside ``register``)."""

from __future__ import annotations

import importlib

import pytest
import typer

from protobench.cli import COMMANDS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_is_a_module_level_function(name: str) -> None:
    module = importlib.import_module(COMMANDS[name].module)
    if hasattr(module, "app"):  # a group: its commands are decorated module functions
        callbacks = [c.callback for c in module.app.registered_commands]
    else:
        app = typer.Typer()
        module.register(app)
        callbacks = [c.callback for c in app.registered_commands]
    assert callbacks
    for callback in callbacks:
        assert callback is not None
        assert "<locals>" not in callback.__qualname__, callback.__qualname__
        assert getattr(module, callback.__name__) is callback
