"""The command table names each command's handler; bad input raised anywhere as UserError is one line and exit code
2, while any other exception, a stray ValueError included, keeps its traceback (issue 29)."""

from __future__ import annotations

import inspect

import pytest

from cli import main as cli_main
from cli.main import COMMANDS, handler_of, main
from schemas.errors import UserError


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_names_a_handler_that_takes_the_arguments(name):
    command = COMMANDS[name]
    for reference in filter(None, (command.handler, command.check)):
        function = handler_of(reference)
        assert callable(function), reference
        assert list(inspect.signature(function).parameters) == ["args"], reference


def _raising(error: BaseException):
    def handler(args):
        raise error
    return handler


@pytest.mark.parametrize("interruptible", [True, False])
def test_a_user_error_is_one_line_and_any_other_error_keeps_its_traceback(monkeypatch, capsys, interruptible):
    entry = COMMANDS["families"]
    monkeypatch.setitem(COMMANDS, "families", entry.__class__(**{**vars(entry), "interruptible": interruptible}))
    monkeypatch.setattr(cli_main, "handler_of", lambda reference: _raising(UserError("--x must be 1 or more, got 0")))
    assert main(["families"]) == 2
    assert capsys.readouterr().err == "error: --x must be 1 or more, got 0\n"
    for bug in (ValueError("a bug"), KeyError("k"), TypeError("t")):
        monkeypatch.setattr(cli_main, "handler_of", lambda reference, bug=bug: _raising(bug))
        with pytest.raises(type(bug)):
            main(["families"])


def test_the_project_errors_for_bad_input_are_user_errors():
    """The errors every layer raises for bad input print as one line; those that subclassed ValueError still do."""
    from envs.catalog import BadPredicate, UnknownEnvironment
    from flows.runners import RunnerError
    from mechanisms.base import ParamsError
    from mechanisms.registry import UnknownFamilyError
    from schemas.shard import PlanError
    from warehouse.catalog import QueryError
    from warehouse.location import WarehouseError

    for kind in (BadPredicate, UnknownEnvironment, RunnerError, ParamsError, UnknownFamilyError, PlanError,
                 QueryError, WarehouseError):
        assert issubclass(kind, UserError) and issubclass(kind, ValueError), kind
    assert issubclass(UnknownEnvironment, KeyError)  # callers that look ids up catch it as before
    assert str(UnknownEnvironment("unknown environment id 'x'")) == "unknown environment id 'x'"
