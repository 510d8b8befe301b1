"""Whose code a location is: the user's, a library's, torch's or generated."""

from __future__ import annotations

import pytest

from tcview.analysis.owner import (
    Owner,
    owner_of,
    package_of,
    plain_function,
    resume_function,
    user_line,
)

VENV = "/opt/torch/.venv/lib/python3.12/site-packages"


@pytest.mark.parametrize(
    ("path", "owner", "package"),
    [
        ("/home/me/train.py", Owner.USER, ""),
        ("model.py", Owner.USER, ""),
        ("/home/me/bin/train.py", Owner.USER, ""),
        (f"{VENV}/torch/optim/adam.py", Owner.TORCH, "torch.optim"),
        (f"{VENV}/torch/nn/parallel/distributed.py", Owner.TORCH, "torch.nn.parallel"),
        (f"{VENV}/torch/_dynamo/eval_frame.py", Owner.TORCH, "torch._dynamo"),
        (f"{VENV}/torch/__init__.py", Owner.TORCH, "torch"),
        ("/src/pytorch/torch/nn/modules/linear.py", Owner.TORCH, "torch.nn.modules"),
        (f"{VENV}/transformers/models/llama/modeling_llama.py", Owner.LIBRARY, "transformers"),
        ("/usr/lib/python3.12/contextlib.py", Owner.LIBRARY, "contextlib"),
        ("<frozen runpy>", Owner.LIBRARY, "runpy"),
        ("/root/.pyenv/versions/3.11.7/bin/torchrun", Owner.LIBRARY, "torchrun"),
        ("<string>", Owner.GENERATED, ""),
        ("<eval_with_key>.3", Owner.GENERATED, ""),
        (
            "/tmp/torchinductor_root/kv/ckvk623evi2tchtoxuwwfozhawwsxnwqfjsc64hpteac5pt43n7l.py",
            Owner.GENERATED,
            "",
        ),
        (  # output code under a TORCHINDUCTOR_CACHE_DIR of the user's: by its file name
            "/tmp/tmp.8gTXC57UN7/2a/c2azxdk3oeg5auqnlcweooicmro6x2jdgesxq7oi5s5mqzuzkpr7.py",
            Owner.GENERATED,
            "",
        ),
    ],
)
def test_whose_code(path: str, owner: Owner, package: str) -> None:
    assert owner_of(path) is owner
    assert package_of(path) == package


def test_a_resume_function_is_generated_though_its_file_is_the_users() -> None:
    assert owner_of("/home/me/train.py", "torch_dynamo_resume_in_f_at_31") is Owner.GENERATED
    assert resume_function("torch_dynamo_resume_in_f_at_31") == ("f", 31)
    assert (
        plain_function("torch_dynamo_resume_in_f_at_31") == "f (after the graph break at line 31)"
    )
    assert plain_function("forward") == "forward"


def test_the_users_line_is_never_generated_code_torch_or_a_library() -> None:
    frames = [
        ("/home/me/train.py", 40),
        ("/home/me/model.py", 12),
        (f"{VENV}/torch/nn/modules/module.py", 1779),
        ("<string>", 2),
        ("/tmp/torchinductor_root/kv/ckvk623evi2tchtoxuwwfozhawwsxnwqfjsc64hpteac5pt43n7l.py", 9),
    ]
    assert user_line(frames) == {"file": "/home/me/model.py", "line": 12}
    assert user_line(frames[2:]) is None
