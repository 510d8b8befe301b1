"""``--profile P`` of `open`, `summary` and `show`: read a torch.profiler trace once and join it
to the model. A run directory that holds a profile (`tcview run --profile`) brings its own."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tcview.text.safe import safe_line

if TYPE_CHECKING:
    from tcview.model.objects import Model
    from tcview.report.profile import Joined

PROFILE_HELP = (
    "a torch.profiler trace (export_chrome_trace .json/.json.gz, or a tensorboard_trace_handler"
    " folder, merged): each kernel's measured time, joined to its compile"
)


def add_profile_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", metavar="P", help=PROFILE_HELP)


class ProfileMissing(Exception):
    """--profile named something that is not a profile (said on stderr already)."""


def joined(model: Model, input_path: str | None, given: str | None) -> Joined | None:
    """The profile joined to `model`, None without one; ProfileMissing when --profile names
    no profile (said on stderr)."""
    # Here, not at the top: every command's parser reads this module for its option.
    from tcview.ingest.profile import ProfileError, profile_path

    path = profile_path(input_path, given)
    if path is None:
        return None
    from tcview.report.profile import join_at  # (only with a profile to join)
    from tcview.run.gpu import datasheet_peak

    try:
        return join_at(model, path, given or str(path), datasheet_peak)
    except (ProfileError, OSError) as exc:
        print(f"tcview: --profile {safe_line(str(path))}: {safe_line(str(exc))}", file=sys.stderr)
        raise ProfileMissing from None
