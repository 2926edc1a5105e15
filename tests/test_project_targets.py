"""One spelling of a project target on every surface: ``demo``, a demo's name, ``demo:NAME``, a
GraphQL URL — in connect(), settings, the eval runner and CLI, and the gmchat CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gmchat_nb import connect, load_settings
from gmchat_nb.core.project import demo
from gmchat_nb.core.project.targets import DEMO_NAMES, demo_name
from gmchat_nb.core.settings import ChatConfigurationError
from gmchat_nb.evals.runner import open_project

ROOT = Path(__file__).resolve().parents[1]


def test_the_targets_name_exactly_the_demos_that_exist() -> None:
    assert DEMO_NAMES == demo.DEMO_NAMES


@pytest.mark.parametrize(
    ("target", "name"),
    [
        ("demo", "inventory"),
        ("inventory", "inventory"),
        ("demo:inventory", "inventory"),
        ("demo:large", "large"),
        ("toy", "toy"),
        ("demo:nope", None),
        ("http://x/graphql/", None),
        (3, None),
    ],
)
def test_demo_names(target: object, name: str | None) -> None:
    assert demo_name(target) == name


@pytest.mark.parametrize("target", ["demo", "demo:large", "large"])
async def test_connect_and_the_eval_runner_agree(target: str) -> None:
    expected = "Part" if demo_name(target) == "inventory" else None
    for opened in (await connect(target), await open_project(target)):
        try:
            assert opened.label == f"demo:{demo_name(target)}"
            if expected:
                assert expected in opened.managers
        finally:
            await opened.aclose()


def test_settings_take_the_same_targets_and_name_the_key_otherwise() -> None:
    assert load_settings(None, project="demo:toy").project == "demo:toy"
    with pytest.raises(ChatConfigurationError) as refused:
        load_settings(None, project="demo:nope")
    assert "project" in str(refused.value) and "demo:NAME" in str(refused.value)


def test_the_eval_cli_takes_project_demo(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "list_parts",
                    "conversation": [{"user": "Which parts are there?"}],
                    "expectations": {"tool_calls": [{"name": "query"}]},
                }
            ]
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", "--dataset", str(cases), "--project", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert run.returncode in (0, 1), run.stderr  # scored (pass or fail), not a usage error
    assert "list_parts" in run.stdout and "unknown demo" not in run.stderr


def test_gmchat_tool_takes_demo_colon_name() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "gmchat_nb.cli",
            "tool",
            "search_managers",
            '{"query": "vehicles"}',
            "--project",
            "demo:large",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)[0]["manager"] == "FleetVehicle"
