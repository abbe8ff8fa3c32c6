"""Command-line options generated from a config dataclass: the command line's defaults, types,
choices and help have one home, the config (in the spirit of cleanrl's ``Args`` with tyro).

``config_options(base, ...)`` decorates a click command with one option per field of the
config dataclass instance ``base``, nested configs included:

- the name is the field's path, ``--field-name`` (a nested one ``--fqe.prior.n-generic``);
  ``names`` adds shorter ones (``{"fqe.tau": ("--tau",)}``);
- the type is the field's annotation: ``int``, ``float``, ``str``, ``bool`` (a flag), a
  ``tuple[X, ...]`` (comma-separated values; ``""`` is the empty tuple), ``X | None`` as ``X``;
- the default is ``base``'s value; with ``presets`` (name -> config, ``base`` the first), a
  field on which the presets differ defaults to None and its help says each preset's value;
- the help is the field's comment in the class source (continued on the comment lines
  below it), or ``helps[path]``; its double-backquoted text is written plain, a field's name
  as its option (``--field``);
- ``choices[path]`` (the constants that define a field's values) makes a ``str`` field a
  ``click.Choice`` and lists a tuple's values in its help (the config checks each one).

``config_values(base, params)`` reads the values a command was given back as {path: value}
(None: not given), and ``replace_paths(config, values)`` is ``config`` with them set.
A leaf module: click and the standard library only.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import re
import textwrap
import tokenize
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import click

SEP = "__"   # a nested field's parameter name: fqe.prior.kind -> fqe__prior__kind


@dataclass(frozen=True)
class Leaf:
    """One option's field: its path in the config tree, type, default and help."""

    path: str                # "steps", "fqe.prior.kind"
    type: Any                # the annotation, None removed from ``X | None``
    default: Any             # the base config's value
    help: str                # the field's comment


def class_comments(cls: type) -> dict[str, str]:
    """Each field of the dataclass ``cls`` (its own, not inherited) -> its trailing comment,
    joined with the comment-only lines below it."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):      # no source (a class built at run time): no help
        return {}
    comments, code = {}, set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            code.update(range(tok.start[0], tok.end[0] + 1))
    docs = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            row, text = node.end_lineno, []
            if row in comments:
                text.append(comments[row])
                row += 1
                while row in comments and row not in code:
                    text.append(comments[row])
                    row += 1
            docs[node.target.id] = " ".join(t for t in text if t)
    return docs


def field_docs(cls: type) -> dict[str, str]:
    """Every field of the dataclass ``cls`` (inherited ones too) -> its comment."""
    docs = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(class_comments(klass))
    return docs


def strip_none(tp: Any) -> Any:
    """``X | None`` -> ``X``; any other annotation as it is."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return options[0]
    return tp


def leaves(config, skip: Sequence[str] = (), prefix: str = "") -> list[Leaf]:
    """The fields of the config dataclass instance ``config``, nested configs expanded, less
    the paths in ``skip`` (a skipped nested config skips all of its fields)."""
    cls = type(config)
    hints, docs = typing.get_type_hints(cls), field_docs(cls)
    out = []
    for f in dataclasses.fields(cls):
        path = prefix + f.name
        if not f.init or path in skip:
            continue
        tp, value = strip_none(hints[f.name]), getattr(config, f.name)
        if dataclasses.is_dataclass(tp):
            out += leaves(tp() if value is None else value, skip, path + ".")
        else:
            out.append(Leaf(path, tp, value, docs.get(f.name, "")))
    return out


def show(value) -> str:
    """A value as it is typed on the command line."""
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


def item_type(leaf: Leaf) -> type | None:
    """The item type of a ``tuple[X, ...]`` field (None for any other)."""
    if typing.get_origin(leaf.type) is tuple:
        args = typing.get_args(leaf.type)
        if len(args) == 2 and args[1] is Ellipsis and args[0] in (int, float, str):
            return args[0]
        raise TypeError(f"{leaf.path}: only tuple[X, ...] of int, float or str can be an option, got {leaf.type}")
    return None


def split_values(item: type) -> Callable:
    """A click callback: comma-separated text -> a tuple of ``item``."""
    def callback(ctx, param, text):
        if text is None or isinstance(text, tuple):
            return text
        try:
            return tuple(item(x.strip()) for x in text.split(",") if x.strip())
        except ValueError:
            raise click.BadParameter(f"comma-separated {item.__name__} values, got {text!r}") from None
    return callback


def option_help(leaf: Leaf, fields: set[str], help: str | None, choices: Sequence | None) -> str:
    """The field's help, its ````field```` references written as options."""
    text = re.sub(r"``([^`]+)``", lambda m: "--" + m[1].replace("_", "-") if m[1] in fields else m[1],
                  leaf.help if help is None else help)
    if choices is not None and item_type(leaf) is not None:
        text += f" (comma-separated, of: {', '.join(map(str, choices))})"
    return text


def config_options(base, *, presets: Mapping[str, Any] | None = None, preset_option: str = "--preset",
                   skip: Sequence[str] = (), names: Mapping[str, Sequence[str]] | None = None,
                   choices: Mapping[str, Sequence] | None = None, helps: Mapping[str, str] | None = None
                   ) -> Callable:
    """A decorator adding one click option per field of the config ``base`` (the module's
    docstring). ``presets`` (name -> config): the ``preset_option``'s configurations."""
    names, choices, helps = names or {}, choices or {}, helps or {}
    found = leaves(base, skip)
    paths = {leaf.path for leaf in found}
    unknown = sorted((set(names) | set(choices) | set(helps)) - paths)
    if unknown:
        raise ValueError(f"{type(base).__name__} has no option fields {unknown}")
    options = []
    for leaf in found:
        decls = [*names.get(leaf.path, ()), "--" + leaf.path.replace("_", "-"), leaf.path.replace(".", SEP)]
        text = option_help(leaf, paths, helps.get(leaf.path), choices.get(leaf.path))
        kwargs: dict[str, Any] = {"default": leaf.default, "show_default": True}
        item = item_type(leaf)
        if presets:
            values = [value_at(config, leaf.path) for config in presets.values()]
            if any(v != values[0] for v in values):
                (first, *others) = zip(presets, values)
                text += (f" [default: the preset's: {show(first[1])}; "
                         + "; ".join(f"{preset_option} {n}: {show(v)}" for n, v in others) + "]")
                kwargs.update(default=None, show_default=False)
        if leaf.type is bool:
            if kwargs["default"] is not False:
                decls[-2] += "/--no-" + decls[-2][2:]
            kwargs.update(is_flag=True)
        elif item is not None:
            kwargs.update(type=str, callback=split_values(item))
            if kwargs["default"] is not None:
                kwargs.update(default=show(kwargs["default"]), show_default=show(kwargs["default"]) or "none")
        elif leaf.path in choices and leaf.type is str:
            kwargs.update(type=click.Choice(list(choices[leaf.path])))
        elif leaf.type in (int, float, str) and leaf.path not in choices:
            kwargs.update(type=leaf.type)
        else:
            raise TypeError(f"{leaf.path}: a {leaf.type} field cannot be a command-line option"
                            + (" with choices (a str or a tuple can)" if leaf.path in choices else ""))
        options.append(click.option(*decls, help=text, **kwargs))

    def decorate(command):
        for add in reversed(options):
            command = add(command)
        return command

    return decorate


def value_at(config, path: str):
    """The value of the field at ``path`` ("fqe.prior.kind") in ``config``."""
    for name in path.split("."):
        config = getattr(config, name)
    return config


def config_values(base, params: Mapping[str, Any], skip: Sequence[str] = ()) -> dict[str, Any]:
    """The config values among a command's ``params`` (what click passed it): {path: value},
    those left None (not given, the preset's) out."""
    return {leaf.path: params[leaf.path.replace(".", SEP)] for leaf in leaves(base, skip)
            if params.get(leaf.path.replace(".", SEP)) is not None}


def replace_paths(config, values: Mapping[str, Any]):
    """``config`` with the fields at the paths of ``values`` set (nested configs rebuilt, a
    None one from its class's defaults); each config is checked once, with all its values."""
    top, nested = {}, {}
    for path, value in values.items():
        head, _, rest = path.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            top[head] = value
    hints = typing.get_type_hints(type(config)) if nested else {}
    for head, sub in nested.items():
        current = getattr(config, head)
        top[head] = replace_paths(strip_none(hints[head])() if current is None else current, sub)
    return dataclasses.replace(config, **top) if top else config
