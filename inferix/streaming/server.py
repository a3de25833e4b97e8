"""``inferix serve``: stream frames to clients over WebSocket, take actions back; HTTP control; Gradio demo.

One thread owns the engine (:class:`EngineLoop`): it steps the engine, hands each decoded
block to the session's subscriber and runs commands (add / control / cancel) between steps,
so the engine itself needs no locks. Back-pressure: a session whose client has not taken
``max_ahead`` blocks yet is paused until it does (a slow client does not make the server
run away with memory, and its actions take effect within ``max_ahead`` blocks).

WebSocket protocol (``/ws``)::

    client -> {"prompt": "...", "seed": 0, "num_blocks": 8 | null, "action": "forward"}   (first message)
    server -> {"type": "session", "session_id": "s0", "fps": 16, "height": H, "width": W}
    server -> {"type": "block", "index": i, "frames": T, "height": H, "width": W,
               "prompt": ..., "action": ..., "timings": {...}}
              followed by one binary message: uint8 [T, H, W, 3] RGB, C order
    client -> {"action": "left"} | {"prompt": "..."} | {"pause": true} | {"resume": true} | {"cancel": true}
              (any time; applied from the next block that has not started)
    server -> {"type": "error", "message": ...}     (bad control message; the session goes on)
    server -> {"type": "end", "state": "finished|cancelled|failed", "error": ...}

HTTP: ``GET /health``, ``GET /sessions``, ``POST /sessions/{id}/control`` (same JSON as the
WebSocket control messages), ``DELETE /sessions/{id}``. Gradio demo page: ``/demo``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

# fastapi resolves endpoint annotations from module globals (postponed annotations), so its
# types are imported here; this module is only imported by `inferix serve`.
from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect

logger = logging.getLogger(__name__)


class EngineLoop:
    """Runs an engine in a background thread; other threads talk to it through :meth:`call`.

    Args:
        engine: the :class:`~inferix.engine.Engine`.
        max_ahead: blocks a session may generate beyond what its subscriber has taken.
    """

    def __init__(self, engine: Any, max_ahead: int = 2) -> None:
        self.engine = engine
        self.max_ahead = max_ahead
        self._cmds: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future]] = queue.Queue()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._subs: dict[str, Callable[[dict[str, Any], Any], object]] = {}
        self._pending: dict[str, int] = {}  # blocks handed out and not yet taken by the client
        self._held: set[str] = set()  # sessions paused by back-pressure (not by the user)
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

    def subscribe(self, session_id: str, callback: Callable[[dict[str, Any], Any], object]) -> None:
        """Deliver ``(message, payload)`` of a session to ``callback`` (called on the engine thread)."""
        self._subs[session_id] = callback
        self._pending[session_id] = 0

    def taken(self, session_id: str) -> None:
        """The client took one block (thread-safe): may lift back-pressure."""
        self.call(lambda: self._taken(session_id))

    def _taken(self, session_id: str) -> None:
        self._pending[session_id] = max(0, self._pending.get(session_id, 0) - 1)
        if session_id in self._held and self._pending[session_id] < self.max_ahead:
            self._held.discard(session_id)
            s = self.engine.sessions.get(session_id)
            if s is not None and not s.state.done:
                self.engine.resume(session_id)

    def _run(self) -> None:
        from inferix.scheduler import SessionState

        announced: set[str] = set()
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
            runnable = any(s.slot.runnable for s in self.engine.sessions.values())
            if runnable:
                try:
                    self.engine.step()
                except Exception:
                    logger.exception("engine step failed")
            for sid, s in list(self.engine.sessions.items()):
                cb = self._subs.get(sid)
                if cb is None:
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
                if s.state.done and sid not in announced:
                    announced.add(sid)
                    cb({"type": "end", "state": s.state.value, "error": s.error}, None)
                    self._subs.pop(sid, None)
            if not runnable:
                self._wake.wait(0.05)
                self._wake.clear()


def _control(engine: Any, sid: str, msg: dict[str, Any]) -> dict[str, Any]:
    """Apply a control message on the engine thread."""
    known = {"action", "prompt", "pause", "resume", "cancel"}
    unknown = set(msg) - known - {"type"}
    if unknown:
        raise ValueError(f"unknown control field(s) {sorted(unknown)}; use {sorted(known)}")
    if "prompt" in msg:
        engine.set_prompt(sid, str(msg["prompt"]))
    if "action" in msg:
        engine.set_action(sid, msg["action"])
    if msg.get("pause"):
        engine.pause(sid)
    if msg.get("resume"):
        engine.resume(sid)
    if msg.get("cancel"):
        engine.cancel(sid)
    return {"ok": True}


def create_app(engine: Any, loaded: Any = None, max_ahead: int = 2, gradio: bool = False) -> Any:
    """The FastAPI app (engine loop started/stopped with the app's lifespan)."""
    import contextlib

    import numpy as np

    loop = EngineLoop(engine, max_ahead=max_ahead)
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
            return loop.call(lambda: _control(engine, sid, msg)).result(timeout=30)
        except KeyError as e:
            raise HTTPException(404, str(e)) from None
        except ValueError as e:
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
        try:
            start = await websocket.receive_json()
        except (WebSocketDisconnect, ValueError):
            return
        if not isinstance(start, dict):
            await websocket.send_json({"type": "error", "message": "first message must be a JSON object"})
            await websocket.close()
            return

        def add() -> str:
            sid = engine.add_session(str(start.get("prompt", "")), num_blocks=start.get("num_blocks"),
                                     seed=int(start.get("seed", 0)), action=start.get("action"))
            loop.subscribe(sid, lambda m, p: aloop.call_soon_threadsafe(out_q.put_nowait, (m, p)))
            return sid

        try:
            sid = await asyncio.wrap_future(loop.call(add))
        except (ValueError, TypeError) as e:
            await websocket.send_json({"type": "error", "message": str(e)})
            await websocket.close()
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
            while True:
                msg = await websocket.receive_json()
                try:
                    if not isinstance(msg, dict):
                        raise ValueError("control messages must be JSON objects")
                    await asyncio.wrap_future(loop.call(functools.partial(_control, engine, sid, msg)))
                except (ValueError, KeyError, TypeError) as e:
                    await websocket.send_json({"type": "error", "message": str(e)})

        sender = asyncio.create_task(pump_out())
        receiver = asyncio.create_task(pump_in())
        try:
            await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            receiver.cancel()
            if not sender.done():  # client went away: stop generating for it
                sender.cancel()
                loop.call(lambda: engine.cancel(sid) if not engine.session(sid).state.done else None)
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

        def add() -> str:
            sid = engine.add_session(prompt, num_blocks=loaded.blocks_for_seconds(seconds), seed=int(seed),
                                     action=action or None)
            loop.subscribe(sid, lambda m, p: q.put((m, p)))
            return sid

        sid = loop.call(add).result(timeout=60)
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


def serve(engine: Any, loaded: Any, host: str = "127.0.0.1", port: int = 8000, gradio: bool = True) -> None:
    """Run the server until interrupted."""
    import uvicorn

    uvicorn.run(create_app(engine, loaded, gradio=gradio), host=host, port=port, log_level="info")
