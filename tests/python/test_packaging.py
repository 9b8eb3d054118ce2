"""Packaging: the imported weightloader is a built one (the CMake build tree's or an installed
wheel's) with py.typed and the type stubs beside it; the stubs cover the public API and agree with
the runtime signatures; and, opt-in (WL_TEST_PIP_INSTALL=1, minutes: it builds the C++ library),
`pip install --no-build-isolation` of the repository into a fresh venv works offline."""
import ast
import importlib
import inspect
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import weightloader

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "python" / "weightloader"
PACKAGE = pathlib.Path(weightloader.__file__).resolve().parent
# Public modules: every python/weightloader/*.py whose name does not start with "_".
PUBLIC_MODULES = sorted(p.stem for p in SOURCE.glob("*.py") if not p.stem.startswith("_"))


def stub(module):
    """The parsed stub of weightloader.<module> ("__init__" for the package) beside the import."""
    return ast.parse((PACKAGE / f"{module}.pyi").read_text(), filename=f"{module}.pyi")


def bound_names(tree):
    """Top-level names a stub defines or re-exports."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def stub_all(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def test_the_imported_package_is_built_not_the_source_folder():
    assert PACKAGE != SOURCE.resolve(), "python/weightloader has no _core: put build/python on PYTHONPATH"
    core = pathlib.Path(weightloader._core.__file__).resolve()
    assert core.parent == PACKAGE and core.name.startswith("_core") and core.suffix == ".so"
    build_tree = (PACKAGE.parents[1] / "CMakeCache.txt").is_file()  # <build>/python/weightloader
    installed = any(PACKAGE.parent.glob("weightloader-*.dist-info"))
    assert build_tree or installed, f"{PACKAGE} is neither a CMake build tree's nor an installed package"


@pytest.mark.parametrize("module", ["__init__", *PUBLIC_MODULES])
def test_py_typed_and_a_stub_for_every_public_module_sit_beside_it(module):
    assert (PACKAGE / "py.typed").is_file()
    assert (SOURCE / f"{module}.pyi").is_file(), f"python/weightloader/{module}.py has no {module}.pyi stub"
    assert (PACKAGE / f"{module}.pyi").is_file(), f"{PACKAGE} lacks {module}.pyi (rebuild or reinstall)"
    stub(module)  # parses


def test_every_name_in_all_exists_and_is_in_the_stubs():
    tree = stub("__init__")
    missing = [n for n in weightloader.__all__ if not hasattr(weightloader, n)]
    assert not missing, f"weightloader.__all__ names what the package lacks: {missing}"
    unstubbed = sorted(set(weightloader.__all__) - bound_names(tree))
    assert not unstubbed, f"__init__.pyi lacks {unstubbed}"
    assert sorted(stub_all(tree) or []) == sorted(weightloader.__all__), "__init__.pyi's __all__ differs"


def test_the_stubs_import_from_each_other_only_what_they_define():
    stubs = {p.stem: stub(p.stem) for p in PACKAGE.glob("*.pyi")}
    errors = []
    for module, tree in stubs.items():
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module is None:  # from . import x
                    errors += [f"{module}.pyi: no {a.name}.pyi" for a in node.names if a.name not in stubs]
                elif node.module not in stubs:
                    errors.append(f"{module}.pyi: no {node.module}.pyi")
                else:
                    names = bound_names(stubs[node.module])
                    errors += [f"{module}.pyi: {node.module}.pyi has no {a.name}" for a in node.names
                               if a.name not in names]
    assert not errors, "\n".join(errors)


def test_the_extension_stub_names_only_what_the_extension_has():
    # _core.pyi is partial (a module __getattr__ types the rest as Any): stale names are the error.
    runtime = {n for n in dir(weightloader._core) if not n.startswith("_")}
    stubbed = {n.name for n in stub("_core").body if isinstance(n, (ast.ClassDef, ast.FunctionDef))
               and not n.name.startswith("_")}
    assert stubbed <= runtime, f"_core.pyi names what the extension lacks: {sorted(stubbed - runtime)}"


# --- the stubs against the runtime: names, bases, parameters, defaults -------------------------

def stub_params(fn):
    """[(name, kind, default node or None)] of a stub function, kinds as inspect spells them."""
    a, out = fn.args, []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(positional, defaults)):
        out.append((arg.arg, "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD", d))
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", None))
    out += [(arg.arg, "KEYWORD_ONLY", d) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", None))
    return out


def decorators(fn):
    return {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in fn.decorator_list}


def check_function(where, fn, runtime):
    """Differences between a stub def and the runtime callable, as messages."""
    params = {p.name: p for p in inspect.signature(runtime).parameters.values()}
    stubbed = stub_params(fn)
    if "overload" in decorators(fn):  # one overload of several: its names must exist, no more
        return [f"{where}: overload parameter '{n}' is not in the runtime signature"
                for n, _, _ in stubbed if n not in params and "VAR_KEYWORD" not in
                {p.kind.name for p in params.values()}]
    errors = []
    runtime_kinds = {p.kind.name for p in params.values()}
    order = [(n, k) for n, k, _ in stubbed if k != "KEYWORD_ONLY"]
    want = [(p.name, p.kind.name) for p in params.values() if p.kind.name != "KEYWORD_ONLY"]
    if order != want:
        errors.append(f"{where}: stub parameters {order}, runtime {want}")
    for name, kind, default in stubbed:
        p = params.get(name)
        if p is None:
            if kind != "KEYWORD_ONLY" or "VAR_KEYWORD" not in runtime_kinds:
                errors.append(f"{where}: stub parameter '{name}' is not in the runtime signature")
            continue
        if kind in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            continue
        has_default = p.default is not inspect.Parameter.empty
        if has_default != (default is not None) and not (kind == "KEYWORD_ONLY" and default is not None):
            errors.append(f"{where}: '{name}' has {'a' if has_default else 'no'} default at runtime")
        elif has_default and isinstance(default, ast.Constant) and default.value is not Ellipsis \
                and default.value != p.default:
            errors.append(f"{where}: '{name}' defaults to {p.default!r} at runtime, {default.value!r} in the stub")
    return errors


def base_names(node):
    out = []
    for b in node.bases:
        b = b.value if isinstance(b, ast.Subscript) else b
        out.append(b.id if isinstance(b, ast.Name) else getattr(b, "attr", ast.unparse(b)))
    return out


def check_class(where, node, cls):
    errors = []
    bases = base_names(node)
    if not {"NamedTuple", "TypedDict"} & set(bases) and bases != [b.__name__ for b in cls.__bases__] \
            and not (bases == [] and cls.__bases__ == (object,)):
        errors.append(f"{where}: stub bases {bases}, runtime {[b.__name__ for b in cls.__bases__]}")
    members = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            members.add(item.name)
            raw = inspect.getattr_static(cls, item.name, None)
            if raw is None:
                errors.append(f"{where}.{item.name} is not in the runtime class")
            elif "property" in decorators(item):
                if not isinstance(raw, property):
                    errors.append(f"{where}.{item.name} is a property in the stub only")
            elif "classmethod" in decorators(item) and not isinstance(raw, classmethod):
                errors.append(f"{where}.{item.name} is a classmethod in the stub only")
            elif callable(raw) or isinstance(raw, (classmethod, staticmethod)):
                func = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
                if not (inspect.isbuiltin(func) or isinstance(func, type(object.__init__))):
                    errors += check_function(f"{where}.{item.name}", item, func)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            members.update(t.id for t in item.targets if isinstance(t, ast.Name))
    # Public names the class itself adds (an override of an inherited attribute needs no stub).
    public = {n for n in vars(cls) if not n.startswith("_") and not any(hasattr(b, n) for b in cls.__bases__)}
    errors += [f"{where}.{n} is missing from the stub" for n in sorted(public - members)]
    return errors


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_each_stub_agrees_with_its_module(module):
    runtime = importlib.import_module(f"weightloader.{module}")
    tree = stub(module)
    errors = []
    stubbed = set()
    for node in tree.body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)) or node.name.startswith("_"):
            continue
        stubbed.add(node.name)
        obj = getattr(runtime, node.name, None)
        where = f"{module}.{node.name}"
        if obj is None:
            errors.append(f"{where} is in the stub only")
        elif isinstance(node, ast.ClassDef):
            errors += check_class(where, node, obj) if inspect.isclass(obj) else [f"{where} is not a class"]
        else:
            errors += check_function(where, node, obj)
    own = {n for n, v in vars(runtime).items() if not n.startswith("_") and getattr(v, "__module__", None) ==
           runtime.__name__ and (inspect.isclass(v) or inspect.isfunction(v))}
    errors += [f"{module}.{n} is missing from the stub" for n in sorted(own - stubbed)]
    if hasattr(runtime, "__all__") and sorted(stub_all(tree) or []) != sorted(runtime.__all__):
        errors.append(f"{module}.pyi's __all__ differs from the module's")
    assert not errors, "\n".join(errors)


def test_the_version_is_the_cmake_project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(\s*weightloader\s+VERSION\s+([0-9.]+)", text).group(1)
    assert weightloader.__version__ == version


# --- opt-in: pip install of a read-only copy of the repository into a fresh venv, offline ----------

@pytest.mark.skipif(os.environ.get("WL_TEST_PIP_INSTALL") != "1",
                    reason="builds the C++ library with pip (minutes); set WL_TEST_PIP_INSTALL=1 to run")
def test_pip_installs_a_read_only_checkout_into_a_venv_offline(tmp_path, stories):
    # The tracked files, as a checkout has them, made read-only: the build must go elsewhere.
    source = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        if (ROOT / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, source / rel)
    subprocess.run(["chmod", "-R", "a-w", str(source)], check=True)
    before = sorted(source.rglob("*"))  # root ignores the modes: nothing may appear either
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["WL_PIP_BUILD_DIR"] = str(tmp_path / "pip-build")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
        python = venv / "bin" / "python"
        out = subprocess.run([str(python), "-m", "pip", "install", "-v", "--no-build-isolation", "--no-index", str(source)],
                             env=env, cwd=tmp_path, timeout=3600, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert "Building CXX object" in out.stdout + out.stderr, "pip -v shows no CMake progress"
        script = ("import os, sys, weightloader as wl\n"
                  "d = os.path.dirname(wl.__file__)\n"
                  "assert d.startswith(sys.prefix), d\n"
                  "assert os.path.isfile(os.path.join(d, 'py.typed')) and os.path.isfile(os.path.join(d, '__init__.pyi'))\n"
                  "print(wl.__version__, len(wl.LocalWeightLoader().get_weights(sys.argv[1])))\n")
        out = subprocess.run([str(python), "-c", script, str(stories)], check=True, env=env, cwd=tmp_path,
                             capture_output=True, text=True)
        assert out.stdout.split()[-2:] == [weightloader.__version__, "47"], out.stdout
        assert sorted(source.rglob("*")) == before, "the install wrote into the source tree"
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(source)], check=True)
