"""Rich results for sandbox-agent's Python driver: figures and images as PNG, pandas tables as text.

Embedded into the agent and run in front of driver.py (same globals). While a cell runs, figures
shown with plt.show() or passed to display(), and every figure still open when the cell ends (as
Jupyter's inline backend does; they are closed afterwards) are rendered to PNG. Each is saved full
size under the figures directory and sent back inline, downscaled until it fits the limits
(longest side, bytes), so that one call never floods a model's context. Values with _repr_png_
(PIL images, ...) are handled the same way when they are a cell's value or passed to display().
A pandas DataFrame or Series as the cell's value becomes a compact text table (rows and columns
elided past a limit) plus its shape and dtypes. Nothing here may break a cell: failures are
reported on stderr and the plain result stands.
"""

import base64
import builtins
import importlib.machinery
import io
import math
import os
import struct
import sys

_TABLE_MAX_ROWS = 30  # past it, the first and last _TABLE_MIN_ROWS // 2 rows are shown
_TABLE_MIN_ROWS = 10
_TABLE_MAX_COLS = 20
_TABLE_MAX_COLWIDTH = 50
_TABLE_MAX_DTYPES = 200
_FIGURE_FILES_KEPT = 64  # full-size files live on the sandbox's tmpfs (its memory)
_INLINE_BYTES_TOTAL = 8 << 20  # all inline PNGs of one cell (common/rich_output.h agrees)


class _Collector:
    """What one cell displays; _Collector.current is None between cells (and while images are
    off: images.max_per_call 0 leaves figures alone, as in a plain script)."""

    current = None

    def __init__(self, command, cell_number):
        self.max_images = max(0, int(command.get("max_images", 8)))
        self.max_bytes = max(1, int(command.get("image_max_bytes", 1 << 20)))
        self.max_px = max(1, int(command.get("image_max_px", 1568)))
        self.directory = command.get("figures_dir") or "/tmp/.sandbox-mcp/figures"
        self.cell_number = cell_number
        self.images = []
        self.files = 0
        self.inline_bytes = 0
        self.seen_figures = set()
        self.skipped = 0

    def has_room(self):
        if len(self.images) < self.max_images:
            return True
        self.skipped += 1
        return False

    def reply_fields(self):
        if self.skipped:
            _warn("%d more image(s) were not sent: at most %d per execution (images.max_per_call)"
                  % (self.skipped, self.max_images))
        return {"images": self.images} if self.images else {}


def _warn(message):
    sys.stderr.write("[display] %s\n" % message)


def _png_size(data):
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _prune_figure_files(directory):
    try:
        entries = [entry for entry in os.scandir(directory)
                   if entry.name.startswith("figure-") and entry.name.endswith(".png")]
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
        for entry in entries[:-_FIGURE_FILES_KEPT]:
            os.remove(entry.path)
    except OSError:
        pass


def _save_full_size(collector, data):
    os.makedirs(collector.directory, mode=0o700, exist_ok=True)
    collector.files += 1
    # The pid keeps names (and the sandbox:// links to them) unique across interpreter restarts.
    path = os.path.join(collector.directory, "figure-%d-%d-%d.png"
                        % (os.getpid(), collector.cell_number, collector.files))
    with open(path, "wb") as out:
        out.write(data)
    _prune_figure_files(collector.directory)
    return path


def _fits(collector, data):
    size = _png_size(data)
    return (size is not None and max(size) <= collector.max_px
            and len(data) <= collector.max_bytes)


def _add_png(data, render_scaled):
    """Keeps one image: `data` is the full-size PNG, render_scaled(factor) a smaller one or None."""
    collector = _Collector.current
    if collector is None or not collector.has_room():
        return
    size = _png_size(data)
    if size is None:
        _warn("an image was not a PNG; skipped")
        return
    path = _save_full_size(collector, data)
    inline, scale = data, 1.0
    for _ in range(6):
        if _fits(collector, inline):
            break
        width, height = _png_size(inline) or size
        factor = min(1.0, collector.max_px / max(width, height))
        if len(inline) > collector.max_bytes:
            factor = min(factor, math.sqrt(collector.max_bytes / len(inline)))
        scale *= factor * 0.95
        inline = render_scaled(scale)
        if inline is None:
            break
    if inline is None or not _fits(collector, inline):
        _warn("an image of %dx%d px could not be made to fit %d px and %d bytes; the full size "
              "is at %s" % (size[0], size[1], collector.max_px, collector.max_bytes, path))
        return
    if collector.inline_bytes + len(inline) > _INLINE_BYTES_TOTAL:
        _warn("an image was not sent: one execution sends at most %d bytes of images; the full "
              "size is at %s" % (_INLINE_BYTES_TOTAL, path))
        return
    collector.inline_bytes += len(inline)
    collector.images.append({"path": path, "width": size[0], "height": size[1],
                             "bytes": len(data),
                             "data_b64": base64.b64encode(inline).decode("ascii")})


def _figure_png(figure, dpi):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _capture_figure(figure):
    collector = _Collector.current
    if collector is None or id(figure) in collector.seen_figures:
        return
    collector.seen_figures.add(id(figure))
    if not collector.has_room():
        return  # not drawn: it would not be sent
    dpi = figure.dpi
    _add_png(_figure_png(figure, dpi), lambda scale: _figure_png(figure, dpi * scale))


def _pil_scaled(data):
    def render(scale):
        try:
            from PIL import Image
        except ImportError:
            return None
        image = Image.open(io.BytesIO(data))
        image = image.resize((max(1, int(image.width * scale)), max(1, int(image.height * scale))))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
        return buffer.getvalue()
    return render


def _open_figures():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    return [pyplot.figure(number) for number in pyplot.get_fignums()]


def _close_open_figures():
    try:
        if _open_figures():
            sys.modules["matplotlib.pyplot"].close("all")
    except Exception as exc:  # a broken or replaced pyplot must not fail the cell
        _warn("figures could not be closed: %s: %s" % (type(exc).__name__, exc))


def _capture_open_figures():
    """Renders and closes every open figure (called by plt.show() and at the end of a cell)."""
    if _Collector.current is None:
        return
    try:
        for figure in _open_figures():
            try:
                _capture_figure(figure)
            except Exception as exc:  # a figure that cannot be drawn must not fail the cell
                _warn("a figure could not be rendered: %s: %s" % (type(exc).__name__, exc))
    except Exception as exc:
        _warn("open figures could not be listed: %s: %s" % (type(exc).__name__, exc))
    finally:
        _close_open_figures()  # also when an interrupt stopped the rendering


def _is_figure(value):
    figure_module = sys.modules.get("matplotlib.figure")
    return figure_module is not None and isinstance(value, figure_module.Figure)


def _is_table(value):
    return (type(value).__module__.startswith("pandas.")
            and type(value).__name__ in ("DataFrame", "Series"))


def _table_text(value):
    options = {"max_rows": _TABLE_MAX_ROWS, "min_rows": _TABLE_MIN_ROWS}
    if type(value).__name__ == "DataFrame":
        return value.to_string(max_cols=_TABLE_MAX_COLS, max_colwidth=_TABLE_MAX_COLWIDTH,
                               show_dimensions=True, **options)
    return value.to_string(length=True, dtype=True, name=True, **options)


def _table_summary(value):
    if type(value).__name__ == "DataFrame":
        dtypes = [[str(name), str(dtype)] for name, dtype in value.dtypes.items()]
    else:
        dtypes = [[str(value.name), str(value.dtype)]]
    return {"kind": type(value).__name__, "shape": list(value.shape),
            "dtypes": dtypes[:_TABLE_MAX_DTYPES], "dtypes_cut": len(dtypes) > _TABLE_MAX_DTYPES}


def _add_repr_png(value):
    """True when `value` rendered itself as a PNG (IPython's _repr_png_ convention)."""
    method = getattr(type(value), "_repr_png_", None)
    if method is None:
        return False
    data = method(value)
    if isinstance(data, tuple):  # (data, metadata), as IPython allows
        data = data[0]
    if not isinstance(data, (bytes, bytearray)):
        return False
    _add_png(bytes(data), _pil_scaled(bytes(data)))
    return True


def _rich_result(value, max_chars, shorten):
    """The cell's value as (result text, extra reply fields)."""
    try:
        if _is_table(value):
            return shorten(_table_text(value), max_chars), {"table": _table_summary(value)}
        if _is_figure(value):
            _capture_figure(value)
        else:
            _add_repr_png(value)
    except Exception as exc:
        _warn("the value could not be displayed: %s: %s" % (type(exc).__name__, exc))
    return shorten(repr(value), max_chars), {}


def display(*values):
    """Shows values the way a notebook would: figures and images as images, tables as text."""
    for value in values:
        if _is_figure(value):
            _capture_figure(value)
        elif _is_table(value):
            print(_table_text(value))
        elif not _add_repr_png(value):
            markdown = getattr(value, "_repr_markdown_", None)
            print(markdown() if callable(markdown) else repr(value))


def _patch_pyplot(pyplot):
    original_show = pyplot.show

    def show(*args, **kwargs):
        if _Collector.current is None:
            return original_show(*args, **kwargs)
        _capture_open_figures()
        return None

    show.__doc__ = original_show.__doc__
    pyplot.show = show


class _PyplotFinder:
    """Patches matplotlib.pyplot.show as pyplot is imported, whenever that happens."""

    @staticmethod
    def find_spec(name, path, target=None):
        if name != "matplotlib.pyplot":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            _patch_pyplot(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PyplotFinder)
builtins.display = display
