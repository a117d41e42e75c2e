"""Code and docs say what a thing does and why, never only which issue asked for it.

A reader without the issue tracker learns nothing from "Issue 31: ..." or a heading "(issue 25)";
commit messages carry the issue numbers.  This reads every module of the package (not tests,
benchmarks or scripts) with :mod:`ast` and :mod:`tokenize`, and every Markdown heading of
README.md and docs/, and fails on:

* a module docstring that starts with an issue reference, or is nothing but one (an issue number
  may stay as an aside after the docstring has said what the module does);
* a comment that is an issue reference and nothing else (``# issue 24``);
* a README or docs heading that names an issue (headings name features);
* an ``analysis/`` family folder whose ``__init__.py`` lacks a docstring with at least one
  paragraph saying what the family computes from what (docs/architecture.md lists the families).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from support import ROOT

OUTSIDE_THE_PACKAGE = {"tests", "benchmarks", "scripts", "samples", "docs", "native", "build", "dist"}

#: "issue 31", "Issues 15 and 26", "issues 24, 33, 36", "issue 36 item 3", "issue 25's".
ISSUE_REF = re.compile(
    r"\(?\b[Ii]ssues?\s+\d+(?:(?:\s*,\s*|\s+and\s+|\s*-\s*)\d+)*(?:'s)?(?:\s+items?\s+\d+(?:\s*,\s*\d+)*)?\)?"
)
#: What may stand beside an issue reference in a docstring that says nothing else.
FILLER_WORDS = {"see", "for", "from", "fix", "fixes", "per", "as", "in", "of", "the", "by", "asked"}


def package_modules() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in OUTSIDE_THE_PACKAGE or any(part.startswith(".") for part in parts):
            continue
        yield path


def only_or_starts_with_issue(text: str) -> str | None:
    """Why ``text`` (a docstring) explains itself by issue number, or None where it says what."""
    stripped = text.strip()
    if ISSUE_REF.match(stripped):
        return "starts with an issue reference"
    words = re.findall(r"[A-Za-z]+", ISSUE_REF.sub(" ", stripped))
    if ISSUE_REF.search(stripped) and all(word.lower() in FILLER_WORDS for word in words):
        return "is only an issue reference"
    return None


def bare_issue_comment(comment: str) -> bool:
    """Whether a comment is an issue reference and nothing else (``# issue 24``, ``#: Issue 36.``)."""
    body = comment.lstrip("#:").strip()
    return bool(body) and not re.sub(r"[\s.,;:()\-]", "", ISSUE_REF.sub("", body))


def markdown_headings(path: Path) -> Iterator[tuple[int, str]]:
    """The ATX headings of a Markdown file, outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6}\s", line):
            yield number, line


def test_the_rules_tell_what_from_which_issue() -> None:
    """The rules themselves, on the kinds of text they must refuse and the kinds they must keep."""
    assert only_or_starts_with_issue("Issue 31: one iteration chosen to narrow the views.")
    assert only_or_starts_with_issue("Issues 15 and 26: a profile's timeline and critical path.")
    assert only_or_starts_with_issue("(issue 24) The perf model.")
    assert only_or_starts_with_issue("See issue 24.")
    assert not only_or_starts_with_issue("The Efficiency pane: the roofline chart over the perf-model table.")
    assert not only_or_starts_with_issue("Keys that do nothing say why (issue 34: act, or explain).")
    assert bare_issue_comment("# issue 36")
    assert bare_issue_comment("#: Issues 31, 36.")
    assert not bare_issue_comment("# issue 24: categories, model FLOPs, MFU")
    assert not bare_issue_comment("# the Overview's path line (issue 32)")


def test_no_module_docstring_explains_itself_by_issue_number() -> None:
    found = []
    for path in package_modules():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=True)
        why = docstring and only_or_starts_with_issue(docstring)
        if why:
            found.append(f"{path.relative_to(ROOT)}: {why}: {docstring.splitlines()[0][:90]!r}")
    assert not found, "module docstrings that say which issue, not what:\n" + "\n".join(found)


def test_no_comment_is_only_an_issue_number() -> None:
    found = []
    for path in package_modules():
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        found += [
            f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string}"
            for token in tokens
            if token.type == tokenize.COMMENT and bare_issue_comment(token.string)
        ]
    assert not found, "comments that are only an issue number:\n" + "\n".join(found)


def test_headings_name_features_not_issues() -> None:
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(documents) > 10  # README and docs/ are there to be read
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line}"
        for path in documents
        for number, line in markdown_headings(path)
        if ISSUE_REF.search(line)
    ]
    assert not found, "headings that name an issue:\n" + "\n".join(found)


def test_every_analysis_family_says_what_it_computes() -> None:
    """Each folder of analysis/ opens with a summary line and at least one paragraph below it."""
    families = sorted(init.parent for init in (ROOT / "analysis").rglob("*/__init__.py"))
    names = {family.relative_to(ROOT / "analysis").as_posix() for family in families}
    assert {"trace", "tables", "efficiency", "graphs", "serving", "critical_path", "distributed", "diff"} <= names
    thin = []
    for family in families:
        docstring = ast.get_docstring(ast.parse((family / "__init__.py").read_text(encoding="utf-8"))) or ""
        summary, _, body = docstring.partition("\n\n")
        paragraph = body.split("\n\n")[0].strip()
        if not summary.strip() or len(paragraph) < 150:
            thin.append(f"{family.relative_to(ROOT)}/__init__.py: {summary[:70]!r}")
        elif only_or_starts_with_issue(docstring):
            thin.append(f"{family.relative_to(ROOT)}/__init__.py: an issue reference, not what it computes")
    assert not thin, "analysis families without a paragraph saying what they compute:\n" + "\n".join(thin)
