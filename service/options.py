"""The command line's options that read the environment (``CROUPIER_*``): a bad value from a
variable is one line naming the option and the variable, as a bad secret's is
(docs/operations.md, "Logs"), not click's usage error naming a flag that was never passed."""

from __future__ import annotations

import os
from typing import Any

import click
from click.core import ParameterSource

#: The words a switch set in the environment takes (``CROUPIER_LOBBY``), in any case.
SWITCH_ON = frozenset({"1", "true", "yes", "on"})
SWITCH_OFF = frozenset({"0", "false", "no", "off"})


class Switch(click.types.BoolParamType):
    """An on/off setting: 1/0, true/false, yes/no, on/off (any case); anything else is refused
    rather than read as off."""

    name = "switch"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in SWITCH_ON | SWITCH_OFF:
            self.fail(f"{value!r} is not one of 1/0, true/false, yes/no, on/off", param, ctx)
        return text in SWITCH_ON


class SettingError(click.ClickException):
    """A bad value of an option's environment variable: one line naming both (``--workers
    (CROUPIER_WORKERS): …``), exit status 1, as a bad secret or TLS file is, not click's usage
    error naming a flag that was never passed. ``log_format``: the command's, when it was read
    before (``json``: the line is a JSON ``failed`` line)."""

    def __init__(self, message: str, log_format: str | None = None) -> None:
        super().__init__(message)
        self.log_format = log_format


class _FromEnvironment(click.Parameter):
    """A parameter whose default is read from the environment variable ``env`` (its ``default``
    does the reading, :func:`~croupier.service.config.env_default`): a value from there that the
    parameter's type refuses is a :class:`SettingError` naming the variable."""

    def __init__(self, *args: Any, env: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env = env

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        try:
            return super().process_value(ctx, value)
        except click.BadParameter as error:
            raise _from_environment(self, self.env, ctx, error) from None


class EnvOption(_FromEnvironment, click.Option):
    """An option read from the environment variable ``env`` by default (:class:`_FromEnvironment`)."""


class EnvArgument(_FromEnvironment, click.Argument):
    """An argument read from the environment variable ``env`` by default, as an option."""


def _from_environment(
    param: click.Parameter, env: str, ctx: click.Context, error: click.BadParameter
) -> click.ClickException:
    """``error`` as a :class:`SettingError` when the value came from ``env`` (the parameter was
    not given, and the variable is set); else ``error`` itself."""
    given = (
        param.name is None or ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT
    )
    if given or env not in os.environ:
        return error
    name = param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
    log_format = ctx.params.get("log_format")
    return SettingError(
        f"{name} ({env}): {error.message.rstrip('.')}",
        log_format if isinstance(log_format, str) else None,
    )
