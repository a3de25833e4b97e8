"""``http:URL`` — a world model served elsewhere, reached over HTTP (the contract: ``docs/model_http.md``).

Two modes (``--option model.mode=video|chunks``):

* ``video`` (default): one ``POST URL/generate`` per (case, seed) carrying the case as JSON (id, seed,
  prompt, fps, num_frames, resolution, the first frame as a base64 PNG when the case has one, every
  chunk with its caption and action); the body of the answer is the video.
* ``chunks``: one ``POST URL/chunk`` per chunk, sent only when the evaluator pulls that chunk's control
  (so the server never sees a future action), carrying the chunk's caption and action and the last
  frame generated so far (the first frame before chunk 0); the body is that chunk's frames.

An answer is an ``.npz`` (``frames``: ``uint8 [T, H, W, 3]``, optional ``fps``; ``Content-Type:
application/x-npz``) or any video file PyAV reads (mp4, webm...). A server that cannot be reached, times
out, answers an HTTP error or sends something that is not frames is a :class:`ModelError` naming the URL,
the case and the fix (the evaluator records it on the case's rows and goes on).
"""

from __future__ import annotations

import base64
import io
import json
import socket
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from worldolympiad.models.base import ChunkControl, ModelError, ModelSpecError, VideoChunk, WorldModel, controls_for
from worldolympiad.options import OptionSpec
from worldolympiad.types import Case, Video

__all__ = ["HttpModel", "decode_frames", "encode_png"]

CONTRACT = "docs/model_http.md"


def encode_png(image: np.ndarray) -> str:
    """``uint8 [H, W, 3]`` → base64 PNG text."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_frames(body: bytes, content_type: str = "", max_frames: int | None = None,
                  max_pixels: int | None = None) -> tuple[np.ndarray, float | None]:
    """An answer's body (npz or a video file) → ``(uint8 [T, H, W, 3], fps or None)``.

    Raises:
        ValueError: not an npz with ``frames`` nor a readable video; frames of the wrong shape or dtype.
    """
    if body[:2] == b"PK" or "npz" in content_type:
        with np.load(io.BytesIO(body), allow_pickle=False) as z:
            names = list(z.files)
            key = "frames" if "frames" in names else names[0] if len(names) == 1 else None
            if key is None:
                raise ValueError(f"an npz answer needs a 'frames' array, got {', '.join(names) or 'no arrays'}")
            frames = np.asarray(z[key])
            fps = float(z["fps"]) if "fps" in names else None
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3 or not len(frames):
            raise ValueError(f"'frames' must be uint8 [T, H, W, 3] with T >= 1, got {frames.dtype} {list(frames.shape)}")
        if max_frames is not None and len(frames) > max_frames:
            frames = frames[:max_frames]
        return frames, fps
    from worldolympiad.video.io import VideoError, read_video

    with tempfile.NamedTemporaryFile(suffix=".mp4") as f:
        f.write(body)
        f.flush()
        try:
            video = read_video(f.name, max_frames=max_frames, max_pixels=max_pixels)
        except VideoError as e:
            raise ValueError(f"the body is neither an npz nor a readable video ({content_type or 'no Content-Type'}):"
                             f" {e}") from e
    return video.frames, video.fps


def _base_url(arg: str | None) -> str:
    """``http:URL``'s URL, normalised (``--model http://h:p`` arrives as ``//h:p``)."""
    url = (arg or "").strip()
    if url.startswith("//"):
        url = "http:" + url
    if url and "://" not in url:
        url = "http://" + url
    return url.rstrip("/")


class HttpModel(WorldModel):
    """A model behind an HTTP endpoint (``http:URL``); see the module docstring and ``docs/model_http.md``.

    Args:
        arg: the server's base URL (``http://127.0.0.1:8000``); requests go to ``URL/generate`` and ``URL/chunk``.
        **options: ``mode``, ``timeout``, ``cache_dir`` (the reference cache, for cases' first frames).
    """

    OPTIONS: ClassVar[Mapping[str, OptionSpec]] = {
        "mode": OptionSpec("str", "video", "video: one request per case; chunks: one request per chunk with its "
                           "action and the last frame so far", ("video", "chunks")),
        "timeout": OptionSpec("float", 600.0, "seconds to wait for one answer"),
        "header": OptionSpec("str", None, "one extra request header, e.g. 'Authorization: Bearer TOKEN'"),
    }
    RESOURCES: ClassVar[Mapping[str, float] | None] = {"num_gpus": 0}  # the server generates; this only waits

    @classmethod
    def check(cls, arg: str | None) -> None:
        """A well-formed http(s) URL where something accepts connections (nothing is generated).

        Raises:
            ModelSpecError: no URL, another scheme, or nothing listening at host:port.
        """
        url = _base_url(arg)
        parts = urllib.parse.urlsplit(url)
        if not arg or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelSpecError(f"--model http:{arg or ''}: give the server's base URL, e.g. "
                                 f"--model http:http://127.0.0.1:8000 (the contract: {CONTRACT})")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection((parts.hostname, port), timeout=5).close()
        except OSError as e:
            raise ModelSpecError(f"--model http:{arg}: nothing answers at {parts.hostname}:{port} ({e}); start the "
                                 f"model server first (the contract: {CONTRACT})") from None

    def __init__(self, arg: str | None, **options: Any) -> None:
        self.url = _base_url(arg)
        if not self.url:
            raise ValueError(f"http model needs the server's URL: --model http:http://HOST:PORT ({CONTRACT})")
        self.mode = str(options.pop("mode", "video") or "video").lower()
        if self.mode not in ("video", "chunks"):
            raise ValueError(f"model.mode must be video or chunks, got {self.mode!r}")
        self.timeout = float(options.pop("timeout", 600.0) or 600.0)
        header = options.pop("header", None)
        self.headers = {"Content-Type": "application/json", "Accept": "application/x-npz, video/*"}
        if header:
            key, sep, value = str(header).partition(":")
            if not sep:
                raise ValueError(f"model.header must look like 'Name: value', got {header!r}")
            self.headers[key.strip()] = value.strip()
        self.cache_dir = options.pop("cache_dir", None)
        options.pop("device", None)

    # ------------------------------------------------------------------ requests
    def _post(self, route: str, payload: dict[str, Any], case: Case) -> tuple[np.ndarray, float | None]:
        from worldolympiad.budgets import decode_limits, max_frames

        url = f"{self.url}/{route}"
        request = urllib.request.Request(url, data=json.dumps(payload, default=str).encode(), headers=self.headers, method="POST")
        where = f"{self.name}: case {case.id!r}: POST {url}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body, content_type = response.read(), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            # an HTML error page (http.server's send_error) says no more than its reason line
            html = "html" in (e.headers.get("Content-Type", "") if e.headers else "")
            detail = "" if html else " ".join(e.read(300).decode("utf-8", "replace").split())
            raise ModelError(f"{where} answered HTTP {e.code} {e.reason}{': ' + detail if detail else ''}; fix the "
                             f"server or the request ({CONTRACT})") from None
        except TimeoutError:
            raise ModelError(f"{where}: no answer within {self.timeout:g} s; raise --option model.timeout=SECONDS "
                             "or make the server faster") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, TimeoutError):
                raise ModelError(f"{where}: no answer within {self.timeout:g} s; raise --option "
                                 "model.timeout=SECONDS or make the server faster") from None
            raise ModelError(f"{where} failed: {reason}; is the server running?") from None
        try:
            limits = decode_limits(case)
            # as the server sent them (size, rate, every frame within the pixel budget): the evaluator stores them and
            # puts them on the case's frames as it reads them back (`resized_from`, `retimed_from_fps`, the row's
            # input warnings), as for every model
            return decode_frames(body, content_type, max_frames=max_frames(), max_pixels=limits["max_pixels"])
        except ValueError as e:
            raise ModelError(f"{where}: {e} (the answer must be an npz or a video: {CONTRACT})") from None

    def _case_payload(self, case: Case, seed: int) -> dict[str, Any]:
        from worldolympiad.models.baselines import first_frame_or_none

        image = first_frame_or_none(case, self.cache_dir)
        return {
            "id": case.id, "seed": seed, "prompt": case.prompt, "fps": case.fps, "num_frames": case.num_frames,
            "resolution": list(case.resolution),
            "first_frame": encode_png(image) if image is not None else None,
            "chunks": [_control_dict(c) for c in controls_for(case)],
            "case": case.to_dict(),
        }

    # ------------------------------------------------------------------ the two modes
    def generate(self, case: Case, seed: int = 0) -> Video:
        if self.mode == "chunks":
            return super().generate(case, seed)
        frames, fps = self._post("generate", self._case_payload(case, seed), case)
        return Video(frames=frames, fps=fps or case.fps, chunks=case.chunks,
                     metadata={"model": self.name, "server": self.url})

    def rollout(self, case: Case, controls: Iterable[ChunkControl], seed: int = 0) -> Iterator[VideoChunk]:
        if self.mode == "video":
            yield from super().rollout(case, controls, seed)
            return
        payload = self._case_payload(case, seed)
        payload.pop("chunks")
        last = payload.pop("first_frame")
        for control in controls:  # pulled one at a time: the server never sees a future action
            frames, _ = self._post("chunk", {**payload, "chunk": _control_dict(control), "last_frame": last}, case)
            last = encode_png(frames[-1])
            yield VideoChunk(control.index, frames)


def _control_dict(control: ChunkControl) -> dict[str, Any]:
    return {"index": control.index, "num_frames": control.num_frames, "caption": control.caption,
            "action": control.action}
