"""Object segmentation backends behind one interface.

* :class:`OpenCVSegmenter` (default, model-free): foreground = pixels that differ from the
  video's temporal-median background (motion) **or** match a known object colour (from the
  case's ``physics.objects`` or learned from the reference video), split into connected
  components.
* :class:`SAMSegmenter`: segment-anything from a local checkpoint (vit_b / vit_l / vit_h or a
  smaller model built from the same classes). Prompted by the case's object boxes/points
  (each frame re-prompted with the box of the previous frame's mask), or automatic masks.

Both return a :class:`Segmentation`: one label map per frame (``int32 [T, H, W]``, 0 =
background). Labels are per frame; :mod:`tracks.physics.tracking` links them into tracks.
Masks under ``min_area_frac`` of the frame (default 0.1 %, at least 4 px) are dropped and
at most ``max_objects`` masks are kept per frame. The published protocol uses 0.5 %, which
drops the small objects of low-resolution simulator renders; pass ``min_area_frac=0.005``
to reproduce it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from worldolympiad.weights import read_state_dict

logger = logging.getLogger(__name__)


@dataclass
class Segmentation:
    """Per-frame instance masks as label maps.

    Attributes:
        labels: ``int32 [T, H, W]``; 0 is background, ``k > 0`` an instance in that frame.
        names: per frame, label → object name hint (``""`` when the backend does not know it).
        backend: which segmenter produced it.
        noise: the video's noise floor as the segmenter measured it (0 when it did not).
        found_by: per object name, how many of its masks (over all frames) were found by its
            colour (``"colour"``) or where the frame departs from the background (``"motion"``: a
            body whose colour is that of its surroundings, or that a lossy encoding blurred into
            them).
    """

    labels: np.ndarray  # int32 [T, H, W]
    names: list[dict[int, str]] = field(default_factory=list)
    backend: str = ""
    noise: float = 0.0  # median Lab departure from the background: the video's noise floor
    found_by: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def num_frames(self) -> int:
        return int(self.labels.shape[0])

    def instances(self, t: int) -> list[int]:
        """Labels present in frame ``t`` (sorted)."""
        ids = np.unique(self.labels[t])
        return [int(i) for i in ids if i != 0]


class Segmenter:
    """Base class: :meth:`segment` turns frames into a :class:`Segmentation`."""

    name: str = "segmenter"

    def segment(self, frames: np.ndarray, objects: Sequence[Mapping[str, Any]] = ()) -> Segmentation:
        """Segment ``frames`` (``uint8 [T, H, W, 3]``).

        Args:
            frames: RGB video.
            objects: optional hints, each ``{"name", "color"?: [r, g, b], "box"?: [x0, y0, x1, y1],
                "point"?: [x, y]}`` (box/point in pixels of the first frame).
        """
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


def _check_frames(frames: np.ndarray) -> None:
    if not isinstance(frames, np.ndarray) or frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(
            f"segment() needs uint8 frames [T, H, W, 3], got dtype={getattr(frames, 'dtype', None)} "
            f"shape={getattr(frames, 'shape', None)}; decode with worldolympiad.video.io.read_video"
        )


def rgb_to_lab(frames: np.ndarray) -> np.ndarray:
    """``uint8 [..., 3]`` RGB → float32 CIE Lab (L in 0..100) via OpenCV."""
    import cv2

    shape = frames.shape
    flat = frames.reshape(-1, 1, 3).astype(np.float32) / 255.0
    return cv2.cvtColor(flat, cv2.COLOR_RGB2Lab).reshape(shape)


def _components(mask: np.ndarray, min_area: int, max_area: int) -> list[np.ndarray]:
    """Connected components of a boolean mask whose area is within [min_area, max_area]."""
    import cv2

    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    out = []
    for k in range(1, n):
        a = int(stats[k, cv2.CC_STAT_AREA])
        if min_area <= a <= max_area:
            out.append(lab == k)
    return out


def _fill_pattern(mask: np.ndarray, kernel: np.ndarray, max_hull: float) -> np.ndarray:
    """``mask`` with the gaps of each component of body size closed within its own convex hull.

    A printed or checkered body matches its declared colour only in its pattern's squares, which
    touch at their corners (one 8-connected component); closing (``kernel``) fills the other
    squares in. Bounding the fill by each component's convex hull keeps the closing from bridging
    a body to nearby scenery of its colour (bricks beside a tan box): separate components are
    never joined. A component whose hull exceeds ``max_hull`` pixels (twice the body's declared
    box) is no body — a wood floor is patterned too — and is left as it is."""
    import cv2

    closed = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_CLOSE, kernel) > 0
    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    hulls = np.zeros(mask.shape, np.uint8)
    for i in range(1, n):
        if stats[i, cv2.CC_STAT_AREA] < 4 or stats[i, cv2.CC_STAT_AREA] > max_hull:
            continue
        hull = cv2.convexHull(cv2.findNonZero((lab == i).astype(np.uint8)))
        if cv2.contourArea(hull) <= max_hull:
            cv2.fillConvexPoly(hulls, hull, 1)
    return mask | (closed & (hulls > 0))


#: share of a piece's pixels that must have the body's colour for it to be joined to the body.
JOIN_COLOURED = 0.1
#: a piece this share of the body's declared box or larger is the whole body: nothing is joined
#: to it (a tan box beside a tan brick).
JOIN_WHOLE = 0.5


def _join_pieces(mask: np.ndarray, max_hull: float, coloured: np.ndarray | None = None) -> np.ndarray:
    """``mask`` with pieces of one body joined: components whose joint convex hull stays within
    ``max_hull`` pixels (the body's declared box) become that hull. A two-tone ball matches its
    colour in two diagonal quadrants that touch at a point or not at all; over a floor the other
    two quadrants are no colour of it, so the ball was two bodies of one name, each a quarter of
    it, and its centroid jumped between them; the opening cuts a crescent's one-pixel middle.
    Pieces farther apart than one body are never joined (a second brick of a tan box's colour is
    a box away). Only pieces with at least :data:`JOIN_COLOURED` of their pixels in ``coloured``
    (the body's colour itself, not motion toward it) are joined: a moving blob beside a small ball
    at its landing, none of it the ball's colour, is the codec's ghost, not the ball's other half
    (a two-tone ball's pale quadrant, found by its motion, still holds a fifth of blue pixels)."""
    import cv2

    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    if n <= 2:
        return mask
    if coloured is not None:
        ok = [i for i in range(1, n) if coloured[lab == i].mean() >= JOIN_COLOURED]
        if len(ok) <= 1:
            return mask
    else:
        ok = list(range(1, n))
    order = sorted(ok, key=lambda i: -int(stats[i, cv2.CC_STAT_AREA]))
    if stats[order[0], cv2.CC_STAT_AREA] >= JOIN_WHOLE * max_hull:
        return mask  # the body is whole already: what lies beside it is scenery of its colour
    order = [i for i in order if stats[i, cv2.CC_STAT_AREA] >= 4]
    points = {i: cv2.findNonZero((lab == i).astype(np.uint8)) for i in order}  # each piece's pixels, once
    used: set[int] = set()
    out = mask.copy()
    for i in order:
        if i in used:
            continue
        group = [i]
        pts = points[i]
        for j in order:
            if j == i or j in used:
                continue
            both = np.concatenate([pts, points[j]])
            if cv2.contourArea(cv2.convexHull(both)) <= max_hull:
                group.append(j)
                pts = both
        if len(group) > 1:
            used.update(group)
            hull = np.zeros(mask.shape, np.uint8)
            cv2.fillConvexPoly(hull, cv2.convexHull(pts), 1)
            out |= hull > 0
    return out


def _size_cap(obj: Mapping[str, Any], frame_area: int) -> float:
    """Largest mask (pixels) a declared object can have: four times its declared box for a rigid
    body, 1.5 times for a shrinking one, nothing for any other body (one with a ``shape``, ``rigid: true``, or ``shrinks: true`` — the ice that
    melts; a body that spreads or grows has no such bound). A larger region of its colour (a grey
    floor like a stone ball, a pale plate like an ice cube) is found only where it also moves."""
    box = obj.get("box")
    if box is None or not (obj.get("shape") or obj.get("rigid") is True or obj.get("shrinks") is True):
        return float(frame_area)
    x0, y0, x1, y1 = (float(v) for v in box)
    # A shrinking body never exceeds its first-frame box (1.5x for its loose fit); a rigid one
    # may come nearer the camera.
    factor = 4.0 if (obj.get("shape") or obj.get("rigid") is True) else 1.5
    return max(factor * max(x1 - x0, 1.0) * max(y1 - y0, 1.0), 16.0)


def _paint(shape: tuple[int, int], instances: list[tuple[np.ndarray, str]], max_objects: int,
           rank: list[float] | None = None) -> tuple[np.ndarray, dict[int, str]]:
    """Paint instance masks into one label map: largest first, so smaller (front) masks stay visible.

    With more than ``max_objects`` instances, each named object's lowest-``rank`` instance is
    kept first, then the others by ``rank`` (default: the largest are kept).
    """
    if rank is not None and len(instances) > max_objects:
        best: dict[str, int] = {}
        for i, (_, n) in enumerate(instances):
            if n and (n not in best or rank[i] < rank[best[n]]):
                best[n] = i
        order = sorted(range(len(instances)), key=lambda i: (best.get(instances[i][1]) != i, rank[i]))
        instances = [instances[i] for i in sorted(order[:max_objects])]
    instances = sorted(instances, key=lambda m: -int(m[0].sum()))[:max_objects]
    labels = np.zeros(shape, np.int32)
    names: dict[int, str] = {}
    for k, (m, name) in enumerate(instances, start=1):
        labels[m] = k
        names[k] = name
    # drop labels fully painted over
    present = set(np.unique(labels).tolist())
    return labels, {k: v for k, v in names.items() if k in present}


#: the motion threshold is at least this many times the video's median departure from its
#: background (its compression noise floor).
NOISE_FACTOR = 5.0
#: weight of Lab's chroma axes against lightness when a moving pixel is named by its colour:
#: 4:2:0 encodings keep full-resolution lightness but blur chroma over 2x2 pixels, so a small
#: object's hue bleeds into its surroundings while its lightness stays.
CHROMA_WEIGHT = 0.5
#: the least Lab departure from the background that counts as motion toward a declared colour
#: over a background of nearly that colour (a silver body over a grey floor)
FAINT_THRESHOLD = 6.0
#: a rigid body's colour mask with under this share of its pixels moving is static scenery of
#: its colour (once the body is seen moving), unless it lies where the body was seen moving
STATIC_SHARE = 0.2
#: below this frame size (short side, pixels) static scenery of a body's colour is not told from
#: the body (a body of a few pixels in a tiny render has too few moving pixels to tell)
SCENERY_MIN_SIDE = 64
#: a bounded body's colour region larger than its bound in this many frames (or a tenth of the
#: video) is shared with the scenery: the body is named by the half threshold in every frame
SHARED_COLOUR_FRAMES = 3
#: below this frame size (short side, pixels) rigid bodies' masks are not opened morphologically.
OPENING_MIN_SIDE = 96


class OpenCVSegmenter(Segmenter):
    """Model-free segmentation: temporal-median background subtraction + object colours.

    Args:
        arg: ignored (registry spec ``opencv``).
        motion_threshold: Lab distance from the median background that counts as foreground.
        color_threshold: Lab distance to an object's colour that counts as that object.
        min_area_frac: smallest mask kept, as a fraction of the frame (the published protocol: 0.005).
        max_area_frac: largest mask kept (bigger ones are background regions, lighting changes).
        max_objects: most masks kept per frame.
    """

    name = "opencv"

    def __init__(
        self,
        arg: str | None = None,
        *,
        motion_threshold: float = 18.0,
        color_threshold: float = 22.0,
        min_area_frac: float = 0.001,
        max_area_frac: float = 0.3,
        max_objects: int = 4,
        **_: Any,
    ) -> None:
        self.motion_threshold = float(motion_threshold)
        self.color_threshold = float(color_threshold)
        self.min_area_frac = float(min_area_frac)
        self.max_area_frac = float(max_area_frac)
        self.max_objects = int(max_objects)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "motion_threshold": self.motion_threshold,
            "color_threshold": self.color_threshold,
            "min_area_frac": self.min_area_frac,
            "max_objects": self.max_objects,
        }

    def _moving_match(self, lab: np.ndarray, bg: np.ndarray, obj_labs: list[tuple[str, np.ndarray]],
                      moving: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Moving pixels named by a declared colour although they are not within the colour threshold.

        A lossy 4:2:0 encoding pulls a small object's hue toward its surroundings (a 4-pixel purple
        ball decodes 30-70 Lab units away from its colour at CRF 23). A pixel that departs from the
        background (``moving``) still belongs to the declared object whose colour it is nearest,
        when that colour is nearer than the background it departs from, with chroma down-weighted
        (:data:`CHROMA_WEIGHT`) and within three colour thresholds.

        Returns:
            ``bool [H, W]`` pixels so named and ``int [H, W]`` the index of their object.
        """
        w = np.array([1.0, CHROMA_WEIGHT, CHROMA_WEIGHT], np.float32)
        d_obj = np.stack([np.linalg.norm((lab - c) * w, axis=-1) for _, c in obj_labs])  # [n, H, W]
        d_bg = np.linalg.norm((lab - bg) * w, axis=-1)
        k = d_obj.argmin(axis=0)
        best = d_obj.min(axis=0)
        return moving & (best < d_bg) & (best < 3 * self.color_threshold), k

    @staticmethod
    def _ghost(comp: np.ndarray, lab: np.ndarray, bg: np.ndarray, colours: list[np.ndarray]) -> bool:
        """Whether an unnamed moving mask is the ghost of a shaped body's resting place: the still
        background (the per-pixel median) holds a tint of the body there, nearer its colour than
        the background around it by :data:`FAINT_THRESHOLD`, and the frame departs from it *away*
        from that colour by as much. Where a body rests or bounces in half the frames, the median
        holds it; a codec washes its colour there beyond the colour threshold that names the
        ghost otherwise (a blue ball on a grey floor at crf 35), and the tracker gave the ball's
        name to the ghost's still track when the ball landed on it: a ball "resting" on the floor
        before its fall (physics v18). Distances weigh chroma by :data:`CHROMA_WEIGHT`."""
        import cv2

        if not colours:
            return False
        w = np.array([1.0, CHROMA_WEIGHT, CHROMA_WEIGHT], np.float32)
        ring = cv2.dilate(comp.astype(np.uint8), np.ones((5, 5), np.uint8), iterations=2).astype(bool) & ~comp
        for c in colours:
            inside = float(np.linalg.norm((bg[comp] - c) * w, axis=-1).mean())
            around = float(np.linalg.norm((bg[ring] - c) * w, axis=-1).mean()) if ring.any() else inside
            frame = float(np.linalg.norm((lab[comp] - c) * w, axis=-1).mean())
            if inside + FAINT_THRESHOLD < around and frame > inside + FAINT_THRESHOLD:
                return True
        return False

    def _shares_colour(self, lab: np.ndarray, obj_labs: list[tuple[str, np.ndarray]], size_cap: list[float],
                       max_area: int, min_area: int, still: np.ndarray | None = None) -> list[bool]:
        """Per declared colour: whether it is a bounded body's (``size_cap`` under ``max_area``) whose
        colour the scenery shares: the video's still background (its per-pixel median) holds more
        pixels of it (within the colour threshold) than that bound, in any number of pieces (a
        checkerboard whose squares a codec parted at their corners), or one region of it exceeds
        the bound in at least :data:`SHARED_COLOUR_FRAMES` frames (or a tenth of them). ``still``: that
        median when the caller has it (:meth:`segment` does), else computed here."""
        T = len(lab)
        need = max(SHARED_COLOUR_FRAMES, T // 10)
        if need > T:
            still = None
        elif still is None:
            still = np.median(lab, axis=0)
        out = []
        for (_, c), cap in zip(obj_labs, size_cap, strict=True):
            if cap >= max_area or still is None:
                out.append(False)
                continue
            if int((np.linalg.norm(still - c, axis=-1) < self.color_threshold).sum()) > cap:
                out.append(True)
                continue
            n = 0
            for t in range(T):
                m = np.linalg.norm(lab[t] - c, axis=-1) < self.color_threshold
                if any(int(comp.sum()) > cap for comp in _components(m, min_area, m.size)):
                    n += 1
                    if n >= need:
                        break
            out.append(n >= need)
        return out

    @staticmethod
    def _scenery_anchors(found: list[list[list[tuple[np.ndarray, float, str]]]], motion: np.ndarray,
                         shaped: list[bool]) -> dict[tuple[int, int], np.ndarray]:
        """Where a still mask of a shaped body's colour may be the body, per (object, frame).

        Static scenery of a body's colour (bricks, planks behind a tan box) never moves. Once the
        body is seen moving (a mask of its with at least :data:`STATIC_SHARE` of its pixels
        moving, in two frames or more), a still mask of its colour is the body only near where
        the body was last (or is next) seen moving: within its radius plus its step there (a body
        at rest moved into place or will move off it). In a frame where the body moves, no
        still mask of its colour is the body (a brick beside the falling box). Objects absent
        from the result (never seen moving, or with no declared ``shape``: a stage such as a pot
        beside steam) keep every mask.
        """
        import cv2

        out: dict[tuple[int, int], np.ndarray] = {}
        T = len(found)
        for k, shape in enumerate(shaped):
            if not shape:
                continue
            moving: dict[int, np.ndarray] = {}
            for t in range(T):
                ms = [c for c, _, _ in found[t][k] if motion[t][c].mean() >= STATIC_SHARE]
                if ms:
                    moving[t] = np.logical_or.reduce(ms)
            with_body = np.array(sorted(moving))
            if len(with_body) < 2:
                continue
            cen = {int(u): np.argwhere(moving[int(u)]).mean(axis=0) for u in with_body}
            for t in range(T):
                i = int(np.abs(with_body - t).argmin())
                near_t = int(with_body[i])
                if near_t == t:
                    out[(k, t)] = np.zeros_like(moving[t])
                    continue
                j = int(with_body[i - 1 if i > 0 else i + 1])
                step = float(np.linalg.norm(cen[near_t] - cen[j])) / max(abs(near_t - j), 1)
                reach = 2.0 + step + float(np.sqrt(moving[near_t].sum() / np.pi))
                away = cv2.distanceTransform((~moving[near_t]).astype(np.uint8), cv2.DIST_L2, 3)
                out[(k, t)] = away <= reach
        return out

    def segment(self, frames: np.ndarray, objects: Sequence[Mapping[str, Any]] = ()) -> Segmentation:
        import cv2

        _check_frames(frames)
        T, H, W, _ = frames.shape
        lab = rgb_to_lab(frames)  # [T, H, W, 3]
        min_area = max(4, int(round(self.min_area_frac * H * W)))
        max_area = int(self.max_area_frac * H * W)
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
        close_kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
        # Opening clears one-pixel speckle, but below ~96 px a rigid body can itself be 3 px wide
        # (a ball in a downscaled upload) and would be erased; there the area floor alone drops
        # its speckle. Amorphous bodies (dye, steam, fire) keep the opening: their ragged edges
        # are the speckle.
        opening = min(H, W) >= OPENING_MIN_SIDE

        # Motion: a static camera sees moving objects as departures from the per-pixel median. The
        # threshold rises with the video's own noise floor (compression noise in a lossy encoding).
        motion = np.zeros((T, H, W), bool)
        noise = 0.0
        if T >= 3:
            bg = np.median(lab, axis=0)  # [H, W, 3]
            diff = np.linalg.norm(lab - bg[None], axis=-1)
            noise = float(np.median(diff))
            motion = diff > max(self.motion_threshold, NOISE_FACTOR * noise)
        # Pixels that depart from the background in two frames or more: not permanent scenery. A
        # body's resting place is (its absence there before it arrives); a brick of its colour is
        # not, though a codec's flicker may lift it over the threshold in a frame.
        varied = motion.sum(axis=0) >= 2

        colored = [(str(o.get("name", f"object{i}")), np.asarray(o["color"], np.uint8))
                   for i, o in enumerate(objects) if o.get("color") is not None]
        obj_labs = [(n, rgb_to_lab(c.reshape(1, 1, 3))[0, 0]) for n, c in colored]
        size_cap = [_size_cap(o, H * W) for o in objects if o.get("color") is not None]
        rigid_body = [bool(o.get("shape") or o.get("rigid") is True) for o in objects if o.get("color") is not None]
        # bodies with a declared shape: the mechanics rules' subjects (not a stage like the pot)
        shaped = [bool(o.get("shape")) for o in objects if o.get("color") is not None]
        # A body declared to grow (frost over a window) may cover most of the frame.
        grows = [bool(o.get("grows")) for o in objects if o.get("color") is not None]

        faint = np.zeros((T, H, W), bool)
        if T >= 3 and obj_labs:
            # Ghosts: where an object rests for most of the video the median background holds the
            # object itself, so its absence there looks like motion: the frame departs from a
            # background of the object's colour *away* from that colour. A body passing over a
            # floor of nearly its own colour (a silver plate on grey) departs *toward* its colour
            # and stays.
            toward = np.zeros((T, H, W), bool)
            ghost = np.zeros((H, W), bool)
            for k, (_, c) in enumerate(obj_labs):
                d_bg = np.linalg.norm(bg - c, axis=-1)
                g = d_bg < self.color_threshold
                ghost |= g
                if shaped[k]:
                    # Only a body with a declared shape moves over its floor; toward a stage's
                    # colour (a glass) is that stage showing where a body that later rests on
                    # it (a droplet) is not there yet: a ghost.
                    toward |= g[None] & (np.linalg.norm(lab - c, axis=-1) < d_bg[None] - FAINT_THRESHOLD / 2)
            # Faint motion: such a body departs from the background by less than the motion
            # threshold (lightness and texture only). Below the threshold, a departure of at least
            # FAINT_THRESHOLD (and several times the video's own noise, measured where anything
            # differs from the background) counts where it is toward a declared colour.
            floor = 3.0 * float(np.percentile(diff, 90))
            faint = toward & (diff > max(FAINT_THRESHOLD, NOISE_FACTOR * noise, floor))
            motion = (motion & ~ghost[None]) | faint

        # A bounded body (rigid, shaped or shrinking) whose colour region outgrows its bound in
        # several frames shares its colour with the scenery (an ice cube on a pale plate): in
        # every frame only the half threshold names it, not just where the two touch, so the
        # frames where the plate is cut into pieces (by the melt water) or only just under the
        # bound do not lend it the plate.
        shares = self._shares_colour(lab, obj_labs, size_cap, max_area, min_area, bg if T >= 3 else None)

        # found[t][k]: object k's masks in frame t, with their mean colour distance
        found: list[list[list[tuple[np.ndarray, float, str]]]] = []
        for t in range(T):
            found.append([])
            # Colour prompts first: they name the instance and survive when the object is at rest.
            # Each pixel goes to the nearest declared colour (within the threshold), so objects of
            # similar colours (a crystal and the solution it tints) split where they differ most.
            if obj_labs:
                dist = np.stack([np.linalg.norm(lab[t] - c, axis=-1) for _, c in obj_labs])  # [n, H, W]
                nearest = dist.argmin(axis=0)
                close = dist.min(axis=0) < self.color_threshold
                if T >= 3:
                    moving_named, k_moving = self._moving_match(lab[t], bg, obj_labs, motion[t])
                    nearest = np.where(moving_named, k_moving, nearest)
                    close |= moving_named
            for k in range(len(obj_labs)):
                m = close & (nearest == k)
                if shaped[k]:
                    # A textured body (a printed box, a checkered plate) matches its colour only in
                    # its pattern's squares, a pixel or two apart: they are filled in before the
                    # opening would erase them as speckle (see _fill_pattern).
                    m = _fill_pattern(m, close_kernel, size_cap[k] / 2)
                if opening or not rigid_body[k]:
                    m = cv2.morphologyEx(m.astype(np.uint8), cv2.MORPH_OPEN, kernel) > 0
                if shaped[k] and size_cap[k] < H * W:
                    # One body, one mask: pieces the pattern or the opening left apart (a two-tone
                    # ball's quadrants, a crescent's thin middle) are joined within its box.
                    m = _join_pieces(m, size_cap[k] / 4, dist[k] < self.color_threshold)
                comps = _components(m, min_area, H * W)
                by_motion: list[np.ndarray] = []  # masks found where the colour moves
                # An object coloured like a large background region (steam against a pale wall)
                # is found where its colour *also* moves.
                cap = min(max_area, size_cap[k])
                big = [c for c in comps if c.sum() > cap or shares[k]]
                comps = [c for c in comps if c.sum() <= cap and not shares[k]]
                if big and grows[k]:
                    # A growing body (frost over a window) is where the frame has changed since the
                    # start; it may cover most of the frame.
                    changed = np.linalg.norm(lab[t] - lab[0], axis=-1) > self.motion_threshold
                for c in big:
                    if grows[k]:
                        comps += _components(c & changed, min_area, H * W)
                    elif size_cap[k] < max_area:
                        # Too big for a body that cannot grow (an ice cube on a pale plate, a
                        # crystal in the solution it tints): its own pixels are those nearest its
                        # colour, at half the threshold.
                        half = _components(c & (dist[k] < self.color_threshold / 2), min_area, int(size_cap[k]))
                        comps += half
                        if rigid_body[k] and T >= 3 and not any((h & motion[t]).any() for h in half):
                            # A body over a floor of nearly its own colour (silver on grey): the
                            # half threshold still joins the floor, so the body is where this
                            # colour moves; closing bridges the patches where it passes over a
                            # square of exactly its lightness.
                            moved = cv2.morphologyEx((c & motion[t]).astype(np.uint8), cv2.MORPH_CLOSE, close_kernel) > 0
                            by_motion += _components(moved & c, min_area, int(size_cap[k]))
                    else:
                        by_motion += _components(c & motion[t], min_area, max_area)
                # a mask most of whose pixels are named by motion, not by the colour threshold,
                # was found by motion too
                found[t].append(
                    [(comp, float(dist[k][comp].mean()),
                      "motion" if float((dist[k][comp] >= self.color_threshold).mean()) > 0.5 else "colour") for comp in comps]
                    + [(comp, float(dist[k][comp].mean()), "motion") for comp in by_motion])

        anchor = self._scenery_anchors(found, motion, shaped) if T >= 3 and min(H, W) >= SCENERY_MIN_SIDE else {}
        shaped_colours = [c for k, (_, c) in enumerate(obj_labs) if shaped[k]]  # whose ghosts are dropped
        labels = np.zeros((T, H, W), np.int32)
        names: list[dict[int, str]] = []
        found_by: dict[str, dict[str, int]] = {}
        for t in range(T):
            taken = np.zeros((H, W), bool)
            inst: list[tuple[np.ndarray, str]] = []
            # Which masks to keep when there are more than max_objects: each declared colour's
            # closest match, then the other colour matches by how close their mean colour is (a
            # pale wall a little like a steel block must not crowd out the block), then motion
            # blobs by size.
            rank: list[float] = []
            how: list[str] = []
            for k, (name, _) in enumerate(obj_labs):
                a = anchor.get((k, t))
                for comp, d, h in found[t][k]:
                    if a is not None:
                        if motion[t][comp].mean() < STATIC_SHARE:
                            if a[comp].mean() < STATIC_SHARE:
                                continue  # static scenery of the body's colour
                        else:
                            # the moving body without the still bricks of its colour it touches;
                            # where it passes over its own resting place (no motion there: the
                            # background holds the body) it keeps those pixels
                            moved = comp & (cv2.dilate(motion[t].astype(np.uint8), kernel).astype(bool) | varied)
                            comp = max(_components(moved, 1, H * W), key=lambda c: int(c.sum()), default=comp)
                    inst.append((comp, name))
                    rank.append(d)
                    how.append(h)
                    taken |= comp
            rest = motion[t] & ~cv2.dilate(taken.astype(np.uint8), kernel).astype(bool)
            rest = cv2.morphologyEx(rest.astype(np.uint8), cv2.MORPH_OPEN, kernel) > 0
            for comp in _components(rest, min_area, max_area):
                if T >= 3 and self._ghost(comp, lab[t], bg, shaped_colours):
                    continue
                inst.append((comp, ""))
                rank.append(self.color_threshold + 1.0 / (1.0 + float(comp.sum())))
            lt, nt = _paint((H, W), inst, self.max_objects, rank)
            labels[t] = lt
            names.append(nt)
            for lab_k, name in nt.items():
                if name:
                    region = lt == lab_k
                    h = next((how[i] for i, (m, n) in enumerate(inst[:len(how)]) if n == name and m[region].all()), "colour")
                    counts = found_by.setdefault(name, {"colour": 0, "motion": 0})
                    counts[h] += 1
        return Segmentation(labels=labels, names=names, backend=self.name, noise=noise, found_by=found_by)


# ------------------------------------------------------------------------- SAM

# Architectures of the public checkpoints (segment-anything's build_sam_vit_*).
SAM_VARIANTS: dict[str, dict[str, Any]] = {
    "vit_b": {"encoder_embed_dim": 768, "encoder_depth": 12, "encoder_num_heads": 12, "encoder_global_attn_indexes": [2, 5, 8, 11]},
    "vit_l": {"encoder_embed_dim": 1024, "encoder_depth": 24, "encoder_num_heads": 16, "encoder_global_attn_indexes": [5, 11, 17, 23]},
    "vit_h": {"encoder_embed_dim": 1280, "encoder_depth": 32, "encoder_num_heads": 16, "encoder_global_attn_indexes": [7, 15, 23, 31]},
}


def build_sam_from_config(config: Mapping[str, Any]) -> Any:
    """Build an (uninitialised) ``segment_anything.modeling.Sam`` from an architecture config.

    Config keys: ``encoder_embed_dim``, ``encoder_depth``, ``encoder_num_heads``,
    ``encoder_global_attn_indexes``, optional ``image_size`` (1024), ``prompt_embed_dim`` (256),
    ``vit_patch_size`` (16), ``window_size`` (14), ``out_chans`` (= prompt_embed_dim),
    ``decoder_depth`` (2), ``decoder_mlp_dim`` (2048), ``decoder_num_heads`` (8).
    """
    from functools import partial

    import torch
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    image_size = int(config.get("image_size", 1024))
    prompt_dim = int(config.get("prompt_embed_dim", 256))
    patch = int(config.get("vit_patch_size", 16))
    emb = image_size // patch
    return Sam(
        image_encoder=ImageEncoderViT(
            depth=int(config["encoder_depth"]),
            embed_dim=int(config["encoder_embed_dim"]),
            img_size=image_size,
            mlp_ratio=4,
            norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
            num_heads=int(config["encoder_num_heads"]),
            patch_size=patch,
            qkv_bias=True,
            use_rel_pos=True,
            global_attn_indexes=tuple(config["encoder_global_attn_indexes"]),
            window_size=int(config.get("window_size", 14)),
            out_chans=int(config.get("out_chans", prompt_dim)),
        ),
        prompt_encoder=PromptEncoder(
            embed_dim=prompt_dim,
            image_embedding_size=(emb, emb),
            input_image_size=(image_size, image_size),
            mask_in_chans=16,
        ),
        mask_decoder=MaskDecoder(
            num_multimask_outputs=3,
            transformer=TwoWayTransformer(
                depth=int(config.get("decoder_depth", 2)),
                embedding_dim=prompt_dim,
                mlp_dim=int(config.get("decoder_mlp_dim", 2048)),
                num_heads=int(config.get("decoder_num_heads", 8)),
            ),
            transformer_dim=prompt_dim,
            iou_head_depth=3,
            iou_head_hidden_dim=256,
        ),
        pixel_mean=[123.675, 116.28, 103.53],
        pixel_std=[58.395, 57.12, 57.375],
    )




def infer_sam_config(state: Mapping[str, Any]) -> dict[str, Any]:
    """Architecture of a SAM state dict, read entirely from tensor shapes.

    Widths, depths and image size come from the patch embedding, block count and positional
    embedding; the head width from the relative-position tables (``[2·size - 1, head_dim]``);
    global-attention blocks are those whose table spans the whole grid instead of a window.
    The public vit_b / vit_l / vit_h checkpoints come out as in segment-anything's builders.
    """
    pe = state["image_encoder.patch_embed.proj.weight"]  # [embed, 3, p, p]
    embed = int(pe.shape[0])
    patch = int(pe.shape[-1])
    depth = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("image_encoder.blocks."))
    grid = int(state["image_encoder.pos_embed"].shape[1])  # [1, grid, grid, embed]
    rel = [state[f"image_encoder.blocks.{i}.attn.rel_pos_h"] for i in range(depth)]  # [2*size-1, head_dim]
    head_dim = int(rel[0].shape[1])
    global_idx = [i for i, r in enumerate(rel) if int(r.shape[0]) == 2 * grid - 1]
    windowed = [int(r.shape[0]) for i, r in enumerate(rel) if i not in global_idx]
    return {
        "encoder_embed_dim": embed,
        "encoder_depth": depth,
        "encoder_num_heads": embed // head_dim,
        "encoder_global_attn_indexes": global_idx,
        "window_size": (windowed[0] + 1) // 2 if windowed else 14,
        "image_size": grid * patch,
        "vit_patch_size": patch,
        "prompt_embed_dim": int(state["prompt_encoder.no_mask_embed.weight"].shape[1]),
        "out_chans": int(state["image_encoder.neck.0.weight"].shape[0]),
        "decoder_depth": 1 + max(int(k.split(".")[3]) for k in state if k.startswith("mask_decoder.transformer.layers.")),
        "decoder_mlp_dim": int(state["mask_decoder.transformer.layers.0.mlp.lin1.weight"].shape[0]),
    }


def sam_variant(config: Mapping[str, Any]) -> str | None:
    """``vit_b`` / ``vit_l`` / ``vit_h`` when ``config`` is a public architecture, else ``None``."""
    for v, c in SAM_VARIANTS.items():
        if all(config.get(k) == (list(x) if isinstance(x, (list, tuple)) else x) for k, x in c.items()):
            return v
    return None


def load_sam(checkpoint: str | Path, variant: str | None = None, device: str = "cpu") -> Any:
    """Load a SAM model from a local checkpoint (``.pth`` state dict or ``.safetensors``).

    The architecture is read from the state dict's shapes (:func:`infer_sam_config`), so the
    public ``sam_vit_b_01ec64.pth`` / vit_l / vit_h files and smaller models built from the same
    classes load through one path; ``variant`` (optional) asserts which public model it must be.
    Loading is strict: a mismatched checkpoint raises.
    """
    path = Path(checkpoint).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"SAM checkpoint {path} not found; download sam_vit_b_01ec64.pth (or vit_l/vit_h) and pass "
            "--option physics.segmenter=sam:/path/to/sam_vit_b_01ec64.pth"
        )
    state = read_state_dict(path, nested_key="model")  # safetensors or weights_only torch
    try:
        cfg = infer_sam_config(state)
    except KeyError as e:
        raise ValueError(f"{path}: not a segment-anything state dict (missing {e}); pass a SAM checkpoint") from e
    if variant is not None and sam_variant(cfg) != variant:
        raise ValueError(f"{path}: expected a {variant} checkpoint, found {sam_variant(cfg) or 'a custom SAM'} ({cfg})")
    model = build_sam_from_config(cfg)
    model.load_state_dict(state, strict=True)
    model.eval().to(device)
    return model


class SAMSegmenter(Segmenter):
    """segment-anything from a local checkpoint.

    Args:
        arg: the checkpoint path (registry spec ``sam:PATH``).
        checkpoint: same, as a keyword.
        variant: force ``vit_b``/``vit_l``/``vit_h`` (default: inferred).
        mode: ``prompt`` (boxes/points from the case objects; falls back to ``auto`` without them)
            or ``auto`` (automatic mask generation on every frame).
        points_per_side: grid density of automatic masks.
        min_area_frac / max_area_frac / max_objects: as :class:`OpenCVSegmenter`.
        device: ``cpu`` or ``cuda``.
    """

    name = "sam"

    def __init__(
        self,
        arg: str | None = None,
        *,
        checkpoint: str | None = None,
        variant: str | None = None,
        mode: str = "prompt",
        points_per_side: int = 16,
        min_area_frac: float = 0.001,
        max_area_frac: float = 0.3,
        max_objects: int = 4,
        device: str = "cpu",
        **_: Any,
    ) -> None:
        ckpt = checkpoint or arg
        if not ckpt:
            raise ValueError("SAMSegmenter needs a checkpoint: use the spec 'sam:/path/to/sam_vit_b_01ec64.pth'")
        if mode not in ("prompt", "auto"):
            raise ValueError(f"SAMSegmenter mode must be 'prompt' or 'auto', got {mode!r}")
        self.checkpoint = str(ckpt)
        self.mode = mode
        self.points_per_side = int(points_per_side)
        self.min_area_frac = float(min_area_frac)
        self.max_area_frac = float(max_area_frac)
        self.max_objects = int(max_objects)
        self.device = device
        self.model = load_sam(self.checkpoint, variant, device)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "checkpoint": self.checkpoint, "mode": self.mode, "max_objects": self.max_objects}

    def segment(self, frames: np.ndarray, objects: Sequence[Mapping[str, Any]] = ()) -> Segmentation:
        _check_frames(frames)
        prompted = [o for o in objects if o.get("box") is not None or o.get("point") is not None]
        if self.mode == "prompt" and prompted:
            return self._segment_prompted(frames, prompted)
        return self._segment_auto(frames)

    def _segment_prompted(self, frames: np.ndarray, objects: Sequence[Mapping[str, Any]]) -> Segmentation:
        import torch
        from segment_anything import SamPredictor

        T, H, W, _ = frames.shape
        min_area = max(4, int(self.min_area_frac * H * W))
        predictor = SamPredictor(self.model)
        boxes: list[np.ndarray | None] = [np.asarray(o["box"], np.float32) if o.get("box") is not None else None for o in objects]
        points: list[np.ndarray | None] = [np.asarray(o["point"], np.float32) if o.get("point") is not None else None for o in objects]
        labels = np.zeros((T, H, W), np.int32)
        names: list[dict[int, str]] = []
        with torch.inference_mode():
            for t in range(T):
                predictor.set_image(frames[t])
                inst: list[tuple[np.ndarray, str]] = []
                for i, o in enumerate(objects):
                    kw: dict[str, Any] = {"multimask_output": False}
                    if boxes[i] is not None:
                        kw["box"] = boxes[i]
                    pt = points[i]
                    if pt is not None:
                        kw["point_coords"] = pt.reshape(1, 2)
                        kw["point_labels"] = np.ones(1, np.int64)
                    masks, _, _ = predictor.predict(**kw)
                    m = masks[0].astype(bool)
                    if m.sum() < min_area or m.sum() > self.max_area_frac * H * W:
                        continue  # lost (occluded / out of view): keep the last prompt
                    inst.append((m, str(o.get("name", f"object{i}"))))
                    # Re-prompt the next frame with this frame's mask box (tracking by prompting).
                    ys, xs = np.nonzero(m)
                    pad = 0.1 * max(np.ptp(xs) + 1, np.ptp(ys) + 1)
                    boxes[i] = np.array([xs.min() - pad, ys.min() - pad, xs.max() + pad, ys.max() + pad], np.float32)
                    points[i] = np.array([xs.mean(), ys.mean()], np.float32) if points[i] is not None else None
                lt, nt = _paint((H, W), inst, self.max_objects)
                labels[t] = lt
                names.append(nt)
        return Segmentation(labels=labels, names=names, backend=self.name)

    def _segment_auto(self, frames: np.ndarray) -> Segmentation:
        import torch
        from segment_anything import SamAutomaticMaskGenerator

        T, H, W, _ = frames.shape
        gen = SamAutomaticMaskGenerator(self.model, points_per_side=self.points_per_side, pred_iou_thresh=0.0,
                                        stability_score_thresh=0.0, min_mask_region_area=0)
        labels = np.zeros((T, H, W), np.int32)
        names: list[dict[int, str]] = []
        with torch.inference_mode():
            for t in range(T):
                inst = [(m["segmentation"].astype(bool), "") for m in gen.generate(frames[t])
                        if self.min_area_frac * H * W <= m["area"] <= self.max_area_frac * H * W]
                lt, nt = _paint((H, W), inst, self.max_objects)
                labels[t] = lt
                names.append(nt)
        return Segmentation(labels=labels, names=names, backend=self.name)


def build_segmenter(spec: str | None, **options: Any) -> Segmenter:
    """Resolve a segmenter spec (``opencv``, ``sam:PATH``) through the SEGMENTERS registry."""
    from worldolympiad.registries import SEGMENTERS, parse_spec

    prefix, arg = parse_spec(spec or "opencv")
    seg: Segmenter = SEGMENTERS.get(prefix)(arg, **options)
    return seg
