"""Frames out as they are decoded: mp4 writing per block, an HTTP/WebSocket server
(``inferix serve``) with a Gradio demo page. ``Engine.stream`` is the in-process API."""

from inferix.streaming.mp4 import Mp4Writer

__all__ = ["Mp4Writer"]
