"""A chapter's GPU half: what the ``full``-profile records (a burst on a GPU, see
``scripts/gpu_burst.sh``) say, beside the CPU's. The verdict of each registered comparison on
the GPU records (:mod:`tfx.book.evidence`'s rule, a failure whose runs still improve *behind at
this budget*), the sides whose best rate sits at the grid's edge, the records' size and card,
and their forest plot, stamped with the records' own profile and device, not the page's."""
from __future__ import annotations

from ..runs import effects
from . import evidence, plot
from .notebook import glue, md
from .tables import gpu_records, outcome_counts


def section(rs, rows: str, cols: str, key: str):
    """A chapter's GPU half from its ``full``-profile records ``rs``: glue ``key`` (in, or not
    yet in) and return the records' Markdown (:func:`tfx.book.tables.gpu_records`) or None."""
    if not rs:
        glue(key, "The GPU runs of this sweep are not in yet; the box at the end of the page "
                  "says how to run them.")
        return None
    from ..runs.experiment import Experiment

    planned = len(Experiment.load(rs[0].experiment).runs("full"))
    so_far = "" if len(rs) >= planned else f", {len(rs)} of its {planned} runs so far (the rest wait for a GPU)"
    glue(key, f"The same sweep at the GPU's size (the full profile){so_far}:")
    return md(gpu_records({rs[0].experiment: rs}, {rs[0].experiment: (rows, cols)}))


def edges(gpu: dict, items) -> list[str]:
    """'Post-LN, warmup: best at lr=0.0003, the lowest rate tried' for each side of an
    own-rate comparison in ``items`` whose best rate sits at the edge of its grid: there the
    verdict reads that side at a rate that may not be its best."""
    out = []
    for c, _ in items:
        for p in c.points() if c.own_rate else ():
            edge = effects.best_rate_edge(gpu[c.experiment], **p)
            text = edge and f"{edge[0]}: best at {edge[1]}, the {edge[2]} rate tried"
            if text and text not in out:
                out.append(text)
    return out


def _why(c, records) -> str:
    """Why ``c``'s verdict on ``records`` reads as it does, or '': ' (10 of its 10 runs still
    falling at the end)' (converged quality), ' (Post-LN at its best rate: still learning 5 of
    5; behind at this budget)' (:meth:`tfx.book.evidence.Comparison.half`)."""
    falling, n = c.still_falling(records) if c.converged else (0, 0)
    if falling:  # Comparison.verdict's rule: not testable at this scale
        return f" ({falling} of its {n} runs still falling at the end)"
    if c.half(records) != evidence.BEHIND:
        return ""
    where = " at its best rate" if c.own_rate else ""
    return f" ({c.a}{where}: {outcome_counts(c.side(records, c.a))}; {evidence.BEHIND})"


def verdicts_markdown(gpu: dict, items, cpu: dict | None = None) -> str:
    """The "At GPU scale" verdicts as a Markdown list: per comparison the claim, its sentence,
    the paired effect and the verdict (:meth:`tfx.book.evidence.Comparison.verdict`, with
    :func:`_why`), the same on the CPU records ``cpu`` (``{experiment: records}``) where given;
    then the sides whose best rate is at the edge of the GPU grid (:func:`edges`)."""
    if not items:
        return ("No registered comparison can be read from the GPU records yet; the box at the "
                "end of the page says how to run the rest.")
    lines = []
    for c, e in items:
        line = f"- **{c.claim}**, {c.label(gpu[c.experiment])}. GPU: {e.describe()}, **{c.verdict(gpu[c.experiment], e)}**"
        line += _why(c, gpu[c.experiment]) + "."
        if cpu and cpu.get(c.experiment) and c.reads(cpu[c.experiment]):
            e_cpu = c.effect(cpu[c.experiment])
            line += f" CPU: {e_cpu.describe()}, {c.verdict(cpu[c.experiment], e_cpu)}."
        lines.append(line)
    at_edge = edges(gpu, items)
    if at_edge:
        lines.append("- At the edge of the GPU grid (so the verdict may not read that side at "
                     "its own best rate): " + "; ".join(at_edge) + ".")
    return "\n".join(lines)


def scale(records) -> str:
    """'6+6 and 18+18 layers, d 512, bfloat16 on NVIDIA H200': the sizes and device of GPU
    records, every depth and width they hold (shallowest first)."""
    words = lambda values: " and ".join(map(str, values))  # noqa: E731
    depths = sorted({(c.n_enc, c.n_dec) for c in (r.config for r in records)})
    layers = words(f"{e}+{d}" if d else str(e) for e, d in depths)
    widths = words(sorted({r.config.d_model for r in records}))
    dtypes = words(sorted({r.amp_dtype or "float32" for r in records}))
    return f"{layers} layers, d {widths}, {dtypes} on {devices(records)}"


def devices(records) -> str:
    """The devices of ``records``, each by its card's name where one is recorded."""
    return ", ".join(sorted({r.device_name or r.device for r in records}))


def records_profile(P, records):
    """``P`` stamped with the records' own profile, device (card name where recorded) and task,
    not the page's (a GPU figure on a page built on a CPU says it ran on the GPU)."""
    import dataclasses

    r = records[0]
    return dataclasses.replace(P, name=r.profile or P.name, device=devices(records), task=r.task or P.task,
                               task_note="")


def parts(gpu: dict, items, claim: str) -> str:
    """``claim``'s halves as the GPU records ``gpu`` show them: :func:`tfx.book.evidence.parts`'s
    rule over the comparisons of ``claim`` in ``items`` (:func:`tfx.book.evidence.gpu_effects`), each half judged
    on its own, a 'failure' whose runs still improve *behind at this budget*."""
    mine = [(c, e, c.verdict(gpu[c.experiment], e)) for c, e in items if c.claim == claim]
    if not mine:
        return "none can be read yet"
    halves = [c.half(gpu[c.experiment]) for c, _, _ in mine]
    return evidence.parts_line(evidence.part_items(mine, halves))


def effects_figure(P, items, records):
    """The forest plot of the GPU verdicts (:func:`tfx.book.plot.effects_figure`), titled with the size and
    card of ``records`` (:func:`scale`) and stamped with their profile, card and task; a
    figure that says so while no comparison can be read."""
    if items:
        mine = {c.experiment: [r for r in records if r.experiment == c.experiment] for c, _ in items}
        return plot.effects_figure(
            records_profile(P, records),
            [(f"{c.claim}: {c.label(mine[c.experiment])}", e) for c, e in items],
            title=f"{scale(records)}: paired effects (nats), every seed, 95 % interval")
    fig, ax = plot.figure(P, width=8.0, height=1.2)
    ax.text(0.5, 0.5, "not yet run on a GPU", ha="center", va="center")
    ax.set_axis_off()
    return fig
