"""Build the API reference of ``resolvent`` from its docstrings, with pdoc.

    python docs/build_api.py [OUT]        # default docs/api; open OUT/index.html

Every module of the package is documented (pdoc alone would follow ``resolvent.__all__``, which
names the top-level API only). Any warning pdoc raises (a module that does not import, an
annotation or a docstring it cannot read) fails the build, and so does a dead reference: a
````resolvent.…```` name in the sources that names nothing. CI runs it.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
import warnings
from pathlib import Path

# MuJoCo's GLFW binding probes its library in a subprocess at import; pdoc blocks that unless allowed
os.environ.setdefault("PDOC_ALLOW_EXEC", "1")

import pdoc  # noqa: E402

import resolvent  # noqa: E402


def package_modules() -> list[str]:
    """The package and every module in it."""
    return ["resolvent"] + sorted(m.name for m in pkgutil.walk_packages(resolvent.__path__, "resolvent."))


def modules() -> list[str]:
    """The modules to hand pdoc: all but those it reaches by itself, through a package's ``__all__``."""
    names = package_modules()
    reached = {f"{parent}.{sub}" for parent in names for sub in getattr(importlib.import_module(parent), "__all__", ())}
    return [n for n in names if n not in reached]


def build(out: str | Path) -> list[str]:
    """Write the reference into ``out``; returns pdoc's warnings (none: a clean build).

    Left out: pdoc's "Error parsing type annotation ... __init__", raised for the constructors
    that ``NamedTuple`` and an inherited dataclass generate (their string annotations are read in
    another module's namespace): a limit of pdoc, not a fault of the docstrings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.render.configure(docformat="markdown", search=True)
        pdoc.pdoc(*modules(), output_directory=Path(out))
    return [f"{w.category.__name__}: {w.message}" for w in caught if "pdoc" in w.filename
            and not re.match(r"Error parsing type annotation .* for [\w.]+\.__init__\.", str(w.message))]


def resolves(ref: str) -> bool:
    """Whether the dotted name ``ref`` (``resolvent.x.y``) names a module or an object in one."""
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def dead_references() -> list[str]:
    """Every ````resolvent.…```` named in the package's sources that names nothing."""
    sources = {name: Path(importlib.import_module(name).__file__).read_text() for name in package_modules()}
    return [f"{name}: ``{ref}`` names nothing" for name, text in sources.items()
            for ref in re.findall(r"``(resolvent(?:\.\w+)+)``", text) if not resolves(ref)]


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "api")
    problems = build(out) + dead_references()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} problem(s): the API reference is broken")
    print(f"{out / 'index.html'}: {len(list(out.glob('resolvent/**/*.html'))) + 1} module pages")


if __name__ == "__main__":
    main()
