"""A TraceDiagnosis as text: one line per step, then the places to look at (gaps, syncs, waste, hotspots)."""

from __future__ import annotations

from .diagnose import StepStats, TraceDiagnosis

MAX_STEPS = 12  # rows of the step table; the rest are summarised
MAX_ITEMS = 5


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _bytes(n: int) -> str:
    sign = "-" if n < 0 else "+"
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n} B"


def _row(s: StepStats, gpu: bool) -> str:
    idle = f"{_num(s.gpu_idle_ms)} ({_num(s.gpu_idle_fraction, '{:.0%}')})" if gpu else "-"
    kernels = f"{s.kernels} ({s.compiled_kernels})" if gpu else "-"
    delay = f"{s.launch_delay_us.median:.0f}/{s.launch_delay_us.p95:.0f}" if s.launch_delay_us else "-"
    return (
        f"  {s.step:>4}  {s.wall_ms:>9.2f}  {idle:>15}  {kernels:>10}  {_num(s.gpu_ms if gpu else None):>7}  "
        f"{s.layout_transforms:>6}  {s.copies:>6}  {s.syncs:>5}  {delay:>9}  {_num(s.max_ms_between_denoiser_calls):>8}"
    )


def render_diagnosis(d: TraceDiagnosis) -> str:
    """The diagnosis as a few dozen lines at most (see the module doc). Without GPU activity (a CPU or emulated run)
    the figures that only a GPU trace gives (idle, kernels, launch delays, layout and copy kernels, runtime syncs)
    are left out rather than shown empty."""
    lines = [
        f"trace diagnosis: {len(d.steps)} step(s), "
        + ("GPU activity recorded" if d.gpu else "CPU only (GPU figures left out; syncs are the sync check's)")
    ]
    if d.steps:
        shown = d.steps[:MAX_STEPS]
        if d.gpu:
            lines.append(
                "  step  window ms  GPU idle ms (%)  kernels(c)   GPU ms  layout  copies  syncs  launch µs  between"
            )
            lines.extend(_row(s, d.gpu) for s in shown)
        else:
            lines.append("  step  window ms  between")
            lines.extend(f"  {s.step:>4}  {s.wall_ms:>9.2f}  {_num(s.max_ms_between_denoiser_calls):>7}" for s in shown)
        if len(d.steps) > len(shown):
            lines.append(f"  ... {len(d.steps) - len(shown)} more step(s) in the JSON report")
        lines.append(
            (
                "  (kernels(c): compiled ones in brackets; launch µs: kernel start − launch, median/p95; "
                if d.gpu
                else "  ("
            )
            + "between: longest host ms between two denoiser calls)"
        )
    if d.launch_delay_us:
        p = d.launch_delay_us
        lines.append(f" launch delay over {p.count} launches: median {p.median:.0f} µs, p95 {p.p95:.0f} µs")
    if d.gaps:
        lines.append(" largest GPU gaps (the device waited; the host was doing):")
        for g in d.gaps[:MAX_ITEMS]:
            lines.append(f"   {g.ms:.3f} ms in step {g.step} at {g.at_ms:.3f} ms, after {g.before}: {g.host.label()}")
    if d.syncs:
        lines.append(" syncs:")
        for s in d.syncs[:MAX_ITEMS]:
            where = s.step if s.phase == "step" else s.phase.replace("_", " ")
            stack = " ← ".join(s.python[:3]) or "no Python stack (with_stack off)"
            lines.append(f"   step {where}: {s.kind} ({s.call}) in {s.op or 'no aten op'}: {stack}")
        if len(d.syncs) > MAX_ITEMS:
            lines.append(f"   ... {len(d.syncs) - MAX_ITEMS} more")
    for label, attr in (("layout transforms", "layout_kernels"), ("device copies", "copy_kernels")):
        steps = [s for s in d.steps if getattr(s, attr)]
        if steps:
            worst = max(steps, key=lambda s: sum(getattr(s, attr).values()))
            items = ", ".join(f"{k} ×{n}" for k, n in list(getattr(worst, attr).items())[:MAX_ITEMS])
            lines.append(f" {label} in step {worst.step}: {items}")
    hot = sorted((s for s in d.steps if s.hotspots), key=lambda s: -s.hotspots[0].self_ms)[:3]
    if hot:
        lines.append(" host hotspots (self time):")
        for s in hot:
            h = s.hotspots[0]
            lines.append(f"   step {s.step}: {h.self_ms:.3f} ms {h.host.label() if h.host.python else h.name}")
    devices = sorted({m.device for s in d.steps for m in s.memory})
    for device in devices:
        parts = [
            f"step {s.step} {_bytes(m.growth_bytes)} (peak {_bytes(m.peak_bytes)[1:]})"
            for s in d.steps[:MAX_STEPS]
            for m in s.memory
            if m.device == device
        ]
        lines.append(f" memory allocated on {device}, growth per step: " + ", ".join(parts))
    for note in d.notes:
        if d.gpu or not note.startswith("no GPU activity"):  # the header says it already
            lines.append(f" note: {note}")
    return "\n".join(lines)
