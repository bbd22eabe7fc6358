"""What both the build (docs/site/build_site.py) and Sphinx's configuration (docs/site/conf.py) know
about the website: its two editions and the repository the course lives in."""
import re
import tomllib
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]

# One entry per edition: where its notebooks and README are, the picture its README shows, and
# the words the site adds around the notebooks in that language.
EDITIONS = {
    "en": {
        "name": "English", "language": "en", "html_lang": "en", "other": "zh",
        "notebooks": "notebooks", "readme": "README.md", "picture": "docs/pipeline.svg",
        "switch_title": "这一页的中文版", "search_bar_text": "Search...",
        "authors": "the course's authors", "copyright": "the course's authors · code and notebooks: MIT license",
        "solutions_title": "Worked solutions",
        "launch_binder": "Run it on Binder", "launch_colab": "Open it in Colab", "download": "Download the notebook",
        "solutions_intro": "The worked solution of every exercise, chapter by chapter.",
        "widget_note": ("This panel is interactive in JupyterLab (launch the chapter on Binder, "
                        "or open it with make lab); shown here as it was saved."),
    },
    "zh": {
        "name": "中文", "language": "zh_CN", "html_lang": "zh-CN", "other": "en",
        "notebooks": "notebooks/zh", "readme": "README.zh-CN.md", "picture": "docs/pipeline.zh-CN.svg",
        "switch_title": "This page in English", "search_bar_text": "搜索…",
        "authors": "课程作者", "copyright": "课程作者 · 代码与笔记本：MIT 许可证",
        "solutions_title": "练习答案",
        "launch_binder": "在 Binder 上运行", "launch_colab": "在 Colab 中打开", "download": "下载笔记本",
        "solutions_intro": "每一章每个练习的参考答案。",
        "widget_note": "这个面板在 JupyterLab 中可交互（在 Binder 上打开本章，或用 make lab 打开）；此处显示的是保存时的状态。",
    },
}
for _key, _edition in EDITIONS.items():
    _heading = re.search(r"^# (.+)$", (ROOT / _edition["readme"]).read_text(encoding="utf-8"), re.M)
    _edition["title"] = _heading.group(1).strip() if _heading else "GPT-2 course"

# The branch the launch buttons open (Binder builds it; Colab reads the notebook from it)
BRANCH = "main"


class Repository(NamedTuple):
    url: str        # https://github.com/<owner>/<name>
    owner: str
    name: str
    branch: str

    def file_url(self, path: str) -> str:
        """A file's page in the repository (a folder's too: path ending in /)."""
        kind = "tree" if path.endswith("/") else "blob"
        return f"{self.url}/{kind}/{self.branch}/{path.rstrip('/')}"


def repository(pyproject: Path = ROOT / "pyproject.toml") -> Repository:
    """The course's home, read from the one place that names it: pyproject.toml's
    ``[project.urls] Repository`` (a GitHub repository's address)."""
    urls = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("urls", {})
    url = urls.get("Repository")
    if not url:
        raise SystemExit(f"{pyproject}: [project.urls] has no Repository: the website's launch buttons and "
                         'links are made from it; add e.g. Repository = "https://github.com/<owner>/<name>"')
    found = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?", url)
    if not found:
        raise SystemExit(f"{pyproject}: [project.urls] Repository = {url!r} is not a GitHub repository's "
                         "address (https://github.com/<owner>/<name>): Binder's and Colab's links need one")
    owner, name = found.groups()
    return Repository(f"https://github.com/{owner}/{name}", owner, name, BRANCH)
