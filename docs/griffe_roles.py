"""Griffe extension: the Sphinx roles of faircl's docstrings become cross-references of the site.

The docstrings name other objects as ``:class:`~faircl.methods.base.FairModule```, ``:func:`eo_gap_from_confusion```
or ``:mod:`faircl.losses.distributed```. Each role is resolved in the scope of the object that holds the docstring
(as Sphinx does) and rewritten:

- a faircl object that exists becomes a link to its entry in the API reference (an optional mkdocs-autorefs
  reference: when the object has no entry of its own, e.g. a private helper, it is shown as code without a link);
- a ``faircl.*`` path that names **no** object becomes a strict reference, so ``mkdocs build --strict`` fails on it
  (a docstring pointing at a renamed or removed object is a broken reference);
- anything else (torch, torchmetrics, a name that cannot be resolved) is shown as code.

``~`` shows the last component only, as in Sphinx.

It also unwraps the displayed equations of the docstrings: a block of indented lines that are each one ``literal``
(an RST block quote, e.g. ``ℓ_i = −1/|P(i)| Σ ...``) is a Markdown code block, where the double backticks would show;
they are removed, so the block shows the equation alone.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

EQUATION = re.compile(r"^(\s+)``((?:(?!``).)+)``([.,;:]?)\s*$")
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)\.?([\w.]+)`")


def _lookup(pkg: griffe.Module, path: str) -> bool:
    """Whether ``path`` (``faircl.a.b``) names an object of the loaded package."""
    parts = path.split(".")
    if parts[0] != pkg.name:
        return False
    obj: Any = pkg
    for part in parts[1:]:
        try:
            if obj.is_alias:
                obj = obj.final_target
            obj = obj.members[part]
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError, AttributeError):
            return False
    return True


def _resolve(obj: griffe.Object, name: str) -> str | None:
    """Full path of ``name`` seen from ``obj`` (its members, its module's members and imports), or None."""
    if name.startswith("faircl."):
        return name
    first, _, rest = name.partition(".")
    try:
        base = obj.resolve(first)
    except (griffe.NameResolutionError, KeyError, AttributeError):
        return None
    return f"{base}.{rest}" if rest else base


def unwrap_equations(text: str) -> str:
    """Remove the double backticks of indented one-literal lines that open a block (after a blank line)."""
    lines = text.split("\n")
    in_block = False
    for i, line in enumerate(lines):
        m = EQUATION.match(line)
        starts = i > 0 and not lines[i - 1].strip()
        if m and (starts or in_block):
            lines[i] = f"{m.group(1)}{m.group(2)}{m.group(3)}"
            in_block = True
        else:
            in_block = False
    return "\n".join(lines)


def rewrite(text: str, obj: griffe.Object, pkg: griffe.Module) -> str:
    """``text`` with its Sphinx roles replaced by Markdown / autorefs cross-references."""

    def one(m: re.Match) -> str:
        short, name = m.group(1) == "~", m.group(2)
        title = f"<code>{name.rsplit('.', 1)[-1] if short else name}</code>"
        target = _resolve(obj, name)
        if target is None or not target.startswith(pkg.name + "."):
            return title
        if _lookup(pkg, target):
            return f'<autoref identifier="{target}" optional>{title}</autoref>'
        return f"[{title}][{target}]"  # names nothing: a strict reference, reported by mkdocs build --strict

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring of the ``faircl`` package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "faircl":
            return
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None:
                obj.docstring.value = unwrap_equations(rewrite(obj.docstring.value, obj, pkg))
            stack += [member for member in obj.members.values() if not member.is_alias]
