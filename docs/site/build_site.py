"""Builds the course's website from the repository: `make site` (docs/site.md).

    python docs/site/build_site.py [OUT]        (OUT: artifacts/site by default)

For each edition (en: notebooks/, README.md; zh: notebooks/zh/, README.zh-CN.md) it stages a
Sphinx source folder under OUT/../site-build/ (the README as the landing page, the seven chapters
and their solutions as stored, the pipeline picture), runs sphinx-build into OUT/<edition>/, and
copies MathJax (installed by `make site-setup` from npm) into the site. Then each edition's search
index takes in the other's pages, so a search finds both, and OUT/index.html opens the English
edition. Nothing executes a notebook and nothing is fetched.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course_site import EDITIONS, ROOT, Repository, repository  # noqa: E402

CONF_DIR = Path(__file__).resolve().parent
MATHJAX = ROOT / "artifacts" / "site-vendor" / "node_modules" / "mathjax" / "es5"
# the parts of MathJax 3 that tex-chtml.js loads (its fonts, TeX extensions on demand, the menu)
MATHJAX_PARTS = ["tex-chtml.js", "input", "output/chtml", "ui", "a11y"]
CAPTIONS = {"en": ("Chapters", "Solutions"), "zh": ("章节", "答案")}
# a Chinese character or full-width punctuation mark
HAN_CHAR = "[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]"
SEARCH_PREFIX, SEARCH_SUFFIX = "Search.setIndex(", ")"


def chapters(notebooks: Path) -> list[str]:
    return sorted(p.stem for p in notebooks.glob("0*.ipynb"))


def landing_page(edition: str, repo: Repository, names: list[str]) -> str:
    """The edition's README as Markdown for the site: chapter links to the chapter pages, the
    Binder badge (an image from another host) as a plain link, every other repository path to its
    page in the repository."""
    settings = EDITIONS[edition]
    text = (ROOT / settings["readme"]).read_text(encoding="utf-8")
    prefix = settings["notebooks"] + "/"
    binder = f"https://mybinder.org/v2/gh/{repo.owner}/{repo.name}/{repo.branch}?urlpath=lab/tree/{prefix}{names[0]}.ipynb"
    text = re.sub(r"\[!\[([^\]]*)\]\([^)]*\)\]\([^)]*\)", lambda m: f"[{m.group(1)}]({binder})", text)
    other = EDITIONS[settings["other"]]

    def target(match: re.Match) -> str:
        label, path = match.group(1), match.group(2)
        if path.startswith(("#", "http://", "https://", "mailto:")):
            return match.group(0)
        if path == other["readme"]:
            return f'<a href="../{settings["other"]}/index.html" hreflang="{other["html_lang"]}">{label}</a>'
        if path.startswith(prefix) and path[len(prefix):].removesuffix(".ipynb") in names:
            return f"[{label}]({path[len(prefix):]})"
        if path == prefix + "solutions/":
            return f"[{label}](solutions/index.md)"
        return f"[{label}]({repo.file_url(path)})"

    text = re.sub(r"(?<!!)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)", target, text)
    text = re.sub(r"!\[([^\]]*)\]\(" + re.escape(settings["picture"]) + r"\)",
                  lambda m: f"![{m.group(1)}]({Path(settings['picture']).name})", text)
    if edition == "zh":     # a line break between two Chinese characters is no space (a browser shows one)
        text = re.sub(f"(?<={HAN_CHAR})\n(?={HAN_CHAR})", "", text)
    chapters_caption, solutions_caption = CAPTIONS[edition]
    return (text.rstrip() + "\n\n```{toctree}\n:hidden:\n:caption: " + chapters_caption + "\n\n"
            + "\n".join(names) + "\n```\n\n```{toctree}\n:hidden:\n:caption: " + solutions_caption
            + "\n\nsolutions/index\n```\n")


def stage(edition: str, repo: Repository, src: Path) -> None:
    """The Sphinx source folder of one edition: index.md, the chapters, solutions/."""
    settings = EDITIONS[edition]
    notebooks = ROOT / settings["notebooks"]
    names = chapters(notebooks)
    if not names:
        raise SystemExit(f"no chapter notebooks (0*.ipynb) in {notebooks}")
    shutil.rmtree(src, ignore_errors=True)
    (src / "solutions").mkdir(parents=True)
    for name in names:
        shutil.copyfile(notebooks / f"{name}.ipynb", src / f"{name}.ipynb")
    solutions = sorted(p.stem for p in (notebooks / "solutions").glob("*.ipynb"))
    for name in solutions:
        shutil.copyfile(notebooks / "solutions" / f"{name}.ipynb", src / "solutions" / f"{name}.ipynb")
    shutil.copyfile(ROOT / settings["picture"], src / Path(settings["picture"]).name)
    shutil.copytree(CONF_DIR / "locale", src / "locale")
    (src / "index.md").write_text(landing_page(edition, repo, names), encoding="utf-8")
    (src / "solutions" / "index.md").write_text(
        f"# {settings['solutions_title']}\n\n{settings['solutions_intro']}\n\n```{{toctree}}\n:maxdepth: 1\n\n"
        + "\n".join(solutions) + "\n```\n", encoding="utf-8")


def copy_mathjax(out: Path) -> None:
    if not (MATHJAX / "tex-chtml.js").is_file():
        raise SystemExit(f"MathJax is not installed ({MATHJAX / 'tex-chtml.js'} is missing): run `make site-setup`")
    for part in MATHJAX_PARTS:
        source, target = MATHJAX / part, out / "_static" / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)


def read_index(path: Path) -> dict:
    text = path.read_text(encoding="utf-8").strip()
    if not (text.startswith(SEARCH_PREFIX) and text.endswith(SEARCH_SUFFIX)):
        raise SystemExit(f"{path}: not a Sphinx search index this build knows (Search.setIndex(...))")
    return json.loads(text[len(SEARCH_PREFIX):-len(SEARCH_SUFFIX)])


def merged_index(own: dict, other: dict, other_edition: str) -> dict:
    """``own`` with ``other``'s pages added (as ../<other_edition>/<page>, their titles marked
    with the edition's name): one search finds the pages of both editions."""
    merged = json.loads(json.dumps(own))
    shift = len(own["docnames"])
    label = EDITIONS[other_edition]["name"]
    merged["docnames"] += [f"../{other_edition}/{name}" for name in other["docnames"]]
    merged["filenames"] += [f"../{other_edition}/{name}" for name in other["filenames"]]
    merged["titles"] += [f"{title} · {label}" for title in other["titles"]]
    for key in ("terms", "titleterms"):
        for term, docs in other[key].items():
            docs = [d + shift for d in (docs if isinstance(docs, list) else [docs])]
            have = merged[key].get(term, [])
            merged[key][term] = (have if isinstance(have, list) else [have]) + docs
    for title, places in other.get("alltitles", {}).items():
        merged["alltitles"].setdefault(title, []).extend([[doc + shift, anchor] for doc, anchor in places])
    return merged


def merge_search(out: Path) -> None:
    indexes = {edition: read_index(out / edition / "searchindex.js") for edition in EDITIONS}
    for edition, settings in EDITIONS.items():
        merged = merged_index(indexes[edition], indexes[settings["other"]], settings["other"])
        (out / edition / "searchindex.js").write_text(
            SEARCH_PREFIX + json.dumps(merged, ensure_ascii=False, separators=(",", ":")) + SEARCH_SUFFIX,
            encoding="utf-8")


ROOT_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0; url=en/index.html">
<title>{title}</title></head>
<body><p><a href="en/index.html">{title}</a> · <a href="zh/index.html" hreflang="zh-CN">{zh_title}</a></p></body></html>
"""


def build(out: Path) -> None:
    repo = repository()
    work = out.parent / (out.name + "-build")
    shutil.rmtree(out, ignore_errors=True)
    for edition in EDITIONS:
        src = work / edition / "src"
        stage(edition, repo, src)
        print(f"== site: {edition} ({EDITIONS[edition]['notebooks']}/) -> {out / edition}", flush=True)
        env = dict(os.environ, COURSE_SITE_EDITION=edition, PYTHONWARNINGS="ignore::SyntaxWarning")
        subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-E",
                        "-c", str(CONF_DIR), "-d", str(work / edition / "doctrees"), str(src), str(out / edition)],
                       env=env, check=True)
        copy_mathjax(out / edition)
    merge_search(out)
    (out / "index.html").write_text(ROOT_PAGE.format(title=EDITIONS["en"]["title"], zh_title=EDITIONS["zh"]["title"]),
                                    encoding="utf-8")
    print(f"== site: {out}/index.html (open it, or serve the folder: python -m http.server -d {out})")


if __name__ == "__main__":
    build(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "artifacts" / "site")
