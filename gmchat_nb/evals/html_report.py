"""A self-contained HTML eval report: one file, inline CSS, no scripts, every value escaped.

It holds what the text reports hold: the dimension table per provider, the outcomes, the calls
the project accepted, the right manager and (with timings) the speed, the providers' own
descriptions, the cost and the cost per passed case ("—" when unknown), for a run that names
knowledge modes what recall did and each case's requests, tool calls, tokens and prompt
characters, the diagnostics, a
per-case table (status, requests, tokens, cost, failure category, optionally seconds) and every
non-passing case with its reasons. Case names, answers and
reasons come from datasets and models, so every one of them goes through :func:`html.escape`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from .costs import money_text, provider_cost
from .diagnostics import diagnostics_lines, primary_diagnosis
from .figures import calls_text, run_figures, speed_text
from .knowledge import mode_figures, recall_text, trusted_text
from .report import EVALUATION_CONTRACT, dimension_counts, outcomes, provider_notes, rate_text
from .runner import CaseResult

__all__ = ["html_report", "write_html_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #116b2e; font-weight: 600; } .fail { color: #a11212; font-weight: 600; }
.unscored { color: #8a5a00; font-weight: 600; }
.note { background: #fff6d6; padding: 0.5rem 0.8rem; border-left: 4px solid #e0b400; }
pre { white-space: pre-wrap; background: #f5f5f5; padding: 0.5rem; margin: 0.3rem 0; }
ul.reasons { margin: 0.2rem 0 0.8rem; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _summary_table(
    results: Sequence[CaseResult], providers: Sequence[str], *, timings: bool
) -> list[str]:
    by_provider = {p: [r for r in results if r.provider == p] for p in providers}
    counts = {p: {d: (a, b) for d, a, b in dimension_counts(rs)} for p, rs in by_provider.items()}
    dimensions = [d for d, _, _ in dimension_counts(results)]
    head = "".join(f'<th class="num" colspan="3">{_e(p)}</th>' for p in providers)
    sub = '<th class="num">Pass</th><th class="num">Total</th><th class="num">Rate</th>'
    out = [
        "<table>",
        f"<thead><tr><th>Dimension</th>{head}</tr>",
        f"<tr><th></th>{sub * len(providers)}</tr></thead>",
        "<tbody>",
    ]
    for dimension in dimensions:
        cells = []
        for p in providers:
            passed, total = counts[p].get(dimension, (0, 0))
            cells.append(
                f'<td class="num">{passed}</td><td class="num">{total}</td>'
                f'<td class="num">{_e(rate_text(passed, total))}</td>'
            )
        out.append(f"<tr><th>{_e(dimension)}</th>{''.join(cells)}</tr>")
    cells = []
    for p in providers:
        cells.append(f'<td colspan="3">{_e(outcomes(by_provider[p]))}</td>')
    out.append(f"<tr><th>Outcomes</th>{''.join(cells)}</tr>")
    figures = [run_figures(by_provider[p]) for p in providers]
    cells = [f'<td colspan="3">{_e(calls_text(f))}</td>' for f in figures]
    out.append(f"<tr><th>Calls</th>{''.join(cells)}</tr>")
    if timings:
        cells = [f'<td colspan="3">{_e(speed_text(f))}</td>' for f in figures]
        out.append(f"<tr><th>Speed</th>{''.join(cells)}</tr>")
    costs = [provider_cost(p, by_provider[p]) for p in providers]
    cells = [
        f'<td colspan="3">{_e(money_text(c.cost_usd))} in all, '
        f"{_e(money_text(c.per_passed_case))} per passed case</td>"
        for c in costs
    ]
    out.append(f"<tr><th>Cost</th>{''.join(cells)}</tr>")
    if any(r.knowledge is not None for r in results):
        modes = [mode_figures(by_provider[p]) for p in providers]
        cells = [
            f'<td colspan="3">{_e(m.mode or "settings")}: recalled before {m.recalled_turns} '
            f"of {m.turns} turns, {m.trusted_turns} trusted answers</td>"
            for m in modes
        ]
        out.append(f"<tr><th>Knowledge</th>{''.join(cells)}</tr>")
        cells = [
            f'<td colspan="3">{m.requests:.1f} requests, {m.tool_calls:.1f} tool calls, '
            f"{m.tokens:,.0f} tokens, {m.prompt_characters:,.0f} prompt characters</td>"
            for m in modes
        ]
        out.append(f"<tr><th>Per case</th>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return out


def _status(status: str) -> str:
    return f'<span class="{_e(status)}">{_e(status.upper())}</span>'


def _case_table(results: Sequence[CaseResult], *, timings: bool, several: bool) -> list[str]:
    columns = ["Case", "Status", "Requests", "Tokens", "Cost", "Failure category"]
    if several:
        columns.insert(0, "Provider")
    if timings:
        columns.append("Seconds")
    numeric = {"Requests", "Tokens", "Cost", "Seconds"}
    head = "".join(
        f'<th class="num">{c}</th>' if c in numeric else f"<th>{c}</th>" for c in columns
    )
    out = ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    for r in results:
        diagnosis = None if r.passed else primary_diagnosis(r)
        cells = [
            f"<td>{_e(r.case.name)}</td>",
            f"<td>{_status(r.status)}</td>",
            f'<td class="num">{r.requests}</td>',
            f'<td class="num">{r.tokens}</td>',
            f'<td class="num">{_e(money_text(r.cost_usd))}</td>',
            f"<td>{'' if diagnosis is None else _e(diagnosis.key)}</td>",
        ]
        if several:
            cells.insert(0, f"<td>{_e(r.provider)}</td>")
        if timings:
            cells.append(f'<td class="num">{r.seconds:.2f}</td>')
        out.append(f"<tr>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return out


def _failures(results: Sequence[CaseResult], *, several: bool) -> list[str]:
    failed = [r for r in results if r.status != "pass"]
    if not failed:
        return []
    out = ["<h2>Failures</h2>"]
    for r in failed:
        who = f" ({_e(r.provider)})" if several else ""
        out.append(f"<h3>{_e(r.case.name)}{who}: {_status(r.status)}</h3>")
        if r.case.description:
            out.append(f"<p>{_e(r.case.description)}</p>")
        diagnosis = primary_diagnosis(r)
        if diagnosis is not None:
            out.append(f"<p>[{_e(diagnosis.key)}] {_e(diagnosis.advice)}</p>")
        if r.reasons:
            out.append('<ul class="reasons">')
            out.extend(f"<li>{_e(reason)}</li>" for reason in r.reasons)
            out.append("</ul>")
        for number, turn in enumerate(r.turns, start=1):
            out.append(f"<p>Turn {number}: {_e(turn.user)}</p>")
            recalled, trusted = recall_text(turn), trusted_text(turn)
            if recalled is not None:
                out.append(f"<p>Recalled: {_e(recalled)}</p>")
            out.append(f"<pre>{_e(turn.answer or '(no answer)')}</pre>")
            if trusted is not None:
                out.append(f"<p>{_e(trusted)}</p>")
    return out


def html_report(
    results: Sequence[CaseResult],
    providers: Sequence[str] | None = None,
    *,
    title: str = "Chat evaluation",
    timings: bool = True,
) -> str:
    """The whole report as one HTML document (no external resources, no scripts).

    ``providers`` orders the columns (default: the order the results name them); ``timings``
    adds the speed and the per-case Seconds column.
    """
    labels = list(providers or dict.fromkeys(r.provider for r in results))
    several = len(labels) > 1
    body = [f"<h1>{_e(title)}</h1>", f"<p>Evaluation contract: {_e(EVALUATION_CONTRACT)}</p>"]
    notes = provider_notes(results)
    if notes:
        body.append('<div class="note"><strong>Providers:</strong><ul>')
        body.extend(f"<li>{_e(label)}: {_e(note)}</li>" for label, note in notes.items())
        body.append("</ul></div>")
    body.append("<h2>Summary</h2>")
    body.extend(_summary_table(results, labels, timings=timings))
    for label in labels:
        lines = diagnostics_lines([r for r in results if r.provider == label])
        if lines:
            heading = f"Diagnostics ({label})" if several else "Diagnostics"
            body.append(f"<h2>{_e(heading)}</h2>")
            body.append("<ul>")
            body.extend(f"<li>{_e(line.strip())}</li>" for line in lines[1:])
            body.append("</ul>")
    body.append("<h2>Cases</h2>")
    body.extend(_case_table(results, timings=timings, several=several))
    body.extend(_failures(results, several=several))
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f"<title>{_e(title)}</title>",
            f"<style>{_STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def write_html_report(
    results: Sequence[CaseResult],
    path: str | Path,
    providers: Sequence[str] | None = None,
    *,
    timings: bool = True,
) -> None:
    """Write :func:`html_report` to ``path`` (UTF-8), replacing the file."""
    Path(path).write_text(html_report(results, providers, timings=timings), encoding="utf-8")
