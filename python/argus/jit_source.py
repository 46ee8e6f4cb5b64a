"""Loads the @triton.jit kernels of an installed package's source file without importing it.

The geak-eval TritonBench-G files import torch and run their own tests at import time
(``result_gold = test_...()`` at the bottom), so they are not imported. The file is parsed with
``ast`` instead, and only its top-level ``import triton...`` / ``from triton...`` statements,
simple constant assignments and ``@triton.jit`` definitions (plus, on request, the named plain
functions that launch them, e.g. ``flash_attn_triton``) are executed, compiled *with the file's
own path and line numbers*: ``inspect.getsource``, which ``triton.jit`` reads, returns the
unmodified text of the installed file, so Triton compiles exactly the package's kernel.

``tests/data/triton/make_package_fixtures.py`` loads the kernels of the checked-in PTX/TTGIR
fixtures with it too. ``launchers``, which the fixtures do not use: a launcher's ``def`` only
binds the function; its body runs when the script calls it, with the globals given in
``extra_globals`` (``torch``) in place of the file's own ``import torch``.
"""

import ast
import importlib.util
import os
import types


def package_file(package, relpath):
    """The path of ``relpath`` inside the installed ``package``, or None when it is not installed.

    ``importlib.util.find_spec`` of a top-level package finds it without executing its
    ``__init__`` (geak_eval's imports openai, pandas, ...)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], relpath)


def _is_triton_import(node):
    if isinstance(node, ast.Import):
        return all(a.name == "triton" or a.name.startswith("triton.") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module == "triton" or node.module.startswith("triton."))
    return False


def _is_jit_def(node):
    if not isinstance(node, ast.FunctionDef):
        return False
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        if ast.unparse(d) in ("triton.jit", "jit"):
            return True
    return False


def _is_constant_assign(node, known):
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return False
    names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    return names <= known


def load_jit_functions(path, module_name, extra_globals=None, launchers=()):
    """A module holding the Triton imports, constant assignments and @triton.jit functions of
    ``path`` (and the plain functions named in ``launchers``), executed from the file's own text
    at its own line numbers."""
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    known = {"tl", "triton", "math"} | set(extra_globals or {})
    body, found = [], set()
    for node in tree.body:
        if _is_triton_import(node) or _is_jit_def(node):
            body.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name in launchers:
            body.append(node)
            found.add(node.name)
        elif _is_constant_assign(node, known):
            body.append(node)
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                known |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    missing = set(launchers) - found
    if missing:
        raise LookupError(f"{path} defines no top-level function {', '.join(sorted(missing))}")
    module = types.ModuleType(module_name)
    module.__file__ = path
    module.__dict__.update(extra_globals or {})
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), module.__dict__)
    return module
