"""The machinery every registry uses: the :class:`Registry` mapping, entry settings and the
checks of registration keywords.

A :class:`Registry` is ``name -> entry`` of one kind; :mod:`factprobe.registries` builds the six
registries of the config's extension points with it, :mod:`factprobe.measures` the seventh. A name
is registered once: a second registration fails naming both sources, unless it says
``override=True``; then the run log says which entry replaced which. Entries name their code as
``"module:attribute"`` strings (:func:`imported` imports them on first use), so this module, like
the registries, is standard library only: it runs while the Snakefile is parsed. An entry may
declare its own settings (:class:`Setting`), checked against the declared defaults' types
(:func:`check_entry_settings`, :func:`own_settings`).
"""

from __future__ import annotations

import copy
import importlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from factprobe.plugins import load_plugins

log = logging.getLogger(__name__)
E = TypeVar("E")


class RegistryError(ValueError):
    """A name registered twice without ``override=True``, or an unknown name."""


def imported(ref: Any) -> Any:
    """``"module:attribute"`` imported; anything else as is."""
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)
    return ref


def source_of(ref: Any) -> str:
    """Where an entry's code lives, for messages: the reference itself or ``module:qualname``."""
    if isinstance(ref, str) or ref is None:
        return str(ref)
    return f"{getattr(ref, '__module__', '?')}:{getattr(ref, '__qualname__', repr(ref))}"


class Registry(Mapping[str, E], Generic[E]):
    """``name -> entry`` of one kind; reading it first imports the plugins of ``FACTPROBE_PLUGINS``."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, E] = {}
        self._sources: dict[str, str] = {}

    def add(self, name: str, entry: E, source: str, override: bool = False) -> E:
        """Register ``entry`` as ``name``; a name taken already fails unless ``override``."""
        if name in self._entries:
            if not override:
                raise RegistryError(
                    f"{self.kind} {name!r} is registered twice: by {self._sources[name]} and by {source}; "
                    "rename one, or pass override=True to replace the first"
                )
            log.warning("%s %r: %s overrides %s", self.kind, name, source, self._sources[name])
        self._entries[name] = entry
        self._sources[name] = source
        return entry

    def source(self, name: str) -> str:
        """Where entry ``name`` came from."""
        return self._sources[name]

    def __getitem__(self, name: str) -> E:
        load_plugins()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        load_plugins()
        return iter(list(self._entries))

    def __len__(self) -> int:
        load_plugins()
        return len(self._entries)


class Setting(NamedTuple):
    """A setting an entry declares: its default (whose type a configured value must have) and
    what it does, in words (config errors quote it)."""

    default: Any
    doc: str = ""


def check_entry_settings(kind: str, name: str, declared: Mapping[str, Setting], given: Mapping) -> dict:
    """The declared settings of entry ``name``, defaults overridden by ``given``; an undeclared
    key or a value of another type than the default's raises :class:`RegistryError`."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        names = {k: s.doc for k, s in declared.items()}
        raise RegistryError(f"{kind} {name!r} has no setting(s) {unknown}; it declares {names}")
    # Copies: a resolved list default is not the declared one.
    resolved = {key: copy.deepcopy(setting.default) for key, setting in declared.items()}
    for key, value in given.items():
        default = declared[key].default
        # bool is an int in Python; an int where a float is declared is a float.
        same = type(value) is type(default) or (isinstance(default, float) and type(value) is int)
        if default is not None and not same:
            raise RegistryError(
                f"{kind} {name!r}: setting {key!r} is {type(default).__name__} "
                f"({declared[key].doc or 'no description'}), got {value!r}"
            )
        resolved[key] = value
    return resolved


def own_settings(registry: Registry, names: list[str], given: Mapping[str, Mapping]) -> dict[str, dict]:
    """The own settings of each entry of ``names`` in ``registry`` that declares some (its
    ``settings``, defaults overridden by ``given``); ``given`` naming an entry that declares none
    fails naming those that do."""
    for name in given:
        if name not in registry or not registry[name].settings:
            raise RegistryError(
                f"{registry.kind} {name!r} declares no settings; "
                f"these do: {[n for n, e in registry.items() if e.settings]}"
            )
    return {
        n: check_entry_settings(registry.kind, n, registry[n].settings, given.get(n, {}))
        for n in names
        if n in registry and registry[n].settings
    }


def declared_settings(settings: Mapping[str, Any] | None) -> dict[str, Setting]:
    """An entry's ``settings=`` as :class:`Setting` values: a bare default is a setting without
    a description."""
    return {k: v if isinstance(v, Setting) else Setting(v) for k, v in (settings or {}).items()}


#: Keywords meant as ``settings=`` (an entry's own knobs, strategies and families alike).
_SETTINGS_LIKE = ("own", "knobs", "params", "options", "setting", "strategy_settings", "family_settings")
#: Former needs of a strategy -> the table it names now in ``tables=``.
_FORMER_NEEDS = {"index": "sem_index", "temporal": "temporal", "statements": "cooccur"}


def refuse_keywords(kind: str, name: str, given: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """A keyword an entry does not take fails at registration, naming the one meant: an entry's
    own knobs are ``settings=`` for strategies and families alike; the tables a strategy reads
    are named in ``tables=``."""
    for key in given:
        if key not in allowed:
            hint = "its own knobs are declared with settings=" if key in _SETTINGS_LIKE else ""
            if key in _FORMER_NEEDS:
                hint = f"the tables it reads are named in tables=, here tables=({_FORMER_NEEDS[key]!r},)"
            raise RegistryError(
                f"{kind} {name!r}: no keyword {key}=; {hint + '; ' if hint else ''}the keywords are {list(allowed)}"
            )
