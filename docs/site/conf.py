"""Sphinx configuration of the course's website, one edition per build (docs/site.md).

docs/site/build_site.py stages an edition's sources (its README as index.md, its notebooks) and runs
sphinx-build with this folder as the configuration directory and ``COURSE_SITE_EDITION`` set to
``en`` or ``zh``. Nothing runs and nothing is fetched: every page shows the notebook's stored
outputs, and the theme's scripts, styles, fonts and MathJax are copied into the site.
"""
import json
import os
import posixpath
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course_site import EDITIONS, ROOT, repository  # noqa: E402

EDITION = os.environ.get("COURSE_SITE_EDITION", "")
if EDITION not in EDITIONS:
    raise SystemExit(f"COURSE_SITE_EDITION={EDITION!r}: set it to one of {sorted(EDITIONS)} "
                     "(docs/site/build_site.py does; run `make site`)")
SETTINGS = EDITIONS[EDITION]
OTHER = EDITIONS[SETTINGS["other"]]
REPO = repository()

project = SETTINGS["title"]
html_title = SETTINGS["title"]
author = SETTINGS["authors"]
copyright = SETTINGS["copyright"]
language = SETTINGS["language"]
# the theme's words it leaves in English, in Chinese (locale/, copied beside the staged sources)
locale_dirs = ["locale"]
if EDITION == "zh":             # Chinese words found by their pairs of characters (search_zh.py)
    import sphinx.search
    from search_zh import ChinesePairs
    sphinx.search.languages["zh"] = ChinesePairs

extensions = ["myst_nb", "sphinx.ext.mathjax"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = [str(Path(__file__).parent / "_templates")]
html_static_path = [str(Path(__file__).parent / "_static")]
html_css_files = ["course.css"]
# (without an icon of its own a browser asks the server for /favicon.ico)
html_favicon = str(Path(__file__).parent / "favicon.svg")

# the notebooks as stored: nothing is executed (their outputs are the ones nbval proves)
nb_execution_mode = "off"
# No widget manager: its scripts would come from a CDN, and without a kernel the sliders would
# move nothing. A widget shows its saved fallback instead (the token display's coloured HTML,
# the sampling panel's text), with a line saying that it runs in JupyterLab (widget_notes below).
nb_ipywidgets_js = {}
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
myst_enable_extensions = ["dollarmath"]
# README links such as (#keeping-your-work) land on their heading
myst_heading_anchors = 3
# the notebooks' text as written (as JupyterLab shows it; its heading anchors keep straight quotes)
smartquotes = False
# a solutions notebook goes from its title (#) to each exercise (###), as in JupyterLab
suppress_warnings = ["myst.header"]

# MathJax 3 from the site itself (make site-setup installs it from npm; build_site.py copies it
# into each edition's _static/mathjax/)
mathjax_path = "mathjax/tex-chtml.js"

html_theme = "sphinx_book_theme"
html_copy_source = True
html_last_updated_fmt = None
html_context = {
    "github_url": "https://github.com", "github_user": REPO.owner, "github_repo": REPO.name,
    "github_version": REPO.branch, "doc_path": SETTINGS["notebooks"],
    # the light/dark switch starts at the reader's system setting (an empty mode is logged as an error)
    "default_mode": "auto",
    "course_other_edition_name": OTHER["name"], "course_other_edition_lang": OTHER["html_lang"],
    "course_switch_title": SETTINGS["switch_title"],
}
html_theme_options = {
    "repository_url": REPO.url,
    "repository_branch": REPO.branch,
    # the launch buttons' path inside the repository: notebooks/ or notebooks/zh/
    "path_to_docs": SETTINGS["notebooks"],
    "launch_buttons": {"binderhub_url": "https://mybinder.org",
                       "colab_url": "https://colab.research.google.com",
                       "notebook_interface": "jupyterlab"},
    "use_repository_button": True,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
    "show_toc_level": 2,
    "search_bar_text": SETTINGS["search_bar_text"],
    "home_page_in_toc": True,
}


def other_edition_url(app, pagename, templatename, context, doctree):
    """The same page in the other edition: both are built side by side (site/en/, site/zh/)."""
    depth = pagename.count("/") + 1
    context["course_other_edition_url"] = "../" * depth + f"{SETTINGS['other']}/{pagename}.html"


def notebook_cells(app) -> list | None:
    source = Path(app.env.doc2path(app.env.docname))
    if source.suffix != ".ipynb":
        return None
    return json.loads(source.read_text(encoding="utf-8"))["cells"]


def widget_notes(app, doctree):
    """Under each output that was a live widget (ipywidgets), a line saying it runs in JupyterLab."""
    cells = notebook_cells(app)
    for cell in doctree.findall(nodes.container) if cells else ():
        if cell.get("nb_element") != "cell_code":
            continue
        outputs = cells[cell["cell_index"]].get("outputs", [])
        if any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs):
            cell.append(nodes.paragraph(text=SETTINGS["widget_note"], classes=["course-widget-note"]))


def jupyterlab_anchors(app, doctree):
    """The anchors the notebooks link with, as JupyterLab makes them, on the site too: a heading's
    text with each space a hyphen (a notebook's table of contents), and ``cell-id=<id>`` (a link
    to an exercise's solution, which lands on the heading its markdown cell opens with). Each
    becomes one more id of its section; the notebook's own links to its headings point there, and
    links from another page find a ``cell-id=`` through the standard domain."""
    cells = notebook_cells(app)
    if not cells:
        return
    docname = app.env.docname
    std = app.env.domains.standard_domain
    local = {}
    for section in doctree.findall(nodes.section):
        title = section[0]
        anchor = title.astext().replace(" ", "-")
        section["ids"].append(anchor)
        local[anchor] = section["ids"][0]
        # myst-nb numbers the lines of cell i from (i + 1) * 10000
        cell = cells[title.line // 10000 - 1] if title.line else {}
        if cell.get("cell_type") == "markdown" and cell.get("id"):
            cell_anchor = f"cell-id={cell['id']}"
            section["ids"].append(cell_anchor)
            std.anonlabels[f"{docname}#{cell_anchor}"] = (docname, cell_anchor)
    for ref in list(doctree.findall(addnodes.pending_xref)):
        if ref.get("reftype") == "myst" and ref.get("refdomain") != "doc" and ref["reftarget"] in local:
            link = nodes.reference("", "", *ref.children, refid=local[ref["reftarget"]], internal=True)
            ref.replace_self(link)


def repository_links(app, doctree):
    """A notebook's link to a file of the repository that is not a page of the site (a doc, a
    data file, course_lib's code) leads to that file in the repository."""
    if notebook_cells(app) is None:
        return
    here = posixpath.dirname(f"{SETTINGS['notebooks']}/{app.env.docname}")
    for ref in list(doctree.findall(addnodes.pending_xref)):
        if ref.get("reftype") != "myst" or ref.get("refdomain") == "doc":
            continue
        path, _, fragment = ref["reftarget"].partition("#")
        in_repo = posixpath.normpath(posixpath.join(here, path))
        if path and not in_repo.startswith("..") and (ROOT / in_repo).exists():
            url = REPO.file_url(in_repo + ("/" if (ROOT / in_repo).is_dir() else "")) + (f"#{fragment}" if fragment else "")
            ref.replace_self(nodes.reference("", "", *ref.children, refuri=url))


def launch_row(app, doctree):
    """Under a notebook page's title, in plain sight: run it on Binder, open it in Colab, download
    it (the same places as the theme's launch and download menus in the header)."""
    if notebook_cells(app) is None:
        return
    docname = app.env.docname
    in_repo = f"{SETTINGS['notebooks']}/{docname}.ipynb"
    links = [(SETTINGS["launch_binder"], f"https://mybinder.org/v2/gh/{REPO.owner}/{REPO.name}/{REPO.branch}"
                                         f"?urlpath=lab/tree/{in_repo}"),
             (SETTINGS["launch_colab"], f"https://colab.research.google.com/github/{REPO.owner}/{REPO.name}"
                                        f"/blob/{REPO.branch}/{in_repo}"),
             (SETTINGS["download"], "../" * docname.count("/") + f"_sources/{docname}.ipynb")]
    row = nodes.paragraph(classes=["course-launch"])
    for i, (text, url) in enumerate(links):
        row += nodes.reference(text, text, refuri=url)
        if i < len(links) - 1:
            row += nodes.Text(" · ")
    title = next(doctree.findall(nodes.title))
    title.parent.insert(title.parent.index(title) + 1, row)


def translate_header_buttons(app, pagename, templatename, context, doctree):
    """The launch menu's tooltips, which sphinx-book-theme leaves in English, through the site's
    catalog (locale/); runs after the theme has made its header buttons."""
    from sphinx.locale import get_translation
    _ = get_translation("sphinx")
    buttons = list(context.get("header_buttons", []))
    while buttons:
        button = buttons.pop()
        buttons += button.get("buttons", [])
        if "tooltip" in button:
            button["tooltip"] = _(button["tooltip"])


def setup(app):
    app.connect("html-page-context", translate_header_buttons, priority=900)
    app.connect("html-page-context", other_edition_url)
    app.connect("doctree-read", widget_notes)
    app.connect("doctree-read", jupyterlab_anchors)
    app.connect("doctree-read", repository_links)
    app.connect("doctree-read", launch_row)
