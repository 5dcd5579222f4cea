"""Inline SVG plots: horizontal bars with 95 % intervals, and bars per category (domain) per system.

Why hand-written SVG rather than a charting library: two chart kinds, no JS needed to draw them, nothing to
bundle, and the page stays readable with scripts off. Bars are drawn on the metric's own range
(`MetricSpec.value_range`, e.g. 0–1 or 0–100), never on the column's maximum, so 0.333 draws a third of a
bar; a metric without a declared range (Elo, counts) is drawn on the range of the values and intervals
shown, and the axis says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from reportbench.site.html import attrs, esc, fmt_number, is_number

ROW_H = 18
LABEL_W = 150
PLOT_W = 260
VALUE_W = 60


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    src: str  # where the value comes from (data-src of its label)
    lo: float | None = None
    hi: float | None = None
    digits: int = 3


def axis_range(bars: Sequence[Bar], value_range: Sequence[float] | None) -> tuple[float, float, bool]:
    """(lo, hi, declared): the metric's declared range, else the data's range including 0 when sensible."""
    if value_range is not None and len(value_range) == 2 and value_range[1] > value_range[0]:
        return float(value_range[0]), float(value_range[1]), True
    pts = [v for b in bars for v in (b.value, b.lo, b.hi) if is_number(v)]
    if not pts:
        return 0.0, 1.0, False
    lo, hi = min(pts), max(pts)
    if lo >= 0:
        lo = 0.0
    if hi <= lo:
        hi = lo + 1.0
    return float(lo), float(hi), False


def _x(v: float, lo: float, hi: float) -> float:
    return LABEL_W + PLOT_W * (min(max(v, lo), hi) - lo) / (hi - lo)


def bar_chart(title: str, bars: Sequence[Bar], value_range: Sequence[float] | None, *, note: str = "") -> str:
    """One metric across systems: a bar per system on the metric's range, its interval as a whisker."""
    lo, hi, declared = axis_range(bars, value_range)
    height = ROW_H * len(bars) + 26
    width = LABEL_W + PLOT_W + VALUE_W
    parts = [
        f"<svg{attrs(width=width, height=height, viewBox=f'0 0 {width} {height}', role='img')}>"
        f"<title>{esc(title)}</title>"
    ]
    base = _x(max(lo, 0.0) if lo < 0 < hi else lo, lo, hi)
    for i, b in enumerate(bars):
        y = 4 + i * ROW_H
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end">{esc(b.label[:24])}</text>')
        if is_number(b.value):
            v = float(b.value)  # type: ignore[arg-type]
            x0, x1 = sorted((base, _x(v, lo, hi)))
            parts.append(
                f'<rect class="bar" x="{x0:.1f}" y="{y + 2}" width="{max(x1 - x0, 0.5):.1f}" '
                f'height="{ROW_H - 6}" fill="#b6d4f2"/>'
            )
            if is_number(b.lo) and is_number(b.hi):
                xl, xh = _x(float(b.lo), lo, hi), _x(float(b.hi), lo, hi)  # type: ignore[arg-type]
                ym = y + ROW_H / 2 - 1
                parts.append(
                    f'<path class="ci" d="M{xl:.1f} {ym:.1f}H{xh:.1f}M{xl:.1f} {ym - 4:.1f}v8'
                    f'M{xh:.1f} {ym - 4:.1f}v8" stroke="#0b3d91" stroke-width="1.5" fill="none"/>'
                )
            parts.append(
                f'<text class="num" data-src="{esc(b.src)}" data-d="{b.digits}" x="{LABEL_W + PLOT_W + 4}" '
                f'y="{y + 12}">{esc(fmt_number(v, b.digits))}</text>'
            )
        else:
            parts.append(f'<text x="{LABEL_W + 4}" y="{y + 12}" fill="#57606a">undefined</text>')
    ya = 4 + len(bars) * ROW_H + 2
    parts.append(f'<path d="M{LABEL_W} {ya}H{LABEL_W + PLOT_W}" stroke="#57606a"/>')
    scale = "" if declared else " (data range)"
    parts.append(f'<text class="tick" x="{LABEL_W}" y="{ya + 14}">{esc(_tick(lo))}</text>')
    parts.append(
        f'<text class="tick" x="{LABEL_W + PLOT_W}" y="{ya + 14}" text-anchor="end">{esc(_tick(hi))}{esc(scale)}</text>'
    )
    parts.append("</svg>")
    cap = f'<div class="note">{esc(note)}</div>' if note else ""
    return f'<div class="plot"><h4>{esc(title)}</h4>{"".join(parts)}{cap}</div>'


def grouped_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, dict[str, tuple[float | None, str]]]],
    value_range: Sequence[float] | None,
    digits: int = 3,
) -> str:
    """Per category (domain), one bar per system: series = [(system, {category: (value, src)})]."""
    bars: list[Bar] = []
    rows: list[tuple[str, Bar | None]] = []
    for cat in categories:
        rows.append((cat, None))
        for system, vals in series:
            v, src = vals.get(cat, (None, ""))
            b = Bar(system, v, src, digits=digits)
            bars.append(b)
            rows.append(("", b))
    lo, hi, declared = axis_range(bars, value_range)
    height = ROW_H * len(rows) + 26
    width = LABEL_W + PLOT_W + VALUE_W
    parts = [
        f"<svg{attrs(width=width, height=height, viewBox=f'0 0 {width} {height}', role='img')}>"
        f"<title>{esc(title)}</title>"
    ]
    for i, (cat, b) in enumerate(rows):
        y = 4 + i * ROW_H
        if b is None:
            parts.append(f'<text x="4" y="{y + 12}" font-weight="600">{esc(cat[:60])}</text>')
            continue
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end">{esc(b.label[:24])}</text>')
        if is_number(b.value):
            v = float(b.value)  # type: ignore[arg-type]
            x1 = _x(v, lo, hi)
            x0 = _x(max(lo, 0.0) if lo < 0 < hi else lo, lo, hi)
            a, c = sorted((x0, x1))
            parts.append(
                f'<rect x="{a:.1f}" y="{y + 2}" width="{max(c - a, 0.5):.1f}" height="{ROW_H - 6}" fill="#c9b6f2"/>'
            )
            parts.append(
                f'<text class="num" data-src="{esc(b.src)}" data-d="{b.digits}" x="{LABEL_W + PLOT_W + 4}" '
                f'y="{y + 12}">{esc(fmt_number(v, b.digits))}</text>'
            )
        else:
            parts.append(f'<text x="{LABEL_W + 4}" y="{y + 12}" fill="#57606a">—</text>')
    ya = 4 + len(rows) * ROW_H + 2
    parts.append(f'<path d="M{LABEL_W} {ya}H{LABEL_W + PLOT_W}" stroke="#57606a"/>')
    scale = "" if declared else " (data range)"
    parts.append(f'<text class="tick" x="{LABEL_W}" y="{ya + 14}">{esc(_tick(lo))}</text>')
    parts.append(
        f'<text class="tick" x="{LABEL_W + PLOT_W}" y="{ya + 14}" text-anchor="end">'
        f"{esc(_tick(hi))}{esc(scale)}</text></svg>"
    )
    return f'<div class="plot"><h4>{esc(title)}</h4>{"".join(parts)}</div>'


def _tick(v: float) -> str:
    if math.isfinite(v) and float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.3g}"
