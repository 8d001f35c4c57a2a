"""Sphinx configuration of the course website (built by ``make site``, i.e. ``scripts/build_site.py``).

The build reads the committed, executed notebooks as they are (``nb_execution_mode = "off"``) and needs
no network: the theme ships its assets, MathJax comes from the ``sphinx-mathjax-offline`` package and is
copied into ``_static/mathjax``, and the Colab badge image is served from ``_static``.
``scripts/build_site.py`` stages the sources (README as the landing page, notebooks, data cards,
instructor notes) into ``build/site-src`` and runs Sphinx with this directory as its configuration.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _repository_url() -> str:
    match = re.search(r'^Repository = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    if not match:
        raise ValueError("pyproject.toml has no [project.urls] Repository line")
    return match.group(1).rstrip("/")


REPOSITORY_URL = _repository_url()
COLAB_BADGE_URL = "https://colab.research.google.com/assets/colab-badge.svg"

project = "Transformers from scratch"
author = "The course authors"
copyright = "the course authors (MIT licence; data CC BY 4.0)"

extensions = [
    "myst_nb",
    "sphinx-mathjax-offline",  # MathJax 3 files shipped by a pip package, copied into _static/mathjax
]

root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# The notebooks are committed with their outputs; CI checks those outputs with strict nbval.
nb_execution_mode = "off"
nb_merge_streams = True
# Widget state is dropped when notebooks are regenerated; never load the widget manager from a CDN.
nb_ipywidgets_js = {}
# Without stored widget state a widget output would render as an empty box: show its static picture
# (the attention explorer of notebook 11 stores one next to the widget) instead.
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

# sphinx-mathjax-offline points Sphinx at the local copy; say so here too so nothing falls back to a CDN.
mathjax_path = "mathjax/tex-chtml.js"

html_theme = "sphinx_book_theme"
html_title = "Transformers from scratch"
html_static_path = [str(HERE / "_static")]
html_css_files = ["course.css"]
html_copy_source = True
html_sourcelink_suffix = ""  # _sources/notebooks/NN.ipynb is the notebook itself: the download link
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": REPOSITORY_URL,
    "repository_branch": "main",
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "use_source_button": False,
    "launch_buttons": {"colab_url": "https://colab.research.google.com", "notebook_interface": "jupyterlab"},
    "show_toc_level": 2,
    "navigation_with_keys": True,
}


def _notebook_links(app, doctree, docname: str) -> None:
    """On a notebook page: serve the Colab badge image locally and add a "Download notebook" link.

    Args:
        app: the Sphinx application.
        doctree: the resolved document tree of the page.
        docname: the page's name, e.g. ``notebooks/00_welcome``.
    """
    source = Path(app.env.doc2path(docname))
    if source.suffix != ".ipynb":
        return
    prefix = "../" * docname.count("/")
    badges = [node for node in doctree.findall(nodes.image) if node.get("uri") == COLAB_BADGE_URL]
    if not badges:
        raise ValueError(f"{docname}: no 'Open in Colab' badge found (scripts/stamp_colab.py writes it)")
    for badge in badges:
        badge["uri"] = f"{prefix}_static/colab-badge.svg"
        badge["candidates"] = {"*": badge["uri"]}
    paragraph = badges[0].parent
    while not isinstance(paragraph, nodes.paragraph):
        paragraph = paragraph.parent
    href = f"{prefix}_sources/{docname}{source.suffix}"
    paragraph += nodes.raw(
        "",
        f' <a class="download-notebook reference internal" href="{href}" download="{source.name}">'
        f"⬇ Download notebook ({source.name})</a>",
        format="html",
    )


def setup(app):
    app.connect("doctree-resolved", _notebook_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
