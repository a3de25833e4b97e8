"""``inferix serve``: stream frames to clients over WebSocket, take actions back; HTTP control; Gradio demo.

One thread owns the engine (:class:`EngineLoop`): it steps the engine, hands each decoded
block to the session's subscriber and runs commands (add / control / cancel) between steps,
so the engine itself needs no locks. Back-pressure: a session whose client has not taken
``max_ahead`` blocks yet is paused until it does (a slow client does not make the server
run away with memory, and its actions take effect within ``max_ahead`` blocks); a session its client
paused stays paused until the client resumes it, whatever back-pressure does meanwhile.

WebSocket protocol (``/ws``)::

    client -> {"prompt": "...", "seed": 0, "num_blocks": 8 | null, "action": "forward"}   (first message)
    server -> {"type": "error", "code": "busy" | "bad_request", "message": ...}, then close   (refused)
    server -> {"type": "session", "session_id": "s0", "fps": 16, "height": H, "width": W}
    server -> {"type": "block", "index": i, "frames": T, "height": H, "width": W,
               "prompt": ..., "action": ..., "timings": {...}}
              followed by one binary message: uint8 [T, H, W, 3] RGB, C order
    client -> {"action": "left"} | {"prompt": "..."} | {"pause": true} | {"resume": true} | {"cancel": true}
              (any time; applied from the next block that has not started)
    server -> {"type": "error", "message": ...}     (bad control message; the session goes on)
    server -> {"type": "end", "state": "finished|cancelled|failed", "error": ...}

The first message is checked before a session exists (:func:`start_params`): ``prompt`` a
string, ``seed`` an integer in [0, 2**63 - 1], ``num_blocks`` null or an integer >= 1 (a float
such as 4.0 that is a whole number counts; ``1e999``, NaN, 2.5, ``true`` or ``"3"`` do not); a
bad one gets ``code: "bad_request"``. **Admission control**: the KV pool is sized for
``max_sessions`` sessions (:func:`session_capacity`), so a session that would not fit is refused
up front with ``code: "busy"`` (close code 1013, "try again later") instead of being admitted and
failing mid-stream when the pool runs dry; under the unbounded ``full`` policy a session must also
have a ``num_blocks`` whose frames fit ``max_frames``. A control message that is not a JSON object
with the fields above of the right types (``prompt`` a string, ``pause`` / ``resume`` /
``cancel`` booleans), or that the engine rejects (unknown action), is answered with an error
message and the session goes on. A session is removed from the engine's table once its ``end``
message is out (finished, cancelled or failed), so its slot and its entry are reclaimed.
**Idle sessions**: a paused session (its client stopped taking blocks, so back-pressure paused it, or
the client paused it) whose client has neither taken a block nor sent a control message
for ``idle_timeout_s`` (default 300 s; ``inferix serve --idle-timeout``) is cancelled with
``error: "idle ..."`` and reclaimed the same way, so a client that stops reading without closing
its socket gives its KV slot back. Per-step records are bounded (``EngineConfig.step_log_size``);
``tests/inferix/test_serve_soak.py`` runs 200 sessions over loopback and checks memory stays flat.

HTTP: ``GET /health``, ``GET /sessions``, ``POST /sessions/{id}/control`` (same JSON as the
WebSocket control messages), ``DELETE /sessions/{id}``. Gradio demo page: ``/demo``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

# fastapi resolves endpoint annotations from module globals (postponed annotations), so its
# types are imported here; this module is only imported by `inferix serve`.
from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect

logger = logging.getLogger(__name__)

MAX_SEED = 2**63 - 1


class SessionRefusedError(RuntimeError):
    """The server cannot take this session now (its KV pool holds no more sessions)."""


def session_capacity(config: Any) -> int:
    """Sessions the engine's KV pool holds at once, each at its policy's bound.

    The default pool is sized for ``max_sessions``; an explicit ``num_device_blocks`` holds as
    many sessions as it has room for (the per-session size of
    :meth:`~inferix.engine.EngineConfig.pool_blocks`).
    """
    if config.num_device_blocks is None:
        return int(config.max_sessions)
    bound = config.policy.max_visible_frames()
    frames = config.max_frames if bound is None else bound + config.block_frames
    per_session = -(-frames // config.kv_block) + 2
    return max(0, int(config.num_device_blocks) // per_session)


def _whole_number(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi] (a float that is a whole number counts), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def start_params(start: Any, config: Any = None) -> dict[str, Any]:
    """Check a session's first message; returns ``add_session`` keyword arguments.

    Raises:
        ValueError: naming the field, the value and what it must be.
    """
    if not isinstance(start, dict):
        raise ValueError(f"the first message must be a JSON object, got {type(start).__name__}")
    prompt = start.get("prompt", "")
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be a string, got {prompt!r}")
    seed = _whole_number("seed", start.get("seed", 0), 0, MAX_SEED)
    num_blocks = start.get("num_blocks")
    if num_blocks is not None:
        num_blocks = _whole_number("num_blocks", num_blocks, 1, 2**31 - 1)
    if config is not None and config.num_device_blocks is None and config.policy.max_visible_frames() is None:
        frames = None if num_blocks is None else num_blocks * config.block_frames
        if frames is None or frames > config.max_frames:
            raise ValueError(f"under the full KV policy a session holds at most {config.max_frames} latent frames "
                             f"({config.max_frames // config.block_frames} blocks); got num_blocks={num_blocks}: "
                             "ask for fewer blocks, or serve with a rolling policy (--policy rolling:W)")
    return {"prompt": prompt, "seed": seed, "num_blocks": num_blocks, "action": start.get("action")}


class EngineLoop:
    """Runs an engine in a background thread; other threads talk to it through :meth:`call`.

    Args:
        engine: the :class:`~inferix.engine.Engine`.
        max_ahead: blocks a session may generate beyond what its subscriber has taken.
        idle_timeout_s: cancel and reclaim a paused session whose client has neither taken a block nor
            sent a control message for this long (``None``: never).
    """

    def __init__(self, engine: Any, max_ahead: int = 2, idle_timeout_s: float | None = 300.0) -> None:
        if idle_timeout_s is not None and not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be > 0 seconds or None, got {idle_timeout_s!r}")
        self.engine = engine
        self.max_ahead = max_ahead
        self.idle_timeout_s = idle_timeout_s
        self._last_seen: dict[str, float] = {}  # session -> time.monotonic() of its client's last sign of life
        self._cmds: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future]] = queue.Queue()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._subs: dict[str, Callable[[dict[str, Any], Any], object]] = {}
        self._pending: dict[str, int] = {}  # blocks handed out and not yet taken by the client
        self._held: set[str] = set()  # sessions paused by back-pressure (not by the user)
        self.capacity = session_capacity(engine.config)
        self._thread = threading.Thread(target=self._run, name="inferix-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def call(self, fn: Callable[[], Any]) -> concurrent.futures.Future:
        """Run ``fn()`` on the engine thread between steps; the future holds its result or error."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._cmds.put((fn, fut))
        self._wake.set()
        return fut

    def admit(self, callback: Callable[[dict[str, Any], Any], object], **params: Any) -> str:
        """Start a session and subscribe ``callback`` to it, if the KV pool has room (engine thread only).

        Raises:
            SessionRefusedError: ``capacity`` sessions are live; nothing was started.
            ValueError: the engine rejected the parameters (unknown action...).
        """
        live = sum(1 for s in self.engine.sessions.values() if not s.state.done)
        if live >= self.capacity:
            raise SessionRefusedError(
                f"server busy: {live} of the {self.capacity} sessions its KV pool holds are live; "
                "try again when one ends (or serve with a larger --max-sessions)")
        sid: str = self.engine.add_session(**params)
        self.subscribe(sid, callback)
        return sid

    def end(self, session_id: str) -> None:
        """Cancel a session that is still live (engine thread only; a reclaimed one is ignored)."""
        s = self.engine.sessions.get(session_id)
        if s is not None and not s.state.done:
            self.engine.cancel(session_id)

    def subscribe(self, session_id: str, callback: Callable[[dict[str, Any], Any], object]) -> None:
        """Deliver ``(message, payload)`` of a session to ``callback`` (called on the engine thread)."""
        self._subs[session_id] = callback
        self._pending[session_id] = 0
        self._last_seen[session_id] = time.monotonic()

    def touch(self, session_id: str) -> None:
        """The session's client is alive (a control message): restart its idle clock (engine thread only)."""
        if session_id in self._last_seen:
            self._last_seen[session_id] = time.monotonic()

    def control(self, session_id: str, msg: dict[str, Any]) -> dict[str, Any]:
        """Apply a client's control message (engine thread only): restarts its idle clock, and a pause or
        resume of the client's own replaces back-pressure's hold, so a block taken afterwards does not
        resume a session its client paused.

        (Was: a pause that reached the engine after back-pressure had paused the session and before the
        client's copy of the block was taken was undone by :meth:`_taken`; the session streamed on for
        good and was never idle. ``test_serve_soak.py`` hung to pytest-timeout's 600 s in a CI run so.)
        """
        self.touch(session_id)
        result = _control(self.engine, session_id, msg)
        if msg.get("pause") or msg.get("resume"):
            self._held.discard(session_id)
        return result

    def taken(self, session_id: str) -> None:
        """The client took one block (thread-safe): may lift back-pressure."""
        self.call(lambda: self._taken(session_id))

    def _taken(self, session_id: str) -> None:
        if session_id not in self._pending:
            return  # the session ended and was reclaimed
        self._last_seen[session_id] = time.monotonic()
        self._pending[session_id] = max(0, self._pending.get(session_id, 0) - 1)
        if session_id in self._held and self._pending[session_id] < self.max_ahead:
            self._held.discard(session_id)
            s = self.engine.sessions.get(session_id)
            if s is not None and not s.state.done:
                self.engine.resume(session_id)

    def _reclaim(self, sid: str) -> None:
        """Forget an ended session: its table entry, subscriber and back-pressure state."""
        self._subs.pop(sid, None)
        self._pending.pop(sid, None)
        self._held.discard(sid)
        self._last_seen.pop(sid, None)
        self.engine.remove(sid)

    def _cancel_idle(self) -> None:
        """Cancel paused sessions (back-pressure: the client stopped taking blocks; or paused by it) whose
        client has shown no sign of life for ``idle_timeout_s``. A session being generated is never idle,
        however long its blocks take: its clock only runs while it waits for its client."""
        from inferix.scheduler import SessionState

        if self.idle_timeout_s is None:
            return
        now = time.monotonic()
        for sid, seen in list(self._last_seen.items()):
            s = self.engine.sessions.get(sid)
            if s is None or s.state.done:
                continue
            if s.state != SessionState.PAUSED:
                self._last_seen[sid] = now
            elif now - seen > self.idle_timeout_s:
                self.engine.cancel(sid)
                s.error = (f"idle: no block taken and no control message for {now - seen:.0f} s "
                           f"(the server's idle timeout is {self.idle_timeout_s:g} s)")
                logger.info("session %s cancelled: %s", sid, s.error)

    def _run(self) -> None:
        from inferix.scheduler import SessionState

        while not self._stop.is_set():
            while True:
                try:
                    fn, fut = self._cmds.get_nowait()
                except queue.Empty:
                    break
                try:
                    fut.set_result(fn())
                except Exception as e:  # reported to the caller, the loop goes on
                    fut.set_exception(e)
            self._cancel_idle()
            runnable = any(s.slot.runnable for s in self.engine.sessions.values()) or self.engine.decoding > 0
            if runnable:
                try:
                    self.engine.step()
                except Exception:
                    logger.exception("engine step failed")
            for sid, s in list(self.engine.sessions.items()):
                cb = self._subs.get(sid)
                if cb is None:
                    if s.state.done and not s.outputs:  # nobody will read it: reclaimed all the same
                        self._reclaim(sid)
                    continue
                for out in self.engine.pop_outputs(sid):
                    header = {"type": "block", "index": out.index, "frames": int(out.frames.shape[0]),
                              "height": int(out.frames.shape[1]), "width": int(out.frames.shape[2]),
                              "prompt": out.prompt, "action": out.action, "timings": out.timings}
                    cb(header, out.frames)
                    self._pending[sid] = self._pending.get(sid, 0) + 1
                if (not s.state.done and s.state == SessionState.RUNNING
                        and self._pending.get(sid, 0) >= self.max_ahead and s.slot.step == 0):
                    self.engine.pause(sid)  # back-pressure, lifted by taken()
                    self._held.add(sid)
                if s.state.done:
                    cb({"type": "end", "state": s.state.value, "error": s.error}, None)
                    self._reclaim(sid)
            if not runnable:
                self._wake.wait(0.05)
                self._wake.clear()


def _control(engine: Any, sid: str, msg: dict[str, Any]) -> dict[str, Any]:
    """Apply a control message on the engine thread."""
    known = {"action", "prompt", "pause", "resume", "cancel"}
    unknown = set(msg) - known - {"type"}
    if unknown:
        raise ValueError(f"unknown control field(s) {sorted(unknown)}; use {sorted(known)}")
    if "prompt" in msg and not isinstance(msg["prompt"], str):
        raise ValueError(f"prompt must be a string, got {msg['prompt']!r}")
    for flag in ("pause", "resume", "cancel"):
        if flag in msg and not isinstance(msg[flag], bool):
            raise ValueError(f"{flag} must be true or false, got {msg[flag]!r}")
    if "prompt" in msg:
        engine.set_prompt(sid, msg["prompt"])
    if "action" in msg:
        engine.set_action(sid, msg["action"])
    if msg.get("pause"):
        engine.pause(sid)
    if msg.get("resume"):
        engine.resume(sid)
    if msg.get("cancel"):
        engine.cancel(sid)
    return {"ok": True}


async def _receive_json(websocket: WebSocket) -> Any:
    """The next message parsed as JSON text.

    Raises:
        WebSocketDisconnect: the client went away.
        ValueError: a binary message, or text that is not JSON (the connection stays usable).
    """
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    text = message.get("text")
    if text is None:
        raise ValueError("messages must be JSON text, got a binary message")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"message is not valid JSON ({e}): {text[:80]!r}") from None


def create_app(engine: Any, loaded: Any = None, max_ahead: int = 2, gradio: bool = False,
               idle_timeout_s: float | None = 300.0) -> Any:
    """The FastAPI app (engine loop started/stopped with the app's lifespan); ``idle_timeout_s`` as
    :class:`EngineLoop`."""
    import contextlib

    import numpy as np

    loop = EngineLoop(engine, max_ahead=max_ahead, idle_timeout_s=idle_timeout_s)
    fps = float(getattr(loaded, "fps", 16.0))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        loop.start()
        yield
        loop.stop()

    app = FastAPI(title="Inferix", lifespan=lifespan)
    app.state.loop = loop

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "model": getattr(loaded, "name", None), "sessions": len(engine.sessions)}

    @app.get("/sessions")
    def sessions() -> list[dict[str, Any]]:
        def snap() -> list[dict[str, Any]]:
            return [{"session_id": sid, "state": s.state.value, "blocks_done": s.blocks_done, "error": s.error,
                     "prompt": s.prompt, "action": s.action} for sid, s in engine.sessions.items()]
        return loop.call(snap).result(timeout=30)

    @app.post("/sessions/{sid}/control")
    def control(sid: str, msg: dict[str, Any]) -> dict[str, Any]:
        try:
            return loop.call(lambda: loop.control(sid, msg)).result(timeout=30)
        except KeyError as e:
            raise HTTPException(404, str(e)) from None
        except (ValueError, TypeError) as e:
            raise HTTPException(400, str(e)) from None

    @app.delete("/sessions/{sid}")
    def cancel(sid: str) -> dict[str, Any]:
        try:
            loop.call(lambda: engine.cancel(sid)).result(timeout=30)
        except KeyError as e:
            raise HTTPException(404, str(e)) from None
        return {"ok": True}

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        aloop = asyncio.get_running_loop()
        out_q: asyncio.Queue = asyncio.Queue()

        async def refuse(code: str, message: str, close_code: int = 1008) -> None:
            await websocket.send_json({"type": "error", "code": code, "message": message})
            await websocket.close(code=close_code)

        try:
            first = await _receive_json(websocket)
        except WebSocketDisconnect:
            return
        except ValueError as e:
            await refuse("bad_request", str(e))
            return
        try:
            params = start_params(first, engine.config)
        except ValueError as e:
            await refuse("bad_request", str(e))
            return

        def deliver(m: dict[str, Any], p: Any) -> None:
            aloop.call_soon_threadsafe(out_q.put_nowait, (m, p))

        try:
            sid = await asyncio.wrap_future(loop.call(functools.partial(loop.admit, deliver, **params)))
        except SessionRefusedError as e:
            await refuse("busy", str(e), close_code=1013)  # 1013: try again later
            return
        except Exception as e:  # noqa: BLE001 - the engine rejected it (unknown action...): said, not fatal
            await refuse("bad_request", f"{type(e).__name__}: {e}" if not isinstance(e, ValueError) else str(e))
            return
        h, w = engine.config.latent_hw
        scale = int(getattr(engine.codec, "spatial_stride", 1))
        await websocket.send_json({"type": "session", "session_id": sid, "fps": fps, "height": h * scale,
                                   "width": w * scale})

        async def pump_out() -> None:
            while True:
                msg, payload = await out_q.get()
                await websocket.send_json(msg)
                if payload is not None:
                    await websocket.send_bytes(np.ascontiguousarray(payload, dtype=np.uint8).tobytes())
                    loop.taken(sid)
                if msg["type"] == "end":
                    return

        async def pump_in() -> None:
            while True:  # ends with the client (WebSocketDisconnect); a bad message never ends it
                try:
                    msg = await _receive_json(websocket)
                    if not isinstance(msg, dict):
                        raise ValueError(f"control messages must be JSON objects, got {type(msg).__name__}")
                    await asyncio.wrap_future(loop.call(functools.partial(loop.control, sid, msg)))
                except WebSocketDisconnect:
                    raise
                except Exception as e:  # noqa: BLE001 - reported to the client; the session goes on
                    text = str(e) if isinstance(e, (ValueError, KeyError)) else f"{type(e).__name__}: {e}"
                    # through the sender's queue: it is the socket's one writer, so an error never
                    # lands between a block's header and its bytes
                    out_q.put_nowait(({"type": "error", "message": text}, None))

        sender = asyncio.create_task(pump_out())
        receiver = asyncio.create_task(pump_in())
        try:
            await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            receiver.cancel()
            if not sender.done():  # client went away: stop generating for it
                sender.cancel()
                loop.call(functools.partial(loop.end, sid))
            with contextlib.suppress(Exception):
                await websocket.close()

    if gradio:
        import gradio as gr

        app = gr.mount_gradio_app(app, build_demo(loop, loaded), path="/demo")
    return app


def build_demo(loop: EngineLoop, loaded: Any) -> Any:
    """A small Gradio page: prompt, action buttons, live frames."""
    import gradio as gr

    engine = loop.engine
    actions = list(getattr(loaded, "actions", ()) or [])

    def start(prompt: str, seconds: float, seed: float, action: str | None):  # noqa: ANN202
        q: queue.Queue = queue.Queue()

        params = start_params({"prompt": prompt, "num_blocks": loaded.blocks_for_seconds(seconds), "seed": seed,
                               "action": action or None}, engine.config)
        sid = loop.call(functools.partial(loop.admit, lambda m, p: q.put((m, p)), **params)).result(timeout=60)
        while True:
            msg, frames = q.get()
            if frames is not None:
                loop.taken(sid)
                big = frames[-1].repeat(max(1, 256 // frames.shape[1]), 0).repeat(max(1, 256 // frames.shape[2]), 1)
                yield sid, big, f"block {msg['index']} action={msg['action']} prompt={msg['prompt']!r}"
            if msg["type"] == "end":
                yield sid, gr.skip(), f"{msg['state']}" + (f": {msg['error']}" if msg.get("error") else "")
                return

    def act(sid: str, action: str) -> str:
        if not sid:
            return "start a session first"
        try:
            loop.call(lambda: engine.set_action(sid, action)).result(timeout=30)
        except (ValueError, KeyError) as e:
            return str(e)
        return f"next block: {action}"

    with gr.Blocks(title="Inferix demo") as demo:
        gr.Markdown(f"# Inferix — {getattr(loaded, 'name', 'model')}\nFrames stream in as blocks are decoded.")
        sid = gr.State("")
        with gr.Row():
            prompt = gr.Textbox(label="prompt", value="a red ball rolls")
            seconds = gr.Slider(1, 60, value=5, label="seconds")
            seed = gr.Number(0, label="seed")
            first = gr.Dropdown(actions, value=actions[0] if actions else None, label="first action")
        go = gr.Button("Generate")
        frame = gr.Image(label="live", type="numpy")
        status = gr.Textbox(label="status")
        with gr.Row():
            for a in actions:
                gr.Button(a).click(lambda s, a=a: act(s, a), inputs=[sid], outputs=[status])
        go.click(start, inputs=[prompt, seconds, seed, first], outputs=[sid, frame, status])
    return demo


def serve(engine: Any, loaded: Any, host: str = "127.0.0.1", port: int = 8000, gradio: bool = True,
          idle_timeout_s: float | None = 300.0) -> None:
    """Run the server until interrupted."""
    import uvicorn

    uvicorn.run(create_app(engine, loaded, gradio=gradio, idle_timeout_s=idle_timeout_s), host=host, port=port,
                log_level="info")
