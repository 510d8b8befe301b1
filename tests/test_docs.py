"""The documentation: README.md and docs/ hold what the code makes (the CLI reference, the
finding kinds, the `summary --json` schema), and their links lead somewhere."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REPO, RUNS, SAMPLES, TCVIEW_CLI
from extract import extract

from tcview.analysis.rules import KINDS

DOCS = REPO / "docs"
SCHEMA = DOCS / "reference" / "summary.schema.json"
README_TEST_COMMAND = "pip install -e '.[test]' && python -m pytest"


def _script(name: str) -> Any:  # Any: a module loaded from scripts/, which is no package
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short_and_keeps_the_test_command() -> None:
    """Issue 40: 150 lines or fewer; `.ci/run` runs "the README's test command"."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert README_TEST_COMMAND in readme
    assert README_TEST_COMMAND.replace("python -m", "python3 -m") in (
        REPO / ".ci" / "run"
    ).read_text(encoding="utf-8").replace("python3 -m pip", "pip")


def test_the_cli_reference_is_up_to_date() -> None:
    """docs/reference/cli.md is what `python scripts/gen_cli_docs.py` makes of the parser."""
    gen = _script("gen_cli_docs")
    assert (DOCS / "reference" / "cli.md").read_text(encoding="utf-8") == gen.render(), (
        "docs/reference/cli.md is stale: run python scripts/gen_cli_docs.py"
    )


def test_every_command_has_a_reference_section() -> None:
    from tcview.commands.cli import COMMANDS

    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"## `tcview {name}`" in page


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    names = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "CHANGELOG.md"]
    return [REPO / n for n in names if (REPO / n).exists()] + sorted(DOCS.rglob("*.md"))


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a Markdown page's headings (lower case, punctuation dropped,
    spaces made hyphens)."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_lead_to_files_and_headings(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = page.parent / path if path else page
        missing = not linked.exists()
        if missing or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_the_schema_names_every_finding_kind() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    kinds = schema["$defs"]["finding"]["properties"]["kind"]["enum"]
    assert kinds == [k.value for k in KINDS]


def _validate(instance: Any, schema: dict[str, Any]) -> list[str]:
    """The schema's errors on `instance` (jsonschema when it is installed; else the subset of
    JSON Schema that summary.schema.json uses, checked here)."""
    try:  # imported by name: it has no type stubs, and need not be installed
        jsonschema: Any = importlib.import_module("jsonschema")
    except ImportError:
        return _mini_validate(instance, schema, schema, "$")
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
    "integer": int,
    "number": (int, float),
}


def _is(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def _mini_validate(value: Any, node: dict[str, Any], root: dict[str, Any], at: str) -> list[str]:
    if "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _mini_validate(value, target, root, at)
    errors: list[str] = []
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_is(value, t) for t in types):
            return [f"{at}: {value!r:.60} is not {types}"]
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{at}: {value!r} not in {node['enum']}")
    if "const" in node and value != node["const"]:
        errors.append(f"{at}: {value!r} != {node['const']!r}")
    if "oneOf" in node:
        ok = [s for s in node["oneOf"] if not _mini_validate(value, s, root, at)]
        if len(ok) != 1:
            errors.append(f"{at}: matches {len(ok)} of oneOf")
    if "pattern" in node and isinstance(value, str) and not re.search(node["pattern"], value):
        errors.append(f"{at}: {value!r} does not match {node['pattern']}")
    if "minimum" in node and _is(value, "number") and value < node["minimum"]:
        errors.append(f"{at}: {value} < {node['minimum']}")
    if isinstance(value, dict):
        props = node.get("properties", {})
        errors += [f"{at}: no {k!r}" for k in node.get("required", []) if k not in value]
        for key, item in value.items():
            if "propertyNames" in node:
                errors += _mini_validate(key, node["propertyNames"], root, f"{at}.{key}")
            if key in props:
                errors += _mini_validate(item, props[key], root, f"{at}.{key}")
            elif node.get("additionalProperties") is False:
                errors.append(f"{at}: {key!r} is not in the schema")
            elif isinstance(node.get("additionalProperties"), dict):
                errors += _mini_validate(item, node["additionalProperties"], root, f"{at}.{key}")
    if isinstance(value, list):
        if "maxItems" in node and len(value) > node["maxItems"]:
            errors.append(f"{at}: more than {node['maxItems']} items")
        if node.get("uniqueItems") and len({json.dumps(v) for v in value}) != len(value):
            errors.append(f"{at}: repeated items")
        if "items" in node:
            for i, item in enumerate(value):
                errors += _mini_validate(item, node["items"], root, f"{at}[{i}]")
    return errors


def _summary_json(*args: str) -> Any:
    done = subprocess.run(
        [*TCVIEW_CLI, "summary", "--json", "-q", "--no-cache", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# Every sample trace, and fixtures that fill the keys the samples leave empty: a crash, a
# TORCH_LOGS capture, recompiles on dtype, a warm cache, a measured profile, several ranks.
INPUTS = [
    *sorted(p.relative_to(REPO).as_posix() for p in SAMPLES.iterdir() if p.is_dir()),
    "tests/fixtures/findings/crash",
    "tests/fixtures/findings/warm_cache",
    "tests/fixtures/recompiles/dtype",
    "tests/fixtures/torch_logs_small.txt",
]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("path", INPUTS)
def test_summary_json_follows_its_schema(path: str, schema: dict[str, Any]) -> None:
    assert _validate(_summary_json(path), schema) == []


def test_summary_json_with_a_profile_follows_its_schema(schema: dict[str, Any]) -> None:
    prof = FIXTURES / "profile"
    data = _summary_json(str(prof / "trace"), "--profile", str(prof / "profile.json.gz"))
    assert "profile" in data
    assert _validate(data, schema) == []


@pytest.mark.parametrize("run", ["ranks_diverge", "crash_ranks"])
def test_summary_json_of_several_ranks_follows_its_schema(
    run: str, schema: dict[str, Any], tmp_path: Path
) -> None:
    with tarfile.open(RUNS / f"{run}.tar.xz") as tar:
        extract(tar, tmp_path)
    data = _summary_json(str(tmp_path / run))
    assert len(data["ranks"]) > 1
    assert _validate(data, schema) == []


def test_the_mini_validator_agrees_on_the_samples(schema: dict[str, Any]) -> None:
    """The fallback validator (for where jsonschema is not installed) sees what it should."""
    data = _summary_json("sample_traces/cpu_breaks_recompiles")
    assert _mini_validate(data, schema, schema, "$") == []
    data["surprise"] = 1
    data["compiles"] = -1
    data["findings"][0]["kind"] = "no_such_kind"
    errors = _mini_validate(data, schema, schema, "$")
    assert any("surprise" in e for e in errors)
    assert any("$.compiles" in e for e in errors)
    assert any("no_such_kind" in e for e in errors)


DIFF_SCHEMA = DOCS / "reference" / "diff.schema.json"

# Run pairs whose diff fills the keys: new and gone frames and kernels, a new graph break and a
# changed kernel (diff_a → diff_b), a cache key that changed (warm_cache cold → warm).
DIFF_PAIRS = [
    ("sample_traces/cpu_breaks_recompiles", "sample_traces/gpu_tinyblock"),
    ("sample_traces/gpu_tinyblock", "sample_traces/gpu_triton_user"),
    ("tests/fixtures/findings/warm_cache/cold", "tests/fixtures/findings/warm_cache/warm"),
    ("tests/fixtures/findings/crash", "tests/fixtures/recompiles/dtype"),
    ("{runs}/diff_a", "{runs}/diff_b"),
    ("{runs}/diff_b", "{runs}/diff_a"),
]


def _diff_json(a: str, b: str) -> Any:
    done = subprocess.run(
        [*TCVIEW_CLI, "diff", "--json", a, b], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def diff_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DIFF_SCHEMA.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize(("a", "b"), DIFF_PAIRS)
def test_diff_json_follows_its_schema(
    a: str, b: str, diff_schema: dict[str, Any], fixture_runs: Path
) -> None:
    data = _diff_json(a.format(runs=fixture_runs), b.format(runs=fixture_runs))
    assert _validate(data, diff_schema) == []
    assert _mini_validate(data, diff_schema, diff_schema, "$") == []


def test_diff_json_has_no_sentinel_and_both_values_of_a_changed_key(
    diff_schema: dict[str, Any],
) -> None:
    data = _diff_json(*DIFF_PAIRS[2])
    (change,) = data["cache_key_changes"]
    (component,) = change["components"]
    assert component["name"] == "inductor_config[max_fusion_size]"
    assert component["a"] and component["b"] and component["a"] != component["b"]
    assert data["kernels"] == [] and data["unchanged_kernels"] == 1
    assert "fx_graph_hit" in data["cache"] and "entire_frame" in data["phases_s"]
    # What the schema refuses: the old sentinel item, and a key with a space.
    data["kernels"].append({"status": "same", "count": 1})
    data["cache"]["fx_graph hit"] = {"a": 0, "b": 1}
    for errors in (
        _validate(data, diff_schema),
        _mini_validate(data, diff_schema, diff_schema, "$"),
    ):
        assert any("kernels" in e for e in errors), errors
        assert any("fx_graph hit" in e for e in errors), errors
