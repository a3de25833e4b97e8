"""Model adapters: anything that turns a Case into a Video (see ``base.WorldModel``)."""

from worldolympiad.models.base import ChunkControl, ModelError, VideoChunk, WorldModel, build_model, controls_for

__all__ = ["ChunkControl", "ModelError", "VideoChunk", "WorldModel", "build_model", "controls_for"]
