"""The public surface: `__all__` complete and sorted, public dataclasses keyword-only."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import subprocess
import sys

import donegate

PUBLIC_MODULES = [
    m.name
    for m in pkgutil.walk_packages(donegate.__path__, "donegate.")
    if not any(part.startswith("_") for part in m.name.split(".")[1:])
    and m.name not in {"donegate.__main__"}
    and not m.name.startswith("donegate.cli")
]


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2), name


def test_root_all_is_sorted_and_complete() -> None:
    assert list(donegate.__all__) == sorted(donegate.__all__, key=_isort_key)
    for name in donegate.__all__:
        assert hasattr(donegate, name), name
    public = {n for n in vars(donegate) if not n.startswith("_")}
    # every public name at the root is exported (submodules aside)
    missing = {
        n for n in public - set(donegate.__all__) if not inspect.ismodule(getattr(donegate, n))
    }
    assert not missing, missing


def test_every_public_module_declares_a_sorted_all() -> None:
    problems = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        if exported is None:
            problems.append(f"{name}: no __all__")
            continue
        if list(exported) != sorted(exported, key=_isort_key):
            problems.append(f"{name}: __all__ not sorted")
        problems.extend(f"{name}: {n} missing" for n in exported if not hasattr(module, n))
    assert not problems, problems


def test_public_dataclasses_are_keyword_only() -> None:
    offenders = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr)
            if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
                positional = [f.name for f in dataclasses.fields(obj) if f.init and not f.kw_only]
                if positional:
                    offenders.append(f"{name}.{attr}: {positional}")
    assert not offenders, offenders


def test_importing_donegate_imports_nothing_heavy() -> None:
    code = (
        "import sys, donegate\n"
        "bad = [m for m in ('openai', 'anthropic', 'google.genai', 'httpx', 'httpx2', 'sqlalchemy',"
        " 'celery', 'pydantic_ai', 'agents', 'langchain', 'langchain_core', 'langgraph',"
        " 'langchain_openai', 'temporalio',"
        " 'pydantic', 'jsonschema', 'yaml', 'cryptography', 'asyncio', 'rich', 'click',"
        " 'donegate.integrations', 'donegate.loop', 'donegate.harness') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_integrations_package_imports_no_framework_until_one_is_asked_for() -> None:
    code = (
        "import sys, donegate.integrations\n"
        "frameworks = ('pydantic_ai', 'agents', 'langchain', 'langchain_core', 'langgraph',"
        " 'langchain_openai', 'temporalio')\n"
        "before = [m for m in frameworks if m in sys.modules]\n"
        "import donegate.integrations.langchain\n"
        "print(before, 'langgraph' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True"]  # the langchain one does import its framework


def test_the_root_names_load_on_first_use_and_stay_the_functions() -> None:
    # the `donegate.run` module imported first (as the gate's runner does), then the function
    code = (
        "import sys, donegate.harness.runner, donegate\n"
        "from donegate import run, classify\n"
        "import donegate.run as by_path\n"
        "print(donegate.run is run is by_path, donegate.run.__module__, callable(classify),"
        " sys.modules['donegate.run'] is not run)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "donegate.run", "True", "True"]
    assert donegate.run.__module__ == "donegate.run" and callable(donegate.run)


def test_the_gate_is_reachable_from_the_root() -> None:
    from donegate.harness import runner, spec

    assert donegate.run_task is runner.run_task
    assert donegate.TaskSpec is spec.TaskSpec and donegate.load_task is spec.load_task
    assert donegate.DonegateError.__subclasses__()  # the root of the whole error tree
    assert issubclass(spec.TaskSpecError, donegate.DonegateError)


def test_every_task_spec_field_has_a_docstring() -> None:
    """A docstring under each field of TaskSpec and of every model a task file is made of."""
    import ast

    from pydantic import BaseModel

    from donegate.harness import spec, spec_checks

    missing, seen = [], 0
    for module in (spec, spec_checks):  # the task's models, and its checks'
        tree = ast.parse(inspect.getsource(module))
        for node in tree.body:
            cls = getattr(module, node.name, None) if isinstance(node, ast.ClassDef) else None
            if not (inspect.isclass(cls) and issubclass(cls, BaseModel)):
                continue
            for st, nxt in zip(node.body, [*node.body[1:], None], strict=True):
                named = isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                if named and st.target.id in cls.model_fields:  # type: ignore[union-attr]
                    seen += 1
                    documented = isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    if not documented:
                        missing.append(f"{node.name}.{st.target.id}")  # type: ignore[union-attr]
    assert seen > 30 and not missing, missing


def test_no_two_public_classes_share_a_name() -> None:
    """One fact, one type: an alias may keep an old name, but two classes may not wear one."""
    classes: dict[str, set[str]] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr)
            if inspect.isclass(obj):
                classes.setdefault(obj.__name__, set()).add(f"{obj.__module__}.{obj.__qualname__}")
    shared = {n: sorted(where) for n, where in classes.items() if len(where) > 1}
    assert not shared, shared
