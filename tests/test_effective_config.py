"""The config shown for a compile is the one it ran with: mode= and options= patch Inductor's
config for the compile only, so compilation_metrics' inductor_config (the global one) says
max_autotune false under mode="max-autotune-no-cudagraphs"; the compile's FX graph cache details
record the patched values (fixtures autotune_train, an H100 run, and train_backward, CPU)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import TCVIEW_CLI, find_as
from ui_helpers import REPO

from tcview.analysis.compile_config import compile_config
from tcview.ingest.source import load_source
from tcview.model.objects import Compile


def config_rows(run: Path, cid: str) -> dict[str, tuple[str, str]]:
    out = subprocess.run(
        [*TCVIEW_CLI, "show", "--json", str(run), cid],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (section,) = [s for s in json.loads(out)["sections"] if s["heading"] == "config"]
    return {r["label"]: (r["value"], r["tag"]) for r in section["rows"] if r["label"]}


def test_a_mode_s_settings_are_shown_and_marked(fixture_runs: Path) -> None:
    rows = config_rows(fixture_runs / "autotune_train", "0/0")
    mode = 'set by mode="max-autotune-no-cudagraphs"; global false'
    assert rows["inductor.max_autotune"] == (f"true  ({mode})", "config:changed")
    assert rows["inductor.coordinate_descent_tuning"] == (f"true  ({mode})", "config:changed")
    assert rows["inductor.triton.cudagraphs"] == ("false", "config")


def test_options_are_shown_and_marked(fixture_runs: Path) -> None:
    run = fixture_runs / "train_backward"
    rows = config_rows(run, "1/0")
    assert rows["inductor.epilogue_fusion"] == (
        "false  (set by options=; global true)",
        "config:changed",
    )
    assert rows["inductor.shape_padding"][0] == "false  (set by options=; global true)"
    model = load_source(str(run))
    plain = compile_config(find_as(model, "0/0", Compile))
    assert plain.effective and plain.changed == {} and plain.mode is None
