#!/usr/bin/env python3
"""The logging cost curve's chart (bench/logcurve.sh): the ratio to the bare server against the
lines a request, one line per logger, lossless solid and lossy dashed, a cross where a config
dropped lines, and ferrowizard's goals. A plain SVG written by hand (no plotting library to
install): BENCHMARKS.md and the guide show it as it is.

    python3 bench/logcurve_chart.py target/logcurve/rows.txt target/logcurve/curve.svg
"""

import math
import sys
from html import escape

import goals

# Each logger's colour and its name in the legend; both modes of a logger share the colour.
LOGGERS = [
    ("ferrowizard", "#d62728", "ferrowizard"),
    ("fmt", "#1f77b4", "tracing-subscriber fmt"),
    ("non-blocking", "#17becf", "tracing-appender non_blocking"),
    ("log4rs", "#9467bd", "log4rs"),
    ("slog", "#8c564b", "slog + slog-async"),
    ("fern", "#2ca02c", "fern"),
    ("jvm", "#ff7f0e", "Jetty 9.4 + logback AsyncAppender"),
    ("other-ferrowizard", "#7f7f7f", "ferrowizard, other build"),
]

WIDTH, HEIGHT = 860, 460
LEFT, RIGHT, TOP, BOTTOM = 60, 320, 40, 50


def logger_of(config):
    """The logger and its mode: `slog-lossy` is (`slog`, "lossy"); a logger with one mode
    (`fmt`) writes on the request thread: "blocking"."""
    name = config
    mode = "lossy" if name.endswith("-lossy") else "lossless" if name.endswith("-lossless") else "blocking"
    for suffix in ("-lossless", "-lossy"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name, mode


def chart(table):
    """The SVG of `table` ({(config, lines): (ratio, dropped)}, from goals.curve)."""
    ns = sorted({n for _, n in table})
    if not ns:
        raise ValueError("no figures to draw")
    top = max(1.1, max(r for r, _ in table.values()) * 1.05)
    lo, hi = math.log(ns[0]), math.log(ns[-1])
    span = (hi - lo) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(n):
        return LEFT + (math.log(n) - lo) / span * plot_w if len(ns) > 1 else LEFT + plot_w / 2

    def y(ratio):
        return TOP + plot_h - ratio / top * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14" font-weight="bold">'
        "Requests a second with logging, over the same server logging nothing</text>",
    ]
    # Grid and axes.
    step = 0.1 if top <= 1.2 else 0.2
    tick = 0.0
    while tick <= top + 1e-9:
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="{"#888" if tick == 0 else "#e4e4e4"}"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.1f}x</text>'
        )
        tick = round(tick + step, 10)
    for n in ns:
        out.append(
            f'<line x1="{x(n):.1f}" x2="{x(n):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#e4e4e4"/>'
        )
        out.append(f'<text x="{x(n):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{n}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
        "INFO lines a request (log scale)</text>"
    )
    # ferrowizard's goals.
    for n, goal in goals.CURVE.items():
        if n in ns:
            out.append(
                f'<line x1="{x(n) - 14:.1f}" x2="{x(n) + 14:.1f}" y1="{y(goal):.1f}" '
                f'y2="{y(goal):.1f}" stroke="#d62728" stroke-width="3" opacity="0.45"/>'
            )
            out.append(
                f'<text x="{x(n) - 17:.1f}" y="{y(goal) + 16:.1f}" text-anchor="end" '
                f'fill="#d62728">goal {goal}x</text>'
            )
    # One line per config.
    legend = []
    configs = sorted({c for c, _ in table}, key=lambda c: (order(c), c))
    for config in configs:
        name, mode = logger_of(config)
        lossy = mode == "lossy"
        colour, label = colour_of(name)
        points = [(n, table[(config, n)]) for n in ns if (config, n) in table]
        path = " ".join(f"{x(n):.1f},{y(r):.1f}" for n, (r, _) in points)
        dash = ' stroke-dasharray="7 5"' if lossy else ""
        width = 3 if name == "ferrowizard" else 2
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{dash}/>'
        )
        for n, (r, lost) in points:
            if lost > 0:
                cx, cy = x(n), y(r)
                out.append(
                    f'<path d="M{cx - 5:.1f},{cy - 5:.1f}L{cx + 5:.1f},{cy + 5:.1f}'
                    f'M{cx - 5:.1f},{cy + 5:.1f}L{cx + 5:.1f},{cy - 5:.1f}" '
                    f'stroke="{colour}" stroke-width="2.5"/>'
                )
            else:
                out.append(f'<circle cx="{x(n):.1f}" cy="{y(r):.1f}" r="3" fill="{colour}"/>')
        legend.append((colour, f"{label}, {mode}", lossy))
    lx, ly = WIDTH - RIGHT + 20, TOP + 6
    for i, (colour, text, lossy) in enumerate(legend):
        yy = ly + i * 20
        dash = ' stroke-dasharray="7 5"' if lossy else ""
        out.append(
            f'<line x1="{lx}" x2="{lx + 30}" y1="{yy}" y2="{yy}" stroke="{colour}" stroke-width="2.5"{dash}/>'
        )
        out.append(f'<text x="{lx + 36}" y="{yy + 4}">{escape(text)}</text>')
    yy = ly + len(legend) * 20 + 10
    out.append(
        f'<path d="M{lx + 10},{yy - 5}L{lx + 20},{yy + 5}M{lx + 10},{yy + 5}L{lx + 20},{yy - 5}" '
        'stroke="#444" stroke-width="2.5"/>'
    )
    out.append(f'<text x="{lx + 36}" y="{yy + 4}">lines dropped at that point</text>')
    out.append(f'<circle cx="{lx + 15}" cy="{yy + 20}" r="3" fill="#444"/>')
    out.append(f'<text x="{lx + 36}" y="{yy + 24}">every line written</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def order(config):
    name, _ = logger_of(config)
    names = [n for n, _, _ in LOGGERS]
    return names.index(name) if name in names else len(names)


def colour_of(name):
    for n, colour, label in LOGGERS:
        if n == name:
            return colour, label
    return "#444", name


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        rows = [
            (p[0], int(p[1]), p[2], float(p[3]), int(p[4]), int(p[5]))
            for p in (line.split() for line in f)
            if len(p) == 6
        ]
    table, _ = goals.curve(rows)
    try:
        svg = chart(table)
    except ValueError as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 1
    with open(argv[2], "w") as f:
        f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
