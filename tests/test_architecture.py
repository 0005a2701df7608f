"""The package's layers (docs/architecture.md), read from its own imports.

Every ``import`` and ``from … import`` in natcoord — at module level or inside a
function, where a lazy import would hide a circle — is resolved to the module
it names. Then: no module imports a module of a higher layer, the module graph
has no circles, and no module imports another module's leading-underscore name.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "natcoord"

#: layers, lowest first: a module may import its own layer and the layers below
LAYERS = ("util", "core", "model", "models", "io", "linalg", "viz", "dynamics", "integrate",
          "analysis", "study", "application")
#: modules of the top level that are not subpackages
APPLICATION = {"natcoord", "natcoord.cli", "natcoord.__main__"}


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
#: the compiled core's extension module (natcoord/core/src, built by setup.py): a
#: module of the core layer, not a private name
EXTENSIONS = {"natcoord.core.engine"}


def layer(module):
    if module in APPLICATION:
        return LAYERS.index("application")
    return LAYERS.index(module.split(".")[1])


def imports(module):
    """``(imported module, imported name or None)`` of every import statement."""
    path = MODULES[module]
    return imports_in(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def imports_in(source, module, is_package=False):
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.startswith("natcoord")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("natcoord"):
                target = node.module
            else:
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.append((child, None) if child in MODULES or child in EXTENSIONS
                             else (target, alias.name))
    return found


def graph():
    return {m: {target for target, _ in imports(m) if target in MODULES and target != m}
            for m in MODULES}


def test_every_module_belongs_to_a_layer():
    unknown = [m for m in MODULES if m not in APPLICATION
               and m.split(".")[1] not in LAYERS]
    assert not unknown, f"modules outside the layers of docs/architecture.md: {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_only_downward(module):
    upward = sorted(t for t in graph()[module] if layer(t) > layer(module))
    assert not upward, f"{module} (layer {LAYERS[layer(module)]}) imports higher layers: {upward}"


def test_there_are_no_import_circles():
    edges, circles = graph(), []
    index, low, stack, on_stack, counter = {}, {}, [], set(), [0]

    def connect(v):                                   # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    assert not circles, f"import circles: {circles}"


def test_no_module_imports_another_modules_private_names():
    private = sorted(f"{m} imports {target}.{name}" for m in MODULES
                     for target, name in imports(m)
                     if name and name.startswith("_") and not name.startswith("__")
                     and target != m)
    assert not private, private


def test_a_lazy_upward_import_is_found():
    """The check itself can fail: an import inside a function of a model-layer
    module, of the integrator and of a private name, is seen as both."""
    source = ("def with_parameters(self):\n"
              "    from ..integrate.simulate import _Run\n"
              "    from . import parameters\n")
    found = imports_in(source, "natcoord.model.frozen")
    assert ("natcoord.integrate.simulate", "_Run") in found
    assert ("natcoord.model.parameters", None) in found
    assert layer("natcoord.integrate.simulate") > layer("natcoord.model.frozen")
