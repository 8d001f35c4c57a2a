"""Sphinx configuration of the course website (built by ``make site``, i.e. ``scripts/build_site.py``).

The build reads the committed, executed notebooks as they are (``nb_execution_mode = "off"``) and needs
no network: the theme ships its assets, MathJax comes from the ``sphinx-mathjax-offline`` package and is
copied into ``_static/mathjax``, the copy buttons' script comes from ``sphinx-copybutton``, and the Colab
badge image is served from ``_static``. ``scripts/build_site.py`` stages the sources (the landing page
``landing.md`` filled in from the README, the README's other sections as their own pages, notebooks with
their CI-only cells marked for removal and an alt text for every figure, data cards, instructor notes)
into ``build/site-src`` and runs Sphinx with this directory as its configuration. ``_static/course.css``
keeps code, tables and formulas inside the page (down to phone width); ``_static/course-search.js``
keeps the navigation and raw LaTeX out of the search results' previews.
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
author = "the contributors to Transformers from scratch"
copyright = "the contributors to Transformers from scratch"  # not shown: the footer is "extra_footer" below

extensions = [
    "myst_nb",
    "sphinx-mathjax-offline",  # MathJax 3 files shipped by a pip package, copied into _static/mathjax
    "sphinx_copybutton",  # a copy button on code cells; its script and icons are copied into _static
]
# Copy buttons on code (notebook inputs, commands in the text), not on a cell's printed output.
copybutton_selector = "div:not(.output) > div.highlight > pre"

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
html_js_files = ["course-search.js"]
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
    # No "By <author>" and "© Copyright" lines: one footer line with the licences and the source.
    "footer_content_items": ["extra-footer.html"],
    "extra_footer": (
        '<p>Transformers from scratch: code under the MIT licence, data under CC BY 4.0. '
        f'Source and notebooks: <a href="{REPOSITORY_URL}">{REPOSITORY_URL.split("://")[-1]}</a>.</p>'
    ),
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


def _figure_alt_texts(app, doctree) -> None:
    """Give each figure of a cell that draws several its own alt text (myst-nb sets one per cell).

    ``scripts/build_site.py`` stores the texts, one per figure in order, in the staged notebook's cell
    metadata ``course_site.figure_alts``.
    """
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        texts = (cell.get("cell_metadata") or {}).get("course_site", {}).get("figure_alts")
        images = list(cell.findall(nodes.image))
        if texts and len(texts) == len(images):
            for image, text in zip(images, texts, strict=True):
                image["alt"] = text


def setup(app):
    app.connect("doctree-read", _figure_alt_texts)
    app.connect("doctree-resolved", _notebook_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
