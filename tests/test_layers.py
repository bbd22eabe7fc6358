"""course_lib's layers hold: no module imports from a layer above its own.

The order is written once, in course_lib/__init__.py's docstring (the line of subpackage names
joined by → and commas); this test reads it from there, parses every module of course_lib with
``ast`` (imports inside functions too) and fails on an import that goes up a layer or sideways
(two layers side by side, joined by a comma, do not import each other), unless
:data:`ALLOWED` names it with its reason.
"""
import ast
from pathlib import Path

import course_lib

PACKAGE = Path(course_lib.__file__).resolve().parent

# (importing module or subpackage, imported module or subpackage): why this import may go up
ALLOWED = {
    ("*", "ui.language"): "the language the notebook speaks: it stands on nothing else of course_lib, "
                          "so any layer may word its messages in the notebook's language",
    ("course_lib", "ui.hints"): "the package's own __init__ turns on the NameError hint at the first "
                                "import of course_lib in a notebook kernel",
    ("toys.derive_five_token", "figures"): "re-derives the five-token weights FROM the article's "
                                           "figures, so it reads their registry; figures sits above "
                                           "toys because its computers run the toy models",
    ("toys.derive_lab", "figures"): "re-derives the lab model's weights FROM the article's figures "
                                    "(same reason as derive_five_token)",
    ("toys.loss_last_bound", "figures"): "bounds the five-token model's last loss against the "
                                         "article's printed figure, read from the registry",
}


def layer_order() -> list[set[str]]:
    """course_lib/__init__.py's order: the line like ``data → tokens, model → …``, lowest first."""
    for line in (course_lib.__doc__ or "").splitlines():
        if line.count("→") >= 3:
            return [{name.strip() for name in step.split(",")} for step in line.strip().split("→")]
    raise AssertionError("course_lib/__init__.py's docstring has no line of layers joined by →")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "course_lib"


def imports(path: Path) -> set[str]:
    """Every course_lib module ``path`` imports, relative to the package (``decoding.probs``)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" and name != "course_lib" else name.split(".")[:-1]
    if name == "course_lib":
        package = []
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
            module = base + (node.module.split(".") if node.module else [])
            found |= named(module, node)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "course_lib":
            found |= named(node.module.split(".")[1:], node)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("course_lib").lstrip(".") for a in node.names
                      if a.name.split(".")[0] == "course_lib"}
    return {f for f in found if f}          # importing the package itself runs only its __init__


def named(module: list[str], node: ast.ImportFrom) -> set[str]:
    """``from <module> import a, b``: the module, or each of a, b that is a module of its own."""
    submodules = {".".join(module + [alias.name]) for alias in node.names
                  if (PACKAGE.joinpath(*module, alias.name + ".py")).is_file()
                  or (PACKAGE.joinpath(*module, alias.name, "__init__.py")).is_file()}
    return submodules or {".".join(module)}


def going_up() -> list[tuple[str, str, str]]:
    """(importer, imported, "above" or "beside") for every import into a layer not below the importer's."""
    rank = {name: i for i, step in enumerate(layer_order()) for name in step}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        for imported in sorted(imports(path)):
            own, theirs = importer.split(".")[0], imported.split(".")[0]
            if importer == "course_lib":                 # the package's __init__: above every layer
                found.append((importer, imported, "above"))
            elif own != theirs and rank[theirs] >= rank[own]:
                found.append((importer, imported, "beside" if rank[theirs] == rank[own] else "above"))
    return found


def excuse(importer: str, imported: str):
    """The key of :data:`ALLOWED` that allows this import, or None."""
    for who, what in ALLOWED:
        if who in ("*", importer, importer.split(".")[0]) and (imported == what or imported.startswith(what + ".")):
            return who, what
    return None


def test_the_layer_order_names_every_subpackage_once():
    named = [name for step in layer_order() for name in step]
    subpackages = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
                   if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert sorted(named) == sorted(subpackages), f"the order {named}, the package {sorted(subpackages)}"


def test_no_module_imports_from_a_higher_layer_unless_allowed():
    wrong = [f"{importer} imports {imported} ({imported.split('.')[0]} is {where} {importer.split('.')[0]})"
             for importer, imported, where in going_up() if not excuse(importer, imported)]
    assert not wrong, ("imports that go up a layer (course_lib/__init__.py gives the order; a needed "
                       "exception goes in ALLOWED with its reason):\n" + "\n".join(wrong))


def test_every_allowed_exception_is_needed_and_the_open_ones_import_nothing():
    used = {excuse(importer, imported) for importer, imported, _ in going_up()}
    assert set(ALLOWED) <= used, f"exceptions that no import needs any more: {set(ALLOWED) - used}"
    for who, what in ALLOWED:
        if who == "*":           # open to every layer: it must stand on nothing else of course_lib
            outside = {m for m in imports(PACKAGE / (what.replace(".", "/") + ".py"))
                       if m.split(".")[0] != what.split(".")[0]}
            assert not outside, f"{what} imports {outside}"


def test_the_import_parser_sees_relative_absolute_and_function_level_imports():
    """A guard for the parser itself: the three ways a module of course_lib imports another."""
    module = PACKAGE / "toys" / "lab.py"
    assert {"decoding.generate", "decoding.probs", "model", "tokens.vocab", "toys.spec"} <= imports(module)
    assert "data" in imports(PACKAGE / "grading" / "sandbox.py")      # inside a function: from ..data import
    assert "ui.hints" in imports(PACKAGE / "__init__.py")
