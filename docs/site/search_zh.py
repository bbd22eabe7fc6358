"""Search in the Chinese edition without a word segmenter (Sphinx's own Chinese search indexes
Chinese text only with jieba, which PyPI has as a source archive alone, so the lock cannot hold it).

Chinese words are not separated by spaces; every run of Chinese characters is indexed as its
overlapping pairs of characters (词元 → 词元; 笔记本 → 笔记, 记本), and a query is cut the same
way in the browser (``js_splitter_code``), so a page matches when it holds every pair of the query.
Latin words are indexed as Sphinx's Chinese search does (English stemming).
"""
import re

from sphinx.search.zh import SearchChinese

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def pairs(run: str) -> list[str]:
    return [run[i:i + 2] for i in range(len(run) - 1)] or [run]


class ChinesePairs(SearchChinese):
    # Latin words are stemmed as English, in Python and in the browser; the browser's stemmer is
    # named after language_name (window.Stemmer = <language_name>Stemmer), and the stemmer code
    # Sphinx ships for Chinese defines EnglishStemmer alone
    language_name = "English"
    js_splitter_code = r"""
function splitQuery(query) {
  const terms = [];
  for (const [t] of query.matchAll(/[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[A-Za-z0-9_]+/g)) {
    if (/^[A-Za-z0-9_]+$/.test(t) || t.length < 2) terms.push(t);
    else for (let i = 0; i + 2 <= t.length; i++) terms.push(t.slice(i, i + 2));
  }
  return terms;
}
"""

    def split(self, input: str) -> list[str]:
        latin = self.latin1_letters.findall(input)
        self.latin_terms.update(latin)
        return [pair for run in HAN.findall(input) for pair in pairs(run)] + latin
