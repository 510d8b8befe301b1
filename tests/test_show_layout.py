"""`tcview show` keeps a long label apart from its value: a kernel's name past the kernels
section's 60-column cap ran into its kind (``…_rsub_sqrt_0cpp``)."""

from __future__ import annotations

from pathlib import Path

from conftest import find_as

from tcview.ingest.source import load_source
from tcview.model.objects import Compile
from tcview.report.detail import Row, compile_detail, kernel_detail, render_text, row_text

LONG = "cpp_fused_add_addcdiv_copy__div_fma_lerp_mul_neg_pow_reciprocal_rsub_sqrt_0"


def test_a_label_longer_than_its_column_is_kept_apart() -> None:
    assert row_text(Row(LONG, "cpp", "kind:cpp"), 62) == f"  {LONG}  cpp"
    assert row_text(Row("short", "cpp", "kind:cpp"), 12) == "  short       cpp"
    assert row_text(Row("output code", "lines 1-2"), 0) == "output code  lines 1-2"
    assert row_text(Row("kind", "cpp"), 0) == "kind      cpp"


def test_show_prints_a_long_kernel_name_and_its_kind_apart(shared_traces: Path) -> None:
    model = load_source(str(shared_traces / "cpu-torch2.13" / "e_training"))
    text = render_text(compile_detail(find_as(model, "3/0", Compile), model))
    assert f"  {LONG}  cpp         inference" in text.splitlines()


def test_show_keeps_long_triton_names_apart_from_their_kind(fixture_runs: Path) -> None:
    """A real H100 GPT-2 run's backward has Triton names of 120 characters and more: each is
    two spaces from its kind in the compile's kernel list, and on the kernel's title line."""
    model = load_source(str(fixture_runs / "h100_gpt2_profile"))
    comp = find_as(model, "0/0", Compile)
    text = render_text(compile_detail(comp, model)).splitlines()
    long = [k for k in comp.kernels if len(k.name) > 100]
    assert len(long) >= 2
    for kernel in long:
        assert any(ln.startswith(f"  {kernel.name}  {kernel.kind}") for ln in text), kernel.name
        title = render_text(kernel_detail(kernel, model)).splitlines()[0]
        assert title == f"kernel {kernel.name}  {kernel.kind}"
