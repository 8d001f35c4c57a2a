"""Build the course website from the committed, executed notebooks, without network access.

The notebooks are not re-executed: their stored outputs (checked in CI by strict nbval) are rendered as
they are. The sources are staged into ``build/site-src``:
    * ``index.md``: the landing page for learners, ``site/landing.md`` filled in from the README (title,
      opening paragraph, architecture picture, syllabus) and from notebook 10's stored outputs (one German
      sentence the trained model translated), with the site's table of contents;
    * one page per group of the README's other sections (``README_PAGES``: set-up, instructor notes,
      command line, real data, the package, development); a README section that no page takes stops the build;
    * ``notebooks/*.ipynb``, changed for the website only: cells tagged ``course-check`` or ``colab-setup``
      get myst-nb's ``remove-cell`` tag, and every figure gets an alternative text
      (``scripts/figure_alt_text.py``); the download link still serves the committed notebook;
    * ``notebooks/images/``, ``notebooks/README.md`` (the notebook standard), the other Markdown pages in
      ``notebooks/`` (e.g. the mask card), ``data/README.md`` (the data card) and
      ``data/checkpoints/README.md`` (the checkpoint card).
Links from those Markdown files to repository files that are not part of the site point to the
repository on GitHub instead. Sphinx then builds HTML into ``build/site`` with the configuration in
``site/conf.py``. While it runs, every attempt to open a network connection raises an error, so a
successful build proves that nothing was fetched.

Usage:
    python -m scripts.build_site               # build into build/site
    python -m scripts.build_site --out DIR     # build elsewhere
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import socket
import string
import sys
import time
from pathlib import Path

import nbformat

from scripts.figure_alt_text import alt_texts

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "site"
LINK_RE = re.compile(r"(\]\()([^)\s]+)(\))")
# Cells that exist for CI or for Colab, not for the reader (notebooks/README.md): left out of the website.
HIDDEN_TAGS = ("course-check", "colab-setup")
REMOVE_TAG = "remove-cell"  # myst-nb leaves a cell with this tag out of the page
# The README's sections that are not on the landing page, grouped into pages: {page: (title, sections)}.
# "" stands for the README's text between its opening paragraph and its first section.
README_PAGES = {
    "setup": ("Set-up and troubleshooting", ["Quick start", "Troubleshooting"]),
    "command_line": ("Train and translate from the command line", ["Train and translate from the command line"]),
    "real_data": ("Real data (Multi30k)", ["Real data (Multi30k)"]),
    "package": ("The package", ["The package"]),
    "development": ("Development and testing", ["", "Development", "Licence"]),
}
LANDING_SECTIONS = ("Syllabus",)  # on the landing page itself
INSTRUCTOR_SECTIONS = ("For instructors",)  # on instructors.md, with the notes written below


class NetworkDisabledError(RuntimeError):
    """Raised when anything tries to open a network connection during the site build."""


def _refuse(*args, **kwargs):
    raise NetworkDisabledError(f"the site build must not use the network (attempted connection: {args!r})")


def disable_network() -> None:
    """Make every socket connection and name lookup in this process raise ``NetworkDisabledError``."""
    socket.socket.connect = _refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = _refuse  # type: ignore[method-assign]
    socket.create_connection = _refuse  # type: ignore[assignment]
    socket.getaddrinfo = _refuse  # type: ignore[assignment]


def repository_url() -> str:
    """Return the repository address from ``[project.urls] Repository`` in pyproject.toml."""
    match = re.search(r'^Repository = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    if not match:
        raise ValueError("pyproject.toml has no [project.urls] Repository line")
    return match.group(1).rstrip("/")


def section(markdown: str, heading: str) -> str:
    """Return the body of the ``## heading`` section of ``markdown`` (up to the next ``## ``).

    Args:
        markdown: the Markdown text.
        heading: the heading text without the ``## `` prefix.
    """
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    if not match:
        raise ValueError(f"README.md has no '## {heading}' section")
    return match.group(1).strip() + "\n"


def rewrite_links(text: str, source: Path, staged: set[Path], url: str) -> str:
    """Point relative links to repository files that are not on the site at the repository on GitHub.

    Args:
        text: Markdown text of ``source``.
        source: the file's path in the repository (relative links are resolved against its folder).
        staged: repository paths (resolved) that are part of the site.
        url: the repository address.
    """

    def fix(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve()
        if resolved in staged or not resolved.is_relative_to(ROOT) or not resolved.exists():
            return match.group(0)
        kind = "tree" if resolved.is_dir() else "blob"
        remote = f"{url}/{kind}/main/{resolved.relative_to(ROOT).as_posix()}" + (f"#{anchor}" if anchor else "")
        return f"{match.group(1)}{remote}{match.group(3)}"

    return LINK_RE.sub(fix, text)


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def notebook_pages() -> list[str]:
    """Names of the Markdown pages in notebooks/ other than its README (the notebook standard)."""
    return sorted(p.stem for p in (ROOT / "notebooks").glob("*.md") if p.name != "README.md")


def stage_notebook(original: Path, copy: Path) -> None:
    """Write the website's copy of a notebook: hidden cells tagged for removal, every figure with an alt text.

    Args:
        original: the committed notebook.
        copy: where the staged copy goes.
    """
    nb = nbformat.read(original, as_version=4)
    texts = alt_texts(nb)
    for index, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if any(tag in HIDDEN_TAGS for tag in tags):
            if REMOVE_TAG not in tags:
                cell.metadata["tags"] = [*tags, REMOVE_TAG]
            continue
        if index in texts:  # an alt text written into the notebook itself wins
            cell.metadata.setdefault("mystnb", {}).setdefault("image", {}).setdefault("alt", texts[index][0])
            if len(texts[index]) > 1:  # one text per figure: site/conf.py gives each image its own
                cell.metadata.setdefault("course_site", {}).setdefault("figure_alts", texts[index])
    nbformat.write(nb, copy)


IMAGE_RE = re.compile(r"!\[([^\]]+)\]\(([^)\s]+)\)")


def readme_opening(readme: str) -> dict[str, str]:
    """The parts of the README before its first section: title, opening paragraph, picture, the rest.

    Returns:
        ``{"title", "opening", "picture_alt", "picture", "rest"}``; ``rest`` is the text between the
        opening paragraph and the first section, without the picture.
    """
    head = re.split(r"^## ", readme, maxsplit=1, flags=re.M)[0]
    paragraphs = [p.strip() for p in head.split("\n\n") if p.strip()]
    if len(paragraphs) < 2 or not paragraphs[0].startswith("# "):
        raise ValueError("README.md must open with a '# title' and a paragraph")
    pictures = [p for p in paragraphs[2:] if IMAGE_RE.fullmatch(p)]
    if len(pictures) != 1:
        raise ValueError(f"README.md must show one picture before its first section, found {len(pictures)}")
    alt, path = IMAGE_RE.fullmatch(pictures[0]).groups()
    rest = "\n\n".join(p for p in paragraphs[2:] if p != pictures[0])
    return {"title": paragraphs[0][2:].strip(), "opening": paragraphs[1], "picture_alt": alt, "picture": path,
            "rest": rest + "\n" if rest else ""}


def translation_example() -> dict[str, str]:
    """One German sentence of notebook 10's own (in no split of the corpus) and the stored translation.

    Notebook 10 ends its training section by translating sentences it writes itself (``my_sentences``);
    the first one and its translation are read from the cell's stored output, with the notebook section
    it stands in.
    """
    from myst_parser.slugs import github_slugify  # the anchors myst gives headings (myst_heading_anchors)

    notebook = ROOT / "notebooks" / "10_training.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    heading = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            headings = re.findall(r"^#{2,3} (.+)$", cell.source, re.M)
            heading = headings[-1] if headings else heading
        elif "my_sentences = [" in cell.source:
            output = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            match = re.match(r"(\S[^\n]*)\n\s+→ ([^\n]+)", output)
            if match and heading:
                german, english = match.groups()
                corpus = {line.split("\t")[0] for path in (ROOT / "data" / "toy_de_en").glob("*.tsv")
                          for line in path.read_text(encoding="utf-8").splitlines()}
                if german in corpus:
                    raise ValueError(f"{notebook.name}: '{german}' is in the corpus; the landing page says it is not")
                return {"german": german, "english": english,
                        "example_link": f"notebooks/{notebook.stem}.ipynb#{github_slugify(heading)}"}
    raise ValueError(f"{notebook.name}: no stored output of the cell that translates my_sentences (for the landing page)")


def _toctree(caption: str, entries: list[str]) -> str:
    lines = "\n".join(entries)
    return f"```{{toctree}}\n:caption: {caption}\n:hidden:\n:maxdepth: 1\n\n{lines}\n```\n"


def _notebook_title(notebook: Path) -> str:
    """A notebook's first heading without its number, e.g. "Welcome: how this course works"."""
    first = nbformat.read(notebook, as_version=4).cells[0].source
    match = re.search(r"^# (?:\d+\s*·\s*)?(.+)$", first, re.M)
    if not match:
        raise ValueError(f"{notebook.name} does not open with a '# title'")
    return match.group(1).strip()


def stage(src: Path) -> None:
    """Copy the site's sources into ``src`` (emptied first) and write the generated pages.

    Args:
        src: the staging folder.
    """
    if src.exists():
        shutil.rmtree(src)
    (src / "notebooks").mkdir(parents=True)
    url = repository_url()
    for notebook in notebooks():
        stage_notebook(notebook, src / "notebooks" / notebook.name)
    shutil.copytree(ROOT / "notebooks" / "images", src / "notebooks" / "images")
    references = notebook_pages()  # Markdown pages next to the notebooks (e.g. the mask card), linked from them
    markdown_files = {
        ROOT / "notebooks" / "README.md": src / "notebooks" / "README.md",
        **{ROOT / "notebooks" / f"{name}.md": src / "notebooks" / f"{name}.md" for name in references},
        ROOT / "data" / "README.md": src / "data" / "README.md",
        ROOT / "data" / "checkpoints" / "README.md": src / "data" / "checkpoints" / "README.md",
    }
    staged = {p.resolve() for p in [*markdown_files, *notebooks(), ROOT / "README.md"]}
    staged |= {p.resolve() for p in (ROOT / "notebooks" / "images").iterdir()}
    for original, copy in markdown_files.items():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(rewrite_links(original.read_text(encoding="utf-8"), original, staged, url), encoding="utf-8")

    readme = rewrite_links((ROOT / "README.md").read_text(encoding="utf-8"), ROOT / "README.md", staged, url)
    sections = re.findall(r"^## (.+)$", re.sub(r"^```.*?^```", "", readme, flags=re.M | re.S), re.M)
    placed = {*LANDING_SECTIONS, *INSTRUCTOR_SECTIONS} | {s for _, parts in README_PAGES.values() for s in parts}
    unplaced = [s for s in sections if s not in placed]
    if unplaced:
        raise ValueError(f"README.md sections not on any page of the website (add them to README_PAGES): {unplaced}")

    opening = readme_opening(readme)
    example = translation_example()
    first = notebooks()[0]
    landing = string.Template((CONF_DIR / "landing.md").read_text(encoding="utf-8")).substitute(
        title=opening["title"],
        opening=opening["opening"],
        first_notebook=f"notebooks/{first.name}",
        first_notebook_title=_notebook_title(first).split(":")[0],
        architecture=opening["picture"],
        architecture_alt=opening["picture_alt"],
        # Sphinx copies pictures into _images/ under their own name; tests/test_site.py follows this link.
        architecture_full=f"_images/{Path(opening['picture']).name}",
        german=html.escape(example["german"]),
        english=html.escape(example["english"]),
        example_link=example["example_link"],
        syllabus=section(readme, "Syllabus"),
    )
    landing += "\n" + "\n".join([
        _toctree("Start here", ["setup", *(f"notebooks/{name}" for name in references), "data/README",
                                "data/checkpoints/README"]),
        _toctree("Notebooks", [f"notebooks/{nb.stem}" for nb in notebooks()]),
        _toctree("For instructors", ["instructors", "notebooks/README"]),
        _toctree("For developers", [page for page in README_PAGES if page != "setup"]),
    ])
    (src / "index.md").write_text(landing, encoding="utf-8")

    for page, (title, parts) in README_PAGES.items():
        text = f"# {title}\n\n"
        for part in parts:
            if not part:
                text += opening["rest"] + "\n"
            elif len(parts) == 1:
                text += section(readme, part) + "\n"
            else:
                text += f"## {part}\n\n{section(readme, part)}\n"
        (src / f"{page}.md").write_text(text, encoding="utf-8")

    instructors = f"""# Instructor notes

{section(readme, "For instructors")}
## Running a session

* **Before class.** `make test` re-executes every notebook under strict nbval (what you show is what
  the code does today). Notebook 10 trains for about two minutes; notebook 11 starts from the shipped
  checkpoint, so a session never waits for training.
* **Students without a local set-up** use the *Open in Colab* badge at the top of each notebook page;
  its first code cell installs the course on Colab (tested by `tests/test_colab_path.py`).
* **This website** is built by `make site` from the committed notebooks, without executing them and
  without network access; `build/site/index.html` can be opened directly or served by any static web
  server. Each notebook page links to Colab and offers the notebook for download. The pages leave out
  the cells that exist for CI and for Colab (tagged `course-check` or `colab-setup`); the downloaded
  notebook keeps them.
* **The notebook standard** every notebook follows (cell order, slide metadata, exercises, strict
  nbval) is on its [own page](notebooks/README.md).
* **The syllabus** with each notebook's CPU time is on the [home page](index.md#syllabus).
"""
    (src / "instructors.md").write_text(instructors, encoding="utf-8")


def build(out: Path, src: Path) -> int:
    """Stage the sources and run Sphinx with the network disabled; return Sphinx's exit status.

    Args:
        out: folder for the HTML site.
        src: staging folder for the sources.
    """
    from sphinx.cmd.build import build_main

    stage(src)
    disable_network()
    status = build_main(["-b", "html", "-c", str(CONF_DIR), "-q", "-E", str(src), str(out)])
    if status == 0:  # "Download notebook" serves the committed notebook, not the website's copy
        for notebook in notebooks():
            shutil.copy2(notebook, out / "_sources" / "notebooks" / notebook.name)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="output folder (default build/site)")
    parser.add_argument("--src", type=Path, default=ROOT / "build" / "site-src", help="staging folder for the sources")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    status = build(args.out.resolve(), args.src.resolve())
    if status == 0:
        print(f"site built in {time.perf_counter() - start:.0f} s: {args.out / 'index.html'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
