"""Build the course website from the committed, executed notebooks, without network access.

The notebooks are not re-executed: their stored outputs (checked in CI by strict nbval) are rendered as
they are. The sources are staged into ``build/site-src``:
    * ``index.md``: the README (syllabus, architecture picture) with the site's table of contents;
    * ``notebooks/*.ipynb``, ``notebooks/images/``, ``notebooks/README.md`` (the notebook standard);
    * ``data/README.md`` (the data card) and ``data/checkpoints/README.md`` (the checkpoint card);
    * ``instructors.md``: the README's instructor notes with how to present and publish the course.
Links from those Markdown files to repository files that are not part of the site point to the
repository on GitHub instead. Sphinx then builds HTML into ``build/site`` with the configuration in
``site/conf.py``. While it runs, every attempt to open a network connection raises an error, so a
successful build proves that nothing was fetched.

Usage:
    python scripts/build_site.py               # build into build/site
    python scripts/build_site.py --out DIR     # build elsewhere
"""

from __future__ import annotations

import argparse
import re
import shutil
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "site"
LINK_RE = re.compile(r"(\]\()([^)\s]+)(\))")


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
        shutil.copy2(notebook, src / "notebooks" / notebook.name)
    shutil.copytree(ROOT / "notebooks" / "images", src / "notebooks" / "images")
    markdown_files = {
        ROOT / "notebooks" / "README.md": src / "notebooks" / "README.md",
        ROOT / "data" / "README.md": src / "data" / "README.md",
        ROOT / "data" / "checkpoints" / "README.md": src / "data" / "checkpoints" / "README.md",
    }
    staged = {p.resolve() for p in [*markdown_files, *notebooks(), ROOT / "README.md"]}
    staged |= {p.resolve() for p in (ROOT / "notebooks" / "images").iterdir()}
    for original, copy in markdown_files.items():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(rewrite_links(original.read_text(encoding="utf-8"), original, staged, url), encoding="utf-8")

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    chapters = "\n".join(f"notebooks/{nb.stem}" for nb in notebooks())
    index = rewrite_links(readme, ROOT / "README.md", staged, url) + f"""

```{{toctree}}
:caption: Notebooks
:hidden:
:maxdepth: 1

{chapters}
```

```{{toctree}}
:caption: Course material
:hidden:
:maxdepth: 1

data/README
data/checkpoints/README
instructors
notebooks/README
```
"""
    (src / "index.md").write_text(index, encoding="utf-8")

    instructors = f"""# Instructor notes

{rewrite_links(section(readme, "For instructors"), ROOT / "README.md", staged, url)}
## Running a session

* **Before class.** `make test` re-executes every notebook under strict nbval (what you show is what
  the code does today). Notebook 10 trains for about two minutes; notebook 11 starts from the shipped
  checkpoint, so a session never waits for training.
* **Students without a local set-up** use the *Open in Colab* badge at the top of each notebook page;
  its first code cell installs the course on Colab (tested by `tests/test_colab_path.py`).
* **This website** is built by `make site` from the committed notebooks, without executing them and
  without network access; `build/site/index.html` can be opened directly or served by any static web
  server. Each notebook page links to Colab and offers the notebook for download.
* **The notebook standard** every notebook follows (cell order, slide metadata, exercises, strict
  nbval) is on its [own page](notebooks/README.md).

## Syllabus with run times

{section(readme, "Syllabus")}"""
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
    return build_main(["-b", "html", "-c", str(CONF_DIR), "-q", "-E", str(src), str(out)])


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
