"""The settings as the magics have them, made from the one table (``settings.py``).

`SettingTraits` gives `DeepAgentMagics` a traitlet per ``%deepagent_config`` setting (``%config
DeepAgentMagics.max_iters = 30``); ``@flags(CELL)`` and ``@flags(CONFIG)`` put the table's flags
into a magic's ``@magic_arguments`` parser (a ``%%deepagent`` flag left out means "the configured
value"; a ``%deepagent_config`` switch reads ``on``/``off``); `check` holds values to their bounds,
and `checked_caps` reads the spend caps (``--max-cost`` ...: `core.policy.spend.check_cap` decides
what is a cap; ``%deepagent_config --max-cost off`` removes one). A bad value is one `UsageError`
line, before anything runs or a setting sticks.
"""

from __future__ import annotations

from argparse import ArgumentTypeError
from typing import Any, Callable, Mapping

from IPython.core.error import UsageError
from IPython.core.magic import Magics
from IPython.core.magic_arguments import ArgDecorator
from traitlets import Bool, Dict, Enum, Float, Int, List, TraitType, Unicode

from ..core.policy.spend import CAPS, check_cap
from ..errors import InvalidValue
from ..settings import CELL, CONFIG, MAGICS, SETTINGS, Setting, at

NAMES = tuple(s.name for s in SETTINGS.values() if s.doors & MAGICS)  # what %deepagent_config lists
OFF = ("off", "none")


def trait(setting: Setting) -> TraitType:
    """The traitlet of one setting: its type, default and help; None allowed where None is the default."""
    none, default = setting.default is None, setting.where(CONFIG, "default")
    if setting.choices:
        made = Enum(setting.choices, default)
    elif setting.kind is bool:
        made = Bool(default)
    elif setting.kind is list:
        made = List(Unicode(), default_value=list(default))
    elif setting.kind is dict:
        made = Dict(default_value=dict(default))
    else:
        made = {int: Int, float: Float}.get(setting.kind, Unicode)(default, allow_none=none)
    made.help = setting.where(CONFIG, "help")
    return made.tag(config=True)


SettingTraits = type(Magics)("SettingTraits", (Magics,), {
    "__doc__": "A traitlet for each setting of settings.py that %deepagent_config sets.",
    "__module__": __name__,
    **{s.name: trait(s) for s in at(CONFIG)},
})


def _argument_type(setting: Setting) -> Callable[[str], Any] | None:
    if setting.read is None:  # argparse's own int/float (its "invalid int value" message); text as it is
        return setting.kind if setting.kind in (int, float) else None

    def read(text: str) -> Any:
        try:
            return setting.read(text)
        except InvalidValue as exc:
            raise ArgumentTypeError(str(exc)) from None

    read.__name__ = setting.name
    return read


def add_flag(parser: Any, setting: Setting, door: str) -> None:
    """One setting's flag, as ``door`` (CELL or CONFIG) has it."""
    help, flag = setting.where(door, "help"), setting.flag
    if setting.off and door == CONFIG:
        help += f" ('off': {setting.off})"
    help = help.replace("%", "%%")  # argparse formats help with %
    options: dict[str, Any] = {"dest": setting.name, "help": help}
    if setting.kind is bool and door == CONFIG:
        options["choices"] = ["on", "off"]
    elif setting.kind is bool:  # left out: None, the configured value
        if setting.default:
            flag, options["help"] = "--no-" + setting.flag[2:], f"do not {help}"
        options.update(action="store_const", const=not setting.default)
    elif setting.repeat:
        options["action"] = "append"
    else:
        options["type"] = _argument_type(setting)
        if setting.where(door, "choices"):
            options["choices"] = list(setting.where(door, "choices"))
    if setting.metavar:
        options["metavar"] = setting.metavar
    parser.add_argument(flag, **options)


class flags(ArgDecorator):
    """``@flags(CELL)``: every setting of the table that applies at ``door``, as that magic's flags."""

    def __init__(self, door: str):
        self.door = door

    def add_to_parser(self, parser: Any, group: Any) -> None:
        for setting in at(self.door):
            add_flag(group if group is not None else parser, setting, self.door)


def switches(updates: dict[str, Any]) -> dict[str, Any]:
    """``%deepagent_config``'s ``on``/``off`` as True/False."""
    return {name: value == "on" if SETTINGS[name].kind is bool else value for name, value in updates.items()}


def check(values: Mapping[str, Any]) -> None:
    """Each value within its setting's bounds: else one UsageError line naming the flag."""
    for name, value in values.items():
        setting = SETTINGS.get(name)
        if setting is not None:
            try:
                setting.check(value)
            except InvalidValue as exc:
                raise UsageError(str(exc)) from None


def checked_caps(settings: Mapping[str, Any], unset_with_off: bool = False) -> dict[str, Any]:
    """The caps among ``settings``, each checked (``off`` is None when ``unset_with_off``)."""
    caps = {}
    for name in CAPS:
        if name not in settings:
            continue
        value = settings[name]
        if unset_with_off and isinstance(value, str) and value.strip().lower() in OFF:
            caps[name] = None
            continue
        try:
            caps[name] = check_cap(name, value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return caps


__all__ = ["CELL", "CONFIG", "NAMES", "SettingTraits", "check", "checked_caps", "flags", "switches", "trait"]
