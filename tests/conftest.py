"""Process-wide test setup.

MuJoCo's offscreen GL (Mesa llvmpipe, EGL or OSMesa) and triton's ``libtriton.so`` each
carry their own LLVM. If Mesa's is loaded first, a later ``import triton`` (which torch
does lazily, e.g. through ``torch._dynamo``) segfaults inside ``dlopen``. Loading
libtriton first is safe, so the test process does that before any renderer starts
(``scenarios._mujoco`` does the same for library users).
"""

import contextlib
import os

os.environ.setdefault("MUJOCO_GL", "egl")

# triton ships with CUDA builds of torch; absent elsewhere, nothing to preload.
with contextlib.suppress(Exception):
    import triton._C.libtriton  # noqa: F401
