"""A joined profile in the overview: what it leads with (`measured_summary`), and the profiles
found beside a trace that none joins (`profiles_found`)."""

from __future__ import annotations

from rich.text import Text

from tcview.analysis.profile import RuntimeJoin
from tcview.report.profile import measured_lead
from tcview.text.safe import safe_line
from tcview.ui.hints import KeyNames, key_of

# The kinds of a profile's kernels (analysis.profile.KINDS); eager has none.
PROFILE_KIND_STYLE = {"triton": "green", "cpp": "blue", "extern": "cyan", "overhead": "yellow"}


def _lit(text: str, style: str = "") -> Text:
    return Text(safe_line(text), style=style)  # profile names are the profile's text


def measured_summary(join: RuntimeJoin, keys: KeyNames | None = None) -> list[Text]:
    """The overview's lead when a profile is joined: measured time, compiled share, top
    kernels (`report.profile.measured_lead`)."""
    lead = measured_lead(join)
    out = [Text(""), Text(lead.headline, style="bold green")]
    for time, where, what, name in lead.kernels:
        kind = what.split(" ", 1)[0]
        out.append(
            Text.assemble(
                f"  {time}  ",
                _lit(f"{where:<6} ", "bold"),
                _lit(f"{what[:20]:<20} ", PROFILE_KIND_STYLE.get(kind, "")),
                _lit(name),
            )
        )
    more = f"{lead.more} more kernels: " if lead.more else ""
    out.append(Text(f"  ({more}{key_of(keys, 'view.profile')} for the profile view)", style="dim"))
    return out


def profiles_found(paths: list[str]) -> list[Text]:
    """torch.profiler traces beside the trace, which --profile would join."""
    if not paths:
        return []
    out = [Text(""), Text("profiles here, not joined (open with --profile PATH)", style="bold")]
    out.extend(Text.assemble("  ", _lit(path)) for path in paths)
    return out
