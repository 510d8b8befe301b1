"""UI benchmarks (not timed tests): run `python tests/benchmarks/bench_ui.py [--gb 1.0]`.

1. open-to-first-frame on a ~1 GB trace (a real trace file repeated), plus the time until the
   tree shows the first items and until indexing is complete;
2. opening a 50,000-line output code in the viewer;
3. keypress-to-redraw in a tree with 100,000 items;
4. the kernels view (K) on the ~1 GB trace: from the key to its rows, and filtering as you type.
Temporary files are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# First opens are measured: the index cache (whose reopens bench_cache.py times) stays out.
os.environ["TCVIEW_NO_CACHE"] = "1"

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from textual import events  # noqa: E402

from tcview.ui.app import TcviewApp  # noqa: E402
from tcview.ui.content import OUTPUT_CODES, Document  # noqa: E402
from tcview.ui.reader import Reader  # noqa: E402
from tcview.ui.tree import TraceTree  # noqa: E402

SOURCE = REPO / "sample_traces" / "gpu_tinyblock" / "trace"
PREFIX = "V1121 05:35:45.123456 4242 torch/_logging/structured.py:28] "


def record(header: dict, payload: str | None = None) -> str:
    if payload is None:
        return PREFIX + json.dumps(header) + "\n"
    header = dict(header, has_payload=hashlib.md5(payload.encode()).hexdigest())
    return PREFIX + json.dumps(header) + "\n" + "".join(f"\t{ln}\n" for ln in payload.split("\n"))


def big_trace(directory: Path, gigabytes: float, source: Path) -> Path:
    src = next(source.glob("dedicated_log_torch_trace*.log")).read_bytes()
    target = directory / "dedicated_log_torch_trace_big.log"
    want = int(gigabytes * (1 << 30))
    with open(target, "wb") as fh:
        written = 0
        while written < want:
            fh.write(src)
            written += len(src)
    return directory


def output_code_trace(directory: Path, lines: int) -> Path:
    kernel = [
        "triton_poi_fused_{i} = async_compile.triton('triton_poi_fused_{i}', '''",
        "import triton",
        "import triton.language as tl",
        "@triton.jit",
        "def triton_poi_fused_{i}(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):",
        "    xoffset = tl.program_id(0) * XBLOCK",
        "    xindex = xoffset + tl.arange(0, XBLOCK)[:]",
        "    tmp0 = tl.load(in_ptr0 + (xindex), None)",
        "    tl.store(out_ptr0 + (xindex), tmp0, None)",
        "''', device_str='cuda')",
        "",
    ]
    body: list[str] = ["# AOT ID: ['0_inference']", "from torch import device, empty_strided", ""]
    i = 0
    while len(body) < lines:
        body.extend(ln.format(i=i) for ln in kernel)
        i += 1
    ids = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    text = record({"dynamo_start": {"stack": []}, **ids})
    text += record({"inductor_output_code": {"filename": "x.py"}, **ids}, "\n".join(body))
    (directory / "dedicated_log_torch_trace_code.log").write_text(text)
    return directory


def many_compiles_trace(directory: Path, n: int) -> Path:
    parts = []
    for i in range(n):
        parts.append(
            record(
                {"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": i, "attempt": 0}
            )
        )
    (directory / "dedicated_log_torch_trace_many.log").write_text("".join(parts))
    return directory


async def key_to_redraw(app: TcviewApp, key: str) -> float:
    """Seconds from a key event reaching the app to the next screen refresh after it.

    (Pilot.press waits for the whole process to go idle, which never happens while the
    indexing thread runs, so it is not used for timing.)
    """
    done = asyncio.Event()
    t0 = time.monotonic()
    app.post_message(events.Key(key, None))
    await asyncio.sleep(0)
    app.call_after_refresh(done.set)
    await done.wait()
    return time.monotonic() - t0


async def bench_open(path: Path) -> dict[str, float]:
    t0 = time.monotonic()
    app = TcviewApp(str(path))
    out: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        while app.browser.first_frame_at is None:
            await pilot.pause(0.001)
        out["first_frame_s"] = app.browser.first_frame_at - t0
        tree = app.query_one(TraceTree)
        while not tree.root.children:
            await pilot.pause(0.01)
        out["first_tree_items_s"] = time.monotonic() - t0
        out["status_while_indexing"] = app.status_left  # type: ignore[assignment]
        # the tree answers keys while indexing goes on
        app.query_one(TraceTree).focus()
        lag = [await key_to_redraw(app, key) for key in ("down", "up") * 10]
        out["keypress_while_indexing_ms"] = statistics.median(lag) * 1000
        out["keypress_while_indexing_max_ms"] = max(lag) * 1000
        while app.browser.loaded_at is None:
            await pilot.pause(0.05)
        out["index_complete_s"] = app.browser.loaded_at - t0
        # The counts of the whole model (a worker makes them from the last version)
        model = app.model_session.model
        records = model.summary_counts()["records"] if model is not None else 0
        while app.browser.records_shown() != records:
            await pilot.pause(0.005)
        out["final_counts_s"] = time.monotonic() - t0
        out["counts"] = app.status_right  # type: ignore[assignment]
    return out


async def bench_output_code(path: Path) -> dict[str, float]:
    app = TcviewApp(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.browser.loaded_at is None:
            await pilot.pause(0.01)
        assert app.model is not None
        rec = app.model.files[0].records[1]
        tree = app.query_one(TraceTree)
        node = tree.reveal(rec, "record")
        assert node is not None and node.data is not None
        tree.reveal_node(node)
        reader = app.query_one("#reader", Reader)
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        OUTPUT_CODES._items.clear()  # cold: read, decode and split the record again
        reader.viewer.show(Document("empty"))
        await pilot.pause()
        t0 = time.monotonic()
        app.browser.show_item(node.data)
        while reader.viewer.doc.count < 50_000:
            await pilot.pause(0.001)
        await pilot.pause()
        shown = time.monotonic() - t0
        reader.viewer.focus()
        await pilot.pause()
        end = await key_to_redraw(app, "G")
        t2 = time.monotonic()
        found = reader.viewer.search("triton_poi_fused_4000(")
        search = time.monotonic() - t2
        return {
            "lines": reader.viewer.doc.count,
            "open_s": shown,
            "jump_to_end_s": end,
            "search_s": search,
            "found": float(found),
        }


async def bench_tree(path: Path) -> dict[str, float]:
    app = TcviewApp(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.browser.loaded_at is None:
            await pilot.pause(0.01)
        tree = app.query_one(TraceTree)
        frame = tree.root.children[0]
        t0 = time.monotonic()
        tree.ensure_loaded(frame)
        frame.expand()
        await pilot.pause()
        expand = time.monotonic() - t0
        items = len(tree._tree_lines)
        tree.focus()
        before = tree.cursor_line
        times = [await key_to_redraw(app, "down") for _ in range(60)]
        moved = tree.cursor_line - before
        end = await key_to_redraw(app, "end")
        return {
            "items": items,
            "expand_s": expand,
            "keypress_median_ms": statistics.median(times) * 1000,
            "keypress_p95_ms": sorted(times)[int(len(times) * 0.95)] * 1000,
            "jump_to_last_ms": end * 1000,
            "cursor_moved_lines": moved,
            "cursor_at_last": float(tree.cursor_line == tree.last_line),
        }


async def bench_kernels(path: Path) -> dict[str, float]:
    """`K` on a big trace: key to first rows, then a filter typed one key at a time."""
    from textual.widgets import DataTable, Input

    app = TcviewApp(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.browser.loaded_at is None:
            await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        out: dict[str, float] = {}
        t0 = time.monotonic()
        redraw = await key_to_redraw(app, "K")
        table = None
        while table is None or table.row_count == 0:
            await pilot.pause(0.005)
            tables = list(app.browser.shown_pane().query(DataTable))
            table = tables[0] if tables else None
        out["K_key_to_redraw_ms"] = redraw * 1000
        out["K_to_rows_s"] = time.monotonic() - t0
        out["rows"] = table.row_count
        app.browser.shown_pane().query_one("#kernel-filter", Input).focus()
        lag = []
        settle = []
        for key in ("p", "o", "i", "backspace", "backspace", "backspace"):
            t1 = time.monotonic()
            lag.append(await key_to_redraw(app, key))
            await app.workers.wait_for_complete()
            await pilot.pause()
            settle.append(time.monotonic() - t1)
        out["filter_key_to_redraw_median_ms"] = statistics.median(lag) * 1000
        out["filter_key_to_redraw_max_ms"] = max(lag) * 1000
        out["filter_key_to_rows_median_s"] = statistics.median(settle)
        out["filter_key_to_rows_max_s"] = max(settle)
        table.focus()
        moves = [await key_to_redraw(app, "down") for _ in range(20)]
        out["row_move_median_ms"] = statistics.median(moves) * 1000
        out["row_move_max_ms"] = max(moves) * 1000
        return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--only", help="run one benchmark: open, code, tree or kernels")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tcview-bench-ui-"))
    try:
        benches = {
            "open": ("open 1 GB", lambda d: big_trace(d, args.gb, args.source), bench_open),
            "code": (
                "50k-line output code",
                lambda d: output_code_trace(d, 50_000),
                bench_output_code,
            ),
            "tree": ("100k tree items", lambda d: many_compiles_trace(d, 100_000), bench_tree),
            "kernels": (
                "kernels view on 1 GB",
                lambda d: big_trace(d, args.gb, args.source),
                bench_kernels,
            ),
        }
        for key, (name, make, bench) in benches.items():
            if args.only and key != args.only:
                continue
            d = tmp / name.replace(" ", "_")
            d.mkdir()
            path = make(d)
            size = sum(f.stat().st_size for f in path.iterdir())
            result = asyncio.run(bench(path))
            print(f"{name} ({size / 1e6:.0f} MB):")
            for key, value in result.items():
                shown = f"{value:.3f}" if isinstance(value, float) else value
                print(f"  {key:28} {shown}")
            shutil.rmtree(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
