"""The docs' links and the code's citations of the docs point at things that exist.

Every relative link in ``README.md`` and ``docs/**/*.md`` (``[text](target)``, images and
reference definitions; not inside code) names an existing file or folder, and a ``#anchor`` into
a Markdown file names one of its headings, slugged as GitHub slugs them.  Every ``docs/...``
path named in the code (``.py`` files outside ``tests/``, and the ``Makefile``) exists, and so
does every path the docs name in inline code that starts ``docs/`` (or ``notes/`` on a page of
``docs/``, ``matches/`` on a page of ``docs/notes/``); ``docs/reference/`` is left out there, as
its ``docs/`` paths are other repositories'.
The checkers are tested on hand-made pages too, so the contract cannot pass by checking nothing.
"""

from __future__ import annotations

import glob
import pathlib
import re
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent

# folders of the checkout that are not the project's source
SKIPPED_DIRS = {"tests", "build", "dist", "node_modules", "shared", "__pycache__"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_PATH = re.compile(r"\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text lower-cased, everything but
    letters, digits, spaces, hyphens and underscores dropped, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # links keep their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "")
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)         # emphasis markers
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _prose_lines(text: str, blank_code: bool = True):
    """(line number, line) outside fenced code blocks, with inline code blanked out."""
    fenced = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            if fenced is None:
                fenced = m.group(1)
            elif m.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield n, _INLINE_CODE.sub("``", line) if blank_code else line


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown page's headings (repeats get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(text, blank_code=False):
        m = _HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        out.add(slug)
    # explicit anchors: <a name="..."> or id="..."
    out.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    return out


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link of a Markdown page outside code."""
    out = []
    for n, line in _prose_lines(text):
        out.extend((n, m.group(1)) for m in _INLINE_LINK.finditer(line))
        m = _REFERENCE_DEF.match(line)
        if m:
            out.append((n, m.group(1)))
    return out


def broken_links(page: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """What is wrong with the relative links of one Markdown page, one line each."""
    text = page.read_text(encoding="utf-8")
    problems = []
    for n, target in links(text):
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue                                   # absolute URLs, mailto: and the like
        path_part, _, fragment = target.partition("#")
        path_part = urllib.parse.unquote(path_part)
        where = f"{page.relative_to(root)}:{n}: {target}"
        if path_part:
            dest = (root / path_part.lstrip("/")) if path_part.startswith("/") else \
                (page.parent / path_part)
            if not dest.exists():
                problems.append(f"{where}: no such file")
                continue
        else:
            dest = page
        if fragment and dest.is_file() and dest.suffix == ".md":
            slug = urllib.parse.unquote(fragment).lower()
            if slug not in anchors(dest.read_text(encoding="utf-8")):
                problems.append(f"{where}: no heading #{fragment} in {dest.relative_to(root)}")
    return problems


def missing_named_paths(page: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """The paths a page names in inline code (``docs/...``, ``notes/...`` on a page of ``docs/``,
    ``matches/...`` on a page of ``docs/notes/``) that do not exist; a pattern with ``*`` must
    match something."""
    rel = page.relative_to(root).as_posix()
    problems = []
    for n, line in _prose_lines(page.read_text(encoding="utf-8"), blank_code=False):
        for m in _INLINE_CODE.finditer(line):
            words = m.group(0).strip("`").split()
            named = words[0].rstrip(".,;:)") if words else ""
            if named.startswith("docs/"):
                base = root
            elif named.startswith("notes/") and re.fullmatch(r"docs/[^/]+", rel):
                base = root / "docs"
            elif named.startswith("matches/") and re.fullmatch(r"docs/notes/[^/]+", rel):
                base = root / "docs" / "notes"
            else:
                continue
            found = glob.glob(str(base / named)) if "*" in named else (base / named).exists()
            if not found:
                problems.append(f"{rel}:{n}: {named}")
    return problems


def markdown_pages(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    return sorted([root / "README.md", *(root / "docs").rglob("*.md")])


def code_files(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """The project's ``.py`` files outside the tests, and the Makefile."""
    out = [root / "Makefile"] if (root / "Makefile").exists() else []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts[:-1]
        if any(p.startswith(".") or p in SKIPPED_DIRS or p.endswith(".egg-info") for p in parts):
            continue
        out.append(path)
    return out


def missing_doc_paths(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """The ``docs/...`` paths a code file names that do not exist, one line each."""
    problems = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for m in _CODE_PATH.finditer(line):
            cited = m.group(0)
            if any(c in line[m.end():m.end() + 1] for c in "*{") or "*" in cited:
                continue                               # a pattern, not a path
            if not (root / cited).exists():
                problems.append(f"{path.relative_to(root)}:{n}: {cited}")
    return problems


def test_every_relative_link_of_the_docs_resolves():
    pages = markdown_pages()
    assert len(pages) > 20, pages
    problems = [p for page in pages for p in broken_links(page)]
    assert not problems, "\n".join(problems)


def test_every_docs_path_the_docs_name_exists():
    pages = [p for p in markdown_pages() if "reference" not in p.relative_to(ROOT).parts]
    problems = [p for page in pages for p in missing_named_paths(page)]
    assert not problems, "\n".join(problems)


def test_every_docs_path_the_code_names_exists():
    files = code_files()
    assert any(f.name == "Makefile" for f in files)
    assert any(f.parts[-3:] == ("engine_server", "agents", "root_solving.py") for f in files)
    assert not any("tests" in f.relative_to(ROOT).parts for f in files)
    problems = [p for f in files for p in missing_doc_paths(f)]
    assert not problems, "\n".join(problems)


def test_github_slugs():
    assert github_slug("GoGui and Quarry (GTP)") == "gogui-and-quarry-gtp"
    assert github_slug("CS303: export and check a player") == "cs303-export-and-check-a-player"
    assert github_slug("The `best` agent: what it is made of, and why") == \
        "the-best-agent-what-it-is-made-of-and-why"
    assert github_slug("Threads on one solve (ABDADA)") == "threads-on-one-solve-abdada"
    assert github_slug("Near the end: straight to the end, with the solver's kernels below") == \
        "near-the-end-straight-to-the-end-with-the-solvers-kernels-below"
    assert github_slug("FFO #40-#49, two threads") == "ffo-40-49-two-threads"
    assert github_slug("[a link](x.md) and *emphasis*") == "a-link-and-emphasis"
    assert github_slug("snake_case_name") == "snake_case_name"


def test_the_link_checker_finds_what_is_broken(tmp_path):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "other.md").write_text(
        "# Other page\n\n## A `code` section (2)\n\n## A `code` section (2)\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text("\n".join([
        "# Page",
        "[fine](other.md) [fine too](other.md#a-code-section-2)"
        " [repeat](other.md#a-code-section-2-1)",
        "[folder](sub/) ![image](sub) [here](#page) [web](https://example.com/none.md)",
        "[ref]: other.md#other-page",
        "`[in code](missing-in-code.md)`",
        "```",
        "[in a fence](missing-in-fence.md)",
        "```",
        "[gone](missing.md) and [no heading](other.md#no-such-heading)",
        "[ref2]: ../nowhere.md",
        "[self](#nothing-here)",
    ]))
    problems = broken_links(page, tmp_path)
    assert problems == [
        "docs/page.md:9: missing.md: no such file",
        "docs/page.md:9: other.md#no-such-heading: no heading #no-such-heading in docs/other.md",
        "docs/page.md:10: ../nowhere.md: no such file",
        "docs/page.md:11: #nothing-here: no heading #nothing-here in docs/page.md",
    ], problems


def test_the_named_path_checker_finds_what_is_missing(tmp_path):
    (tmp_path / "docs" / "notes").mkdir(parents=True)
    (tmp_path / "docs" / "notes" / "a.md").write_text("# A\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text("\n".join([
        "`docs/notes/a.md`, `notes/a.md` and `docs/notes/*.md`; `deep.py` is not a docs path",
        "`docs/notes/b.md`, `notes/gone.md`, `docs/old-*.md` (`docs/x.md section 2`)",
        "```",
        "`docs/in-a-fence.md`",
        "```",
    ]))
    assert missing_named_paths(page, tmp_path) == [
        "docs/page.md:2: docs/notes/b.md", "docs/page.md:2: notes/gone.md",
        "docs/page.md:2: docs/old-*.md", "docs/page.md:2: docs/x.md",
    ]
    (tmp_path / "docs" / "notes" / "matches").mkdir()
    (tmp_path / "docs" / "notes" / "matches" / "results.jsonl").write_text("{}\n")
    note = tmp_path / "docs" / "notes" / "note.md"
    note.write_text("`matches/results.jsonl`, match `x`; `matches/x-results.json`\n")
    assert missing_named_paths(note, tmp_path) == ["docs/notes/note.md:1: matches/x-results.json"]


def test_the_code_path_checker_finds_what_is_missing(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# Here\n")
    (tmp_path / "Makefile").write_text("doc:\n\tcat docs/here.md docs/gone.md\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        '"""See docs/here.md, "Here", and docs/missing.md."""\n'
        "# docs/img/page-*.png is a pattern\n"
        "# (docs/nowhere/).\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("# docs/not-checked.md\n")
    files = code_files(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["Makefile", "pkg/mod.py"]
    problems = [p for f in files for p in missing_doc_paths(f, tmp_path)]
    assert problems == [
        "Makefile:2: docs/gone.md",
        "pkg/mod.py:1: docs/missing.md",
        "pkg/mod.py:3: docs/nowhere/",
    ], problems
