"""What `tcview doctor` runs in the chosen Python, with TORCH_TRACE set: the Python, triton,
torch, CUDA and GPUs it sees, and a tiny compile. Prints one JSON line last. Not imported by
tcview: its text is run there (`python -c`), as the job's own code is."""

import importlib.metadata as md
import json
import sys


def main() -> None:
    out: dict[str, object] = {"executable": sys.executable, "version": sys.version.split()[0]}
    try:
        out["triton"] = md.version("triton")
    except Exception:  # noqa: BLE001 - any failure means: no usable triton
        out["triton"] = None
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - said in the report
        out["torch_error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(out))
        return
    out["torch"] = torch.__version__
    out["cuda_build"] = torch.version.cuda
    out["hip_build"] = getattr(torch.version, "hip", None)
    try:
        out["cuda_available"] = torch.cuda.is_available()
        if out["cuda_available"]:
            n = torch.cuda.device_count()
            out["gpus"] = [torch.cuda.get_device_name(i) for i in range(n)]
    except Exception as exc:  # noqa: BLE001 - said in the report
        out["cuda_error"] = f"{type(exc).__name__}: {exc}"
    try:
        f = torch.compile(lambda x: x * 2 + 1, backend="eager")
        f(torch.ones(3))
        out["compiled"] = True
    except Exception as exc:  # noqa: BLE001 - said in the report
        out["compile_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))


main()
