"""Link per-frame masks into object tracks (IoU + motion + colour, Hungarian matching).

Each :class:`ObjectTrack` holds, per frame: presence, centroid, area, bbox, mean colour
and a *state*:

* ``visible`` — matched to a mask this frame;
* ``occluded`` — not matched, but its predicted box is covered by another object's mask
  (something in front of it);
* ``exited`` — not matched, and its predicted box lies (mostly) outside the frame or it
  was last seen touching the border (a side it touched in every sighting does not count: a
  press hanging from the top edge that vanishes mid-stroke did not leave);
* ``missing`` — not matched and nothing explains why: the object vanished;
* ``absent`` — before its first or after its last sighting when that is explained
  (the track has not started yet / it left).

Occlusion vs disappearance is what the permanence check counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracks.physics.segmentation import SCENERY_MIN_SIDE, Segmentation

VISIBLE, OCCLUDED, EXITED, MISSING, ABSENT = "visible", "occluded", "exited", "missing", "absent"


@dataclass
class ObjectTrack:
    """One object through the video. Arrays are per frame; ``nan`` where not visible."""

    id: int
    name: str
    centroid: np.ndarray  # float [T, 2] (x, y) pixels
    area: np.ndarray  # float [T] pixels
    bbox: np.ndarray  # float [T, 4] x0, y0, x1, y1
    color: np.ndarray  # float [T, 3] mean RGB
    state: list[str]  # [T]
    touching: np.ndarray  # bool [T]: mask touches the border or another mask (partial view)
    appeared: bool = False  # first seen after frame 0, not from the border nor from behind something
    frame_size: tuple[int, int] = (0, 0)  # (H, W)
    elongation: np.ndarray | None = None  # float [T]: log principal-axis ratio of the mask (nan when unseen)
    touching_mask: np.ndarray | None = None  # bool [T]: the mask touches another mask (``touching`` less the border)

    @property
    def at_border(self) -> np.ndarray:
        """``bool [T]``: the mask touches the image border (the object is cut off)."""
        H, W = self.frame_size
        b = np.nan_to_num(self.bbox, nan=-1.0)
        return self.visible & ((b[:, 0] <= 0) | (b[:, 1] <= 0) | (b[:, 2] >= W) | (b[:, 3] >= H))

    @property
    def visible(self) -> np.ndarray:
        return np.array([s == VISIBLE for s in self.state])

    @property
    def first(self) -> int:
        return int(np.argmax(self.visible))

    @property
    def last(self) -> int:
        v = self.visible
        return int(len(v) - 1 - np.argmax(v[::-1]))

    def count(self, state: str) -> int:
        return sum(1 for s in self.state if s == state)

    @property
    def displacement(self) -> float:
        """Path length of the centroid over visible frames (pixels)."""
        c = self.centroid[self.visible]
        return float(np.linalg.norm(np.diff(c, axis=0), axis=1).sum()) if len(c) > 1 else 0.0

    @property
    def mean_color(self) -> np.ndarray:
        return np.nanmean(self.color[self.visible], axis=0) if self.visible.any() else np.full(3, np.nan)

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "visible": int(self.visible.sum()),
            "occluded": self.count(OCCLUDED),
            "exited": self.count(EXITED),
            "missing": self.count(MISSING),
            "appeared": self.appeared,
            "first": self.first,
            "last": self.last,
        }


@dataclass
class _Det:
    label: int
    name: str
    mask: np.ndarray
    centroid: np.ndarray
    area: float
    bbox: np.ndarray
    color: np.ndarray
    touching: bool
    elongation: float = 0.0
    touching_mask: bool = False


@dataclass
class _Live:
    tid: int
    name: str
    last_t: int
    last: _Det
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))
    rows: dict[int, _Det] = field(default_factory=dict)


def _detections(frame: np.ndarray, labels: np.ndarray, names: dict[int, str]) -> list[_Det]:
    H, W = labels.shape
    dets = []
    for k in np.unique(labels):
        if k == 0:
            continue
        m = labels == k
        ys, xs = np.nonzero(m)
        bbox = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], float)
        ring = _dilate(m) & ~m
        near = bool((labels[ring] > 0).any())
        touching = bool(bbox[0] <= 0 or bbox[1] <= 0 or bbox[2] >= W or bbox[3] >= H or near)
        dets.append(_Det(int(k), names.get(int(k), ""), m, np.array([xs.mean(), ys.mean()]), float(m.sum()), bbox,
                         frame[m].reshape(-1, 3).mean(0).astype(float), touching, elongation(xs, ys), near))
    return dets


def elongation(xs: np.ndarray, ys: np.ndarray) -> float:
    """Log ratio of a mask's principal axes (0 for a disc or a square): its shape's stretch whatever
    way it is turned, so a rigid body that spins keeps it while its bounding box's aspect swings."""
    if len(xs) < 2:
        return 0.0
    cov = np.cov(np.stack([xs, ys]).astype(np.float64)) + np.eye(2) / 12.0  # + a pixel's own spread
    lo, hi = np.linalg.eigvalsh(cov)
    return float(0.5 * np.log(hi / max(lo, 1e-9)))


def _dilate(m: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.dilate(m.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)


def _box_iou(a: np.ndarray, b: np.ndarray) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


#: how much farther apart (mean RGB) two masks of the same named object may be than unnamed ones
#: and still be linked (``color_gate`` times this).
NAMED_COLOR_GATE = 2.0


def track_objects(
    frames: np.ndarray,
    seg: Segmentation,
    *,
    max_gap: int | None = None,
    gate_frac: float = 0.25,
    color_gate: float = 60.0,
) -> list[ObjectTrack]:
    """Link ``seg``'s masks over ``frames`` into tracks.

    Matching cost between a live track (its last mask shifted by its velocity) and a mask:
    ``1 - IoU`` + centroid distance / gate + colour distance / colour_gate, with a name
    mismatch forbidden; pairs beyond the gates are never matched. Hungarian assignment
    (scipy) picks the cheapest one-to-one matching.

    Args:
        frames: ``uint8 [T, H, W, 3]``.
        seg: the masks.
        max_gap: frames a track may go unmatched and still be re-linked (default: whole video).
        gate_frac: largest centroid jump (plus the predicted motion) as a fraction of the diagonal.
        color_gate: largest mean-RGB distance for a match.
    """
    from scipy.optimize import linear_sum_assignment

    T, H, W, _ = frames.shape
    diag = float(np.hypot(H, W))
    max_gap = T if max_gap is None else max_gap
    live: list[_Live] = []
    finished: list[_Live] = []
    next_id = 1
    all_dets: list[list[_Det]] = []
    for t in range(T):
        dets = _detections(frames[t], seg.labels[t], seg.names[t] if t < len(seg.names) else {})
        all_dets.append(dets)
        cands = [lv for lv in live if t - lv.last_t <= max_gap]
        matched_dets: set[int] = set()
        matched_live: set[int] = set()
        # Two rounds: the colour gate first; then, among what is left, masks the segmenter named
        # after the same object may be NAMED_COLOR_GATE times farther apart in colour (a small
        # body's mean colour swings with how much floor a blurred, resized frame mixes into it:
        # a 2 px ball after crf 35). A mask of the body's own colour always wins the first round.
        for widen in (1.0, NAMED_COLOR_GATE):
            cost = np.full((len(cands), len(dets)), 1e6)
            for i, lv in enumerate(cands):
                if i in matched_live:
                    continue
                gap = t - lv.last_t
                pred_shift = lv.velocity * gap
                pred_c = lv.last.centroid + pred_shift
                pred_box = lv.last.bbox + np.r_[pred_shift, pred_shift]
                gate = gate_frac * diag * (1 + 0.25 * (gap - 1)) + 0.5 * float(np.linalg.norm(pred_shift))
                for j, d in enumerate(dets):
                    if j in matched_dets or (lv.name and d.name and lv.name != d.name):
                        continue
                    if widen > 1.0 and not (lv.name and lv.name == d.name):
                        continue
                    dist = float(np.linalg.norm(d.centroid - pred_c))
                    cdist = float(np.linalg.norm(d.color - lv.last.color))
                    if dist > gate or cdist > color_gate * widen:
                        continue
                    iou = _box_iou(pred_box, d.bbox)
                    cost[i, j] = (1 - iou) + dist / gate + cdist / (color_gate * widen)
            if not cost.size:
                continue
            rows, cols = linear_sum_assignment(cost)
            for i, j in zip(rows, cols, strict=True):
                if cost[i, j] >= 1e6:
                    continue
                lv, d = cands[i], dets[j]
                gap = t - lv.last_t
                lv.velocity = (d.centroid - lv.last.centroid) / gap
                lv.last, lv.last_t = d, t
                lv.name = lv.name or d.name
                lv.rows[t] = d
                matched_dets.add(j)
                matched_live.add(i)
        for j, d in enumerate(dets):
            if j not in matched_dets:
                nl = _Live(next_id, d.name, t, d, rows={t: d})
                next_id += 1
                live.append(nl)
        for lv in [lv for lv in live if t - lv.last_t > max_gap]:
            live.remove(lv)
            finished.append(lv)
    finished.extend(live)
    finished = merge_interleaved(finished)
    if min(H, W) >= SCENERY_MIN_SIDE:
        finished = unname_static_namesakes(finished)
    return [_finalize(lv, all_dets, T, H, W) for lv in sorted(finished, key=lambda lv: lv.tid)]


#: a track whose sightings all lie within this many pixels (or this share of its radius, if
#: more) of their mean never moved: scenery, when a namesake moves beside it
STATIC_PX = 1.5
STATIC_RADII = 0.15


def _extent(lv: _Live) -> tuple[float, float]:
    """Largest distance of a track's centroids from their mean, and the body's radius (pixels)."""
    c = np.array([d.centroid for d in lv.rows.values()])
    r = float(np.sqrt(np.median([d.area for d in lv.rows.values()]) / np.pi))
    return float(np.linalg.norm(c - c.mean(axis=0), axis=1).max()), r


def unname_static_namesakes(lives: list[_Live]) -> list[_Live]:
    """Drop the name of a track that never moves while another track of that name moves in the
    same frames: bricks or planks of a box's colour are named after it by the segmenter, but a
    wall never falls beside the box that does (the largest mask of a name wins its path where
    several are seen, :func:`tracks.physics.checks.series`). A body at rest keeps its name:
    nothing of its name moves beside it, or the moving sightings are its own (one track). Videos
    under :data:`~tracks.physics.segmentation.SCENERY_MIN_SIDE` are left alone."""
    moving = []
    for lv in lives:
        ext, r = _extent(lv)
        moving.append(ext > max(2 * STATIC_PX, r))
    for i, lv in enumerate(lives):
        if not lv.name or moving[i] or len(lv.rows) < 3:
            continue
        ext, r = _extent(lv)
        if ext > max(STATIC_PX, STATIC_RADII * r):
            continue
        if any(moving[j] and o.name == lv.name and set(o.rows) & set(lv.rows) for j, o in enumerate(lives)):
            lv.name = ""
    return lives


#: a sighting joins another track of the same name when it lies within this many of the body's radii
#: (plus a pixel) of the line through that path's sightings either side of it
MERGE_RADII = 1.5
#: ... plus this share of the path's step there (a curving, accelerating path bends between sightings)
MERGE_STEP_SHARE = 0.3


def _path_fits(rows: dict[int, _Det]) -> bool:
    """Whether the sightings ``rows`` (frame -> mask) make one smooth path: each lies on the line
    through the sightings either side of it (at the ends: the line through the next two), within
    :data:`MERGE_RADII` of the body's radius plus :data:`MERGE_STEP_SHARE` of the step there."""
    ts = sorted(rows)
    if len(ts) < 3:
        return True
    c = np.array([rows[t].centroid for t in ts])
    t = np.array(ts, float)
    r = float(np.sqrt(np.median([rows[u].area for u in ts]) / np.pi))
    for k in range(len(ts)):
        a, b = (k - 1, k + 1) if 0 < k < len(ts) - 1 else ((k + 1, k + 2) if k == 0 else (k - 2, k - 1))
        w = (t[k] - t[a]) / (t[b] - t[a])
        pred = (1 - w) * c[a] + w * c[b]
        step = float(np.linalg.norm(c[b] - c[a]) / (t[b] - t[a]) * max(abs(t[k] - t[a]), abs(t[k] - t[b])))
        tol = MERGE_RADII * r + 1.0 + MERGE_STEP_SHARE * step
        if not 0 < k < len(ts) - 1:
            tol *= 2.0  # extrapolated: less sure
        if float(np.linalg.norm(c[k] - pred)) > tol:
            return False
    return True


def merge_interleaved(lives: list[_Live]) -> list[_Live]:
    """Join tracks of one named object (and unnamed masks) that are never seen in the same frame
    and together make one smooth path (:func:`_path_fits`).

    A small fast body's mean colour swings with the floor a blurred, resized frame mixes into it,
    and a mask the segmenter could not name (too much floor in it) starts a track of its own: one
    thrown 2 px ball then becomes two tracks that take turns along its path, or one that ends where
    the next begins —
    and the later one "appears from nowhere". A teleport never joins: the jump is off the path.
    """
    lives = list(lives)
    while True:
        best: tuple[_Live, _Live] | None = None
        for a in lives:
            if not a.name:
                continue
            for b in lives:
                if b is a or b.name not in (a.name, "") or set(a.rows) & set(b.rows):
                    continue
                if not b.name and len(a.rows) < 3:
                    continue  # an unnamed mask joins a path, not one or two sightings
                if _path_fits(a.rows | b.rows):
                    best = (a, b)
                    break
            if best:
                break
        if best is None:
            return lives
        a, b = best
        lives.remove(b)
        a.rows = dict(sorted((a.rows | b.rows).items()))
        ts = list(a.rows)
        a.last_t, a.last = ts[-1], a.rows[ts[-1]]
        a.velocity = ((a.rows[ts[-1]].centroid - a.rows[ts[-2]].centroid) / (ts[-1] - ts[-2])
                      if len(ts) > 1 else np.zeros(2))


#: frames a track's last motion is carried forward to decide that it left the view.
EXIT_LOOKAHEAD = 2


def _finalize(lv: _Live, all_dets: list[list[_Det]], T: int, H: int, W: int) -> ObjectTrack:
    cen = np.full((T, 2), np.nan)
    area = np.full(T, np.nan)
    bbox = np.full((T, 4), np.nan)
    col = np.full((T, 3), np.nan)
    touching = np.zeros(T, bool)
    near = np.zeros(T, bool)
    elong = np.full(T, np.nan)
    for t, d in lv.rows.items():
        cen[t], area[t], bbox[t], col[t], touching[t] = d.centroid, d.area, d.bbox, d.color, d.touching
        elong[t], near[t] = d.elongation, d.touching_mask
    ts = sorted(lv.rows)
    first = ts[0]
    state = [ABSENT] * T
    for t in ts:
        state[t] = VISIBLE
    # Explain each unmatched frame: occluded by a mask in front, out of view, or missing.
    prev = first
    attached: set[str] = set()
    for t in range(first + 1, T):
        if t in lv.rows:
            prev = t
            continue
        d_prev = lv.rows[prev]
        if t == prev + 1:  # the first frame of a gap: the sides every sighting so far touched
            attached = attached_sides([lv.rows[u].bbox for u in ts if u <= prev], H, W)
        nxt = next((u for u in ts if u > t), None)
        if nxt is not None:  # interpolate the box across the gap
            a = (t - prev) / (nxt - prev)
            box = (1 - a) * d_prev.bbox + a * lv.rows[nxt].bbox
        else:  # after the last sighting: where its motion carries it in the next two frames (a
            # ball flying out of view); no further, or a body that vanished mid-flight "exits" too
            shift = lv.velocity * min(t - prev, EXIT_LOOKAHEAD)
            box = d_prev.bbox + np.r_[shift, shift]
        state[t] = _explain(box, d_prev, all_dets[t], H, W, attached=attached)
    appeared = first > 0 and not lv.rows[first].touching and not _behind_something(lv.rows[first].bbox, all_dets[first - 1], lv.rows[first])
    return ObjectTrack(lv.tid, lv.name, cen, area, bbox, col, state, touching, appeared, (H, W), elong, near)


#: sightings a body must have, every one touching the same side of the frame, to be attached to that side
#: (:func:`attached_sides`).
ATTACHED_SIGHTINGS = 3


def frame_sides(bbox: np.ndarray, H: int, W: int) -> set[str]:
    """The sides of the frame a box touches (within a pixel)."""
    x0, y0, x1, y1 = bbox
    hits = (("left", x0 <= 1), ("top", y0 <= 1), ("right", x1 >= W - 1), ("bottom", y1 >= H - 1))
    return {side for side, hit in hits if hit}


def attached_sides(boxes: list[np.ndarray], H: int, W: int) -> set[str]:
    """Sides of the frame that every one of a body's sighting ``boxes`` touches (at least
    :data:`ATTACHED_SIGHTINGS` of them): a body that reaches in from there (a press hanging from the top, a table
    along the bottom), not one on its way out. Touching that side says nothing about leaving through it, and
    its centroid across that side moves with the cut (``continuity.edge_path``)."""
    if len(boxes) < ATTACHED_SIGHTINGS:
        return set()
    return set.intersection(*(frame_sides(b, H, W) for b in boxes))


def _explain(box: np.ndarray, last: _Det, dets: list[_Det], H: int, W: int,
             attached: set[str] | frozenset[str] = frozenset()) -> str:
    """Why a track is unmatched at a frame: out of view, behind another mask, or missing. A body last seen
    touching the border left through it, unless it touched that side in every sighting (``attached``,
    :func:`attached_sides`): a press hanging from the top that vanishes mid-stroke did not leave (physics v24);
    one that retracts out of view shrinks to a sliver first (``permanence`` forgives that)."""
    x0, y0, x1, y1 = box
    inside = max(0.0, min(x1, W) - max(x0, 0)) * max(0.0, min(y1, H) - max(y0, 0))
    total = max(1e-6, (x1 - x0) * (y1 - y0))
    at_border = bool(frame_sides(last.bbox, H, W) - set(attached))
    if inside / total < 0.5 or at_border:
        return EXITED
    if _behind_something(box, dets, None):
        return OCCLUDED
    return MISSING


def _behind_something(box: np.ndarray, dets: list[_Det], me: _Det | None) -> bool:
    """Whether most of ``box`` is covered by other masks (something in front of it)."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    x0, y0 = max(x0, 0), max(y0, 0)
    if x1 <= x0 or y1 <= y0:
        return False
    cover = 0
    for d in dets:
        if d is me:
            continue
        cover += int(d.mask[y0:y1, x0:x1].sum())
    return cover >= 0.3 * (x1 - x0) * (y1 - y0)
