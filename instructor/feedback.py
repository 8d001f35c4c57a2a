"""One feedback file per student (Markdown and HTML) that a student can act on.

Each exercise gets its points, what the hidden tests found (the failing hidden case's description and
what was wrong with it) and the hint the notebook's own check printed. Nothing in it comes from the
instructor's side beyond that: no Python exception class names (:func:`student_text` rewrites them
into words), no file paths, no hidden-test source, no link into the instructor's build folder.
"""

from __future__ import annotations

import html
import re

EXCEPTION_NAME = re.compile(
    r"\b(?:[A-Z][A-Za-z]*(?:Error|Exception|Interrupt|Exit|Timeout|Gone|Warning)|StopIteration|NotImplemented)\b:?\s*")
PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-~+]+){2,}/?")
DETAIL_CHARS = 400
STATUS_WORDS = {"passed": "passed", "partial": "partly right", "failed": "not right yet",
                "not attempted": "not attempted", "not graded": "not graded",
                "broke a rule": "0: a rule of the exercise was broken"}


def student_text(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` without exception class names, file paths or markup-breaking characters, at most ``limit``
    characters long (whatever the student's code raised, the feedback stays short)."""
    text = re.sub(r"raised\s+" + EXCEPTION_NAME.pattern, "raised an error: ", str(text))
    text = EXCEPTION_NAME.sub("", text)
    text = PATH.sub("(a file)", text)
    text = re.sub(r"'?(?:instructor\.)?hidden_tests[\w.]*'?", "the grader", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _number(x: float) -> str:
    return f"{round(x, 2):g}"


def rows_for(student_rows: list[tuple[str, dict]]) -> list[dict]:
    """The feedback rows of one student: [(notebook, exercise result dict)] -> display dicts."""
    rows = []
    for notebook, e in student_rows:
        cases = e.get("cases") or {}
        passed = sum(1 for why in cases.values() if why is None)
        total = max(int(e.get("case_total") or 0), len(cases))
        detail = student_text(e.get("message", ""))
        if total and e["status"] in ("partial", "failed"):
            detail = f"{passed} of {total} hidden cases passed. {detail}".strip()
        if e.get("override"):
            detail = f"{detail} Points set by your instructor: {student_text(e['override'])}".strip()
        rows.append({"notebook": notebook, "exercise": e["exercise"], "points": _number(e["points"]),
                     "max": e["max_points"], "status": STATUS_WORDS.get(e["status"], e["status"]),
                     "detail": detail, "hint": student_text(e.get("hint", ""))})
    return rows


def markdown(student: str, rows: list[dict], total: float, max_total: int, notes: list[str]) -> str:
    lines = [f"# Feedback for {student}", "", f"**{_number(total)} of {max_total} points.**", ""]
    lines += [f"- {student_text(n)}" for n in notes]
    if notes:
        lines.append("")
    lines += ["| exercise | points | result | what the hidden tests found | your notebook's own check said |",
              "|---|---|---|---|---|"]
    for r in rows:
        cells = [r["exercise"], f"{r['points']} / {r['max']}", r["status"], r["detail"] or "—", r["hint"] or "—"]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    lines += ["", "Run the exercise's check cell in your notebook again after a change: it gives the same kind of "
              "hint on the public cases. The hidden cases use other inputs than the public ones.", ""]
    return "\n".join(lines)


def to_html(student: str, rows: list[dict], total: float, max_total: int, notes: list[str]) -> str:
    esc = html.escape
    body = [f"<h1>Feedback for {esc(student)}</h1>", f"<p><strong>{_number(total)} of {max_total} points.</strong></p>"]
    if notes:
        body.append("<ul>" + "".join(f"<li>{esc(student_text(n))}</li>" for n in notes) + "</ul>")
    body.append("<table><thead><tr><th>exercise</th><th>points</th><th>result</th><th>what the hidden tests found</th>"
                "<th>your notebook's own check said</th></tr></thead><tbody>")
    for r in rows:
        body.append(f"<tr><td>{esc(r['exercise'])}</td><td>{esc(r['points'])} / {r['max']}</td>"
                    f"<td>{esc(r['status'])}</td><td>{esc(r['detail'] or '—')}</td><td>{esc(r['hint'] or '—')}</td></tr>")
    body.append("</tbody></table><p>Run the exercise's check cell in your notebook again after a change: it gives "
                "the same kind of hint on the public cases. The hidden cases use other inputs than the public ones.</p>")
    style = ("body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}"
             "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.3rem .5rem;vertical-align:top}")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Feedback for {esc(student)}"
            f"</title><style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
