"""Pictures of segmentations: pseudo-colour masks, image overlays and a figure with a class legend."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .data.labels import color_map


def pseudo_color(label_map: np.ndarray, num_classes: int) -> Image.Image:
    """A palette PNG image of ``label_map`` (PaddleSeg's "pseudo colour prediction"; indices survive a round trip)."""
    image = Image.fromarray(label_map.astype(np.uint8), mode="P")
    image.putpalette(color_map(max(num_classes, 256)).reshape(-1).tolist())
    return image


def overlay(image: np.ndarray, label_map: np.ndarray, num_classes: int, alpha: float = 0.5,
            ignore_index: int | None = None) -> np.ndarray:
    """``image`` (RGB uint8) blended with the colours of ``label_map``; ``ignore_index`` pixels left untouched."""
    colours = color_map(max(num_classes, int(label_map.max()) + 1))[label_map.astype(np.int64)]
    out = (image.astype(np.float32) * (1 - alpha) + colours.astype(np.float32) * alpha).astype(np.uint8)
    if ignore_index is not None:
        keep = label_map == ignore_index
        out[keep] = image[keep]
    return out


def _shorten(text: str, limit: int = 60) -> str:
    """``text`` cut in the middle to ``limit`` characters (a long path keeps its start and its file name)."""
    if len(text) <= limit:
        return text
    keep = limit - 1
    return f"{text[:keep // 3]}…{text[-(keep - keep // 3):]}"


def plot_segmentation(image: np.ndarray, label_map: np.ndarray, labels: Sequence[str], *, title: str = "",
                      alpha: float = 0.5, max_legend: int = 20) -> Any:
    """A matplotlib figure: the image, the overlay, and a legend of the classes present (with their area).

    The legend sits below the pictures in space of its own (never over them), lists the ``max_legend``
    largest classes and says how many smaller ones it leaves out; a long title is shortened in the middle.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    num_classes = max(len(labels), int(label_map.max()) + 1)
    palette = color_map(num_classes)
    h, w = label_map.shape
    ids, counts = np.unique(label_map, return_counts=True)
    present = sorted(zip(ids.tolist(), counts.tolist()), key=lambda t: -t[1])
    handles = [Patch(facecolor=palette[i] / 255.0, edgecolor="black",
                     label=f"{labels[i] if i < len(labels) else i} ({c / label_map.size:.1%})")
               for i, c in present[:max_legend]]
    if len(present) > max_legend:
        handles.append(Patch(facecolor="white", edgecolor="white", label=f"+{len(present) - max_legend} smaller"))
    columns = min(4, len(handles))
    legend_rows = -(-len(handles) // columns)
    # Each picture is 5 inches wide; its height follows the aspect ratio within [1.5, 9] inches.
    picture_height = min(max(5.0 * h / max(w, 1), 1.5), 9.0)
    fig = Figure(figsize=(10, picture_height + 0.6 + 0.25 * legend_rows), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    left.imshow(image)
    left.set_title(_shorten(title) if title else "input", fontsize=9)
    right.imshow(overlay(image, label_map, num_classes, alpha))
    right.set_title("prediction", fontsize=9)
    for ax in (left, right):
        ax.axis("off")
    fig.legend(handles=handles, loc="outside lower center", ncol=columns, fontsize=8, frameon=False)
    return fig


def save_figure(fig: Any, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``path`` (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight", pad_inches=0.1)  # titles and legend never clipped
    return path
