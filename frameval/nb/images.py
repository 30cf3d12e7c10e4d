"""Image grids written as PNG with numpy and zlib only (no PIL in framework envs)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from ..files import GRIDS, atomic_write


def grid(images: np.ndarray, rows: int = 4, cols: int = 4, pad: int = 2) -> np.ndarray:
    """(N, 1, H, W) or (N, H, W) images in [-1, 1] -> one uint8 (rows*H, cols*W) grid."""
    a = np.asarray(images, dtype=np.float32)
    if a.ndim == 4:
        a = a[:, 0]
    n, h, w = a.shape
    out = np.zeros((rows * (h + pad) + pad, cols * (w + pad) + pad), dtype=np.uint8)
    pix = np.clip((a + 1.0) * 127.5, 0, 255).round().astype(np.uint8)
    for i in range(min(n, rows * cols)):
        r, c = divmod(i, cols)
        out[pad + r * (h + pad): pad + r * (h + pad) + h, pad + c * (w + pad): pad + c * (w + pad) + w] = pix[i]
    return out


def write_png(path, gray: np.ndarray, scale: int = 1) -> Path:
    """Write an 8-bit grayscale PNG; `scale` enlarges by pixel repetition."""
    g = np.asarray(gray, dtype=np.uint8)
    if scale > 1:
        g = g.repeat(scale, 0).repeat(scale, 1)
    h, w = g.shape
    raw = b"".join(b"\x00" + g[i].tobytes() for i in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    return atomic_write(path, png)


def save_grid(rec, epoch: int, images: np.ndarray, scale: int = 3) -> Path:
    """The DCGAN's grid after `epoch` (0-based) from the 16 fixed-noise images
    (N, 1, H, W) in [-1, 1]: written to the run's grids/ folder and listed in
    the result (the report animates them)."""
    path = write_png(rec.out / GRIDS / f"epoch_{epoch + 1:03d}.png", grid(images), scale=scale)
    rec.result.setdefault("grids", []).append(str(path.relative_to(rec.out)))
    return path


def show_png(path, width=None):
    """Show a PNG inline when running in Jupyter; silently nothing elsewhere."""
    try:
        from IPython.display import Image, display
        display(Image(filename=str(path), width=width))
    except Exception:
        pass


def show_last_grid(rec, width=None):
    """The last grid save_grid wrote, inline (nothing when there is none)."""
    grids = rec.result.get("grids") or []
    if grids:
        show_png(rec.out / grids[-1], width)
