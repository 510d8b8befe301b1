"""A profile joined to a model, as data (`summary --json`'s ``profile``) and as a detail
(`tcview show PATH profile --profile P`, the app): top kernels by measured time with their
compile and kind, time per compile, frame and user line, compiled against eager, idle gaps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcview.analysis.profile import KINDS, KernelTime, RuntimeJoin, join_profile
from tcview.analysis.provenance import torch_version, tracking_hint
from tcview.ingest.profile import Profile, load_profile
from tcview.model.keys import same
from tcview.model.objects import Compile, Kernel, Model
from tcview.report.detail import Detail, Section

PROFILE_ITEM = "profile"  # `tcview show PATH profile --profile P`
TOP_KERNELS = 25  # rows of the text report (the JSON has them all)
TOP_ROWS = 10  # rows of its other tables
COMPILE_WIDTH = 8  # the compile column; longer (ambiguous) labels are counted there
CPU_NOTE = (
    "A CPU profile has no kernel events: the kernels here are the CPU ops that call no other"
    " op (Inductor's C++ kernels, aten ops, ranges that ran no op). Time an op spends between"
    " the ops it calls is not counted. 'overhead': torch.compile's own ranges around a"
    " compiled graph (guards: TorchDynamo Cache Lookup; AOTAutograd's wrappers), not in the"
    " compiled share."
)
CPP_PROFILE_HINT = (
    "No C++ kernel of this trace shows in the profile: Inductor records them only with"
    " torch._inductor.config.cpp.enable_kernel_profile = True."
)


def fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.2f}s"
    if us >= 1e3:
        return f"{us / 1e3:.2f}ms"
    return f"{us:.1f}µs"


def _r(x: float) -> float:
    return round(x, 3)


def _files(profile: Profile) -> list[dict[str, Any]]:
    return [
        {"path": str(f.path), "events": f.events, "bad_events": f.bad, "steps": f.steps}
        for f in profile.files
    ]


def kernel_json(row: KernelTime, peak_gb_s: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": row.name,
        "compile": row.compile_label,
        "kind": row.kind,
        "calls": row.calls,
        "time_us": _r(row.time_us),
        "share": round(row.share, 6),
        "op": row.op,
    }
    if row.ambiguous:
        out["ambiguous"] = True
    if row.event_name is not None:
        out["profile_name"] = row.event_name
    if row.gb_s is not None:
        out["gb_s"] = round(row.gb_s, 1)
        if peak_gb_s:
            out["of_peak"] = round(row.gb_s / peak_gb_s, 4)
    return out


def profile_json(join: RuntimeJoin, profile: Profile, peak: Peak | None = None) -> dict[str, Any]:
    """``summary --json``'s ``profile``: times in µs as the profile has them; ``gpu_time_us``
    the sum of every kernel event (on CPU: of the ops that call no other op)."""
    total = join.total_us or 1.0
    peak_gb_s = peak[0] if peak else None
    return {
        "source": profile.display,
        "files": _files(profile),
        "device": join.device,
        "device_name": profile.device_name,
        "gpu_time_us": _r(join.total_us),
        "compiled_share": round(join.compiled_share, 6),
        "time_by_kind_us": {k: _r(join.time_of((k,))) for k in KINDS},
        "kernel_events": join.events,
        "unmatched_generated": join.unmatched,
        "ambiguous_events": join.ambiguous,
        "kernels": [kernel_json(r, peak_gb_s) for r in join.rows],
        "eager_ops": [
            {"op": o.op, "calls": o.calls, "time_us": _r(o.time_us), "share": round(o.share, 6)}
            for o in join.eager_ops
        ],
        "compiles": [
            {
                "compile": c.id_label,
                "frame": c.frame.label if c.frame is not None else None,
                "time_us": _r(t),
                "share": round(t / total, 6),
            }
            for c, t in join.by_compile
        ],
        "frames": [
            {"frame": f, "time_us": _r(t), "share": round(t / total, 6)} for f, t in join.by_frame
        ],
        "lines": [
            {"line": ln.where, "time_us": _r(t), "share": round(t / total, 6), "kernels": ks}
            for ln, t, ks in join.by_line
        ],
        "idle": {
            "window_us": _r(join.idle.window_us),
            "busy_us": _r(join.idle.busy_us),
            "idle_us": _r(join.idle.idle_us),
            "gaps": [{"at_us": _r(at), "us": _r(us)} for at, us in join.idle.gaps],
        },
        "peak_gb_s": list(peak) if peak else None,
        "steps": join.steps,
        "problems": profile.problems,
    }


def _events(n: int) -> str:
    return f"{n} kernel event{'s' if n != 1 else ''}"


def notes(
    join: RuntimeJoin, profile: Profile, model_has_cpp: bool, lines_hint: str = ""
) -> list[str]:
    """What the reader must know to trust the numbers."""
    out = list(profile.problems)
    if profile.bad_events:
        out.append(f"{profile.bad_events} events of the profile were not JSON objects: skipped.")
    if join.device == "cpu":
        out.append(CPU_NOTE)
        if model_has_cpp and not join.time_of(("cpp",)):
            out.append(CPP_PROFILE_HINT)
    if join.replayed:
        copies = join.time_of(("overhead",))
        out.append(
            f'{_events(join.replayed)} ran in CUDA graph replays (mode="reduce-overhead"):'
            " the op column says 'CUDA graph', and each is joined to the compile whose graph"
            " was captured."
            + (
                f" 'overhead' ({fmt_us(copies)}): the copies of inputs into the graphs' static"
                " buffers before each replay, not in the compiled share."
                if copies
                else ""
            )
        )
    if join.unmatched:
        out.append(
            f"{_events(join.unmatched)}: a name Inductor generates (triton_…, cpp_…)"
            " that no compile of this trace defines: the profile may come from another run,"
            " or the trace lacks those compiles."
        )
    if join.ambiguous:
        out.append(
            f"{_events(join.ambiguous)}: a name that several compiles define (a recompile"
            " reuses its kernels' names), and the CPU side of the profile did not say which"
            " one ran (no Torch-Compiled Region around the launch: was the profile recorded"
            " without ProfilerActivity.CPU?): their rows list the candidates."
        )
    if not join.events:
        out.append("The profile has no kernel events.")
    if lines_hint and not join.by_line and any(r.kernel is not None for r in join.rows):
        out.append(f"No user line is known for the kernels that ran: {lines_hint}.")
    return out


def _kernel_line(row: KernelTime, peak: Peak | None) -> str:
    where = row.compile_label or "-"
    if len(where) > COMPILE_WIDTH:
        where = f"one of {len(row.candidates)}"
    what = row.kind if row.op in (None, row.name) else f"{row.kind} {row.op}"
    text = (
        f"{fmt_us(row.time_us):>9} {row.share:6.1%} {row.calls:>6}  {where:<8} {what[:28]:<28}"
        f"  {row.name}"
    )
    if row.gb_s is not None:
        text += f"  {row.gb_s:,.0f} GB/s"
        if peak:
            text += f" ({row.gb_s / peak[0]:.0%} of peak)"
    return text


def _table(section: Section, rows: Sequence[tuple[float, str]], total: float, n: int) -> None:
    for t, label in rows[:n]:
        section.lines.append(f"{fmt_us(t):>9} {t / (total or 1):6.1%}  {label}")
    if len(rows) > n:
        section.lines.append(f"… {len(rows) - n} more")


def profile_detail(
    join: RuntimeJoin,
    profile: Profile,
    model_has_cpp: bool = False,
    peak: Peak | None = None,
    lines_hint: str = "",
    top: int = TOP_KERNELS,
) -> Detail:
    """The whole join as one detail."""
    unit = join.unit
    detail = Detail("profile", f"profile {profile.display}", id=PROFILE_ITEM)
    head = detail.section()
    if len(profile.files) > 1:
        steps = f", steps {', '.join(map(str, join.steps))}" if join.steps else ""
        head.row("files", f"{len(profile.files)} merged{steps}")
    if profile.device_name:
        head.row("device", profile.device_name)
    head.row(f"{unit} time", f"{fmt_us(join.total_us)} in {join.events} kernel events")
    parts = [f"{k} {join.time_of((k,)) / (join.total_us or 1):.1%}" for k in KINDS]
    head.row("compiled", f"{join.compiled_share:.1%}  ({', '.join(parts)})")
    idle = join.idle
    if idle.window_us:
        head.row(
            "idle",
            f"{fmt_us(idle.idle_us)} of a {fmt_us(idle.window_us)} window"
            f" ({idle.idle_us / idle.window_us:.0%})",
        )
    if peak:
        head.row("peak", f"{peak[0]:,.0f} GB/s ({peak[1]})")
    top_s = detail.section(f"Kernels by measured {unit} time")
    top_s.lines.append(f"{'time':>9} {'share':>6} {'calls':>6}  {'compile':<8} {'kind':<28}  name")
    top_s.lines.extend(_kernel_line(r, peak) for r in join.rows[:top])
    if len(join.rows) > top:
        top_s.lines.append(f"… {len(join.rows) - top} more (--json has them all)")
    total = join.total_us
    _table(
        detail.section("By compile"),
        [(t, f"{c.id_label}  {c.frame.label if c.frame else ''}") for c, t in join.by_compile],
        total,
        TOP_ROWS,
    )
    _table(detail.section("By frame"), [(t, f) for f, t in join.by_frame], total, TOP_ROWS)
    _table(
        detail.section("By user line (a kernel made from several lines counts for each)"),
        [(t, f"{ln.short}  {ln.code}  ← {', '.join(ks)}") for ln, t, ks in join.by_line],
        total,
        TOP_ROWS,
    )
    _table(
        detail.section("Eager ops"),
        [(o.time_us, f"{o.op} ×{o.calls}") for o in join.eager_ops],
        total,
        TOP_ROWS,
    )
    if idle.gaps:
        gaps = detail.section("Longest idle gaps")
        for at, us in idle.gaps:
            gaps.lines.append(f"{fmt_us(us):>9}  at +{fmt_us(at)}")
    said = notes(join, profile, model_has_cpp, lines_hint)
    if said:
        section = detail.section("Notes")
        for note in said:
            section.row("", note, bullet=True)
    return detail


LEAD_KERNELS = 5  # the overview's top kernels


@dataclass(frozen=True)
class Lead:
    """What the overview leads with when a profile is joined: the measured time, the compiled
    share and the top kernels."""

    headline: str  # ``GPU time 2.62ms measured · compiled 97.0% …``
    kernels: list[tuple[str, str, str, str]]  # (time and share, compile, kind and op, name)
    more: int  # kernels not shown


def measured_lead(join: RuntimeJoin, top: int = LEAD_KERNELS) -> Lead:
    unit = join.unit
    total = join.total_us or 1.0
    shares = [
        f"{k} {join.time_of((k,)) / total:.0%}" for k in KINDS if k != "cpp" or join.time_of((k,))
    ]
    headline = (
        f"{unit} time {fmt_us(join.total_us)} measured · compiled {join.compiled_share:.1%}"
        f" ({', '.join(shares)})"
    )
    rows = [
        (
            f"{fmt_us(r.time_us):>8} {r.share:4.0%}",
            r.compile_label or "-",
            r.kind if r.op in (None, r.name) else f"{r.kind} {r.op}",
            r.name,
        )
        for r in join.rows[:top]
    ]
    return Lead(headline, rows, max(0, len(join.rows) - top))


def measured_section(detail: Detail, join: RuntimeJoin, item: Kernel | Compile) -> None:
    """The measured time of a kernel or a compile, as a section of its detail."""
    unit = join.unit
    section = detail.section(f"Measured ({unit} time, profile)")
    if isinstance(item, Kernel):
        rows = [r for r in join.rows if r.kernel is not None and same(r.kernel, item)]
        if not rows:
            section.row("", "did not run in the profile's window", "dim")
            return
        for r in rows:
            section.row("time", f"{fmt_us(r.time_us)} ({r.share:.1%})  {r.calls} calls")
            section.row("per call", fmt_us(r.avg_us))
            if r.gb_s is not None:
                section.row("achieved", f"{r.gb_s:,.0f} GB/s")
        return
    found = [t for c, t in join.by_compile if same(c, item)]
    if not found:
        section.row("", "none of its kernels ran in the profile's window", "dim")
        return
    section.row("time", f"{fmt_us(found[0])} ({found[0] / (join.total_us or 1):.1%})")
    for r in [r for r in join.rows if r.compile is not None and same(r.compile, item)][:TOP_ROWS]:
        section.row("", _kernel_line(r, None), depth=1)


def row_detail(row: KernelTime, join: RuntimeJoin) -> Detail:
    """One kernel of the profile as it ran: what launched it, its compile and user lines, its
    measured time (the profile view's detail of a kernel the trace has no source for)."""
    unit = join.unit
    detail = Detail("profile kernel", row.name, id=row.name)
    head = detail.section()
    head.row("kind", row.kind)
    if row.op not in (None, row.name):
        head.row("launched by", str(row.op))
    comp = row.compile
    if comp is not None:
        frame = comp.frame.label if comp.frame is not None else ""
        head.row("compile", f"{comp.id_label}  {frame}".rstrip())
    elif row.candidates:
        head.row("compile", f"one of {row.compile_label}")
    else:
        head.row("compile", "none (eager)" if row.kind == "eager" else "not known")
    for line in row.lines:
        head.row("user line", f"{line.short}  {line.code}")
    measured = detail.section(f"Measured ({unit} time, profile)")
    measured.row("time", f"{fmt_us(row.time_us)} ({row.share:.1%})  {row.calls} calls")
    measured.row("per call", fmt_us(row.avg_us))
    if row.gb_s is not None:
        measured.row("achieved", f"{row.gb_s:,.0f} GB/s")
    if row.event_name is not None:
        measured.row("in the profile", row.event_name)
    return detail


Peak = tuple[float, str]  # a GPU's peak GB/s, and where the figure comes from


@dataclass
class Joined:
    """A profile read once and joined to a model, with what its rendering needs."""

    profile: Profile
    join: RuntimeJoin
    peak: Peak | None
    has_cpp: bool
    lines_hint: str = ""  # how to turn provenance tracking on (for the user lines)

    def json(self) -> dict[str, Any]:
        return profile_json(self.join, self.profile, self.peak)

    def detail(self) -> Detail:
        return profile_detail(
            self.join, self.profile, self.has_cpp, self.peak, lines_hint=self.lines_hint
        )


def join_at(
    model: Model, path: Path, display: str, peak_of: Callable[[str | None], Peak | None]
) -> Joined:
    """The profile at `path` joined to `model` (ProfileError or OSError when it is none);
    `peak_of(device name)`: the GPU's peak bandwidth."""
    prof = load_profile(path, display=display)
    join = join_profile(model, prof)
    has_cpp = any(k.kind == "cpp" for k in model.kernels)
    hint = tracking_hint(torch_version(model))
    return Joined(prof, join, peak_of(prof.device_name), has_cpp, hint)
