"""The order make test's workers take the notebooks in (tests/_xdist_order.py, a plugin of the
nbval stages): the long notebooks first, each notebook's cells together and in their order."""
from types import SimpleNamespace

from _xdist_order import NOTEBOOK_SECONDS, longest_notebooks_first


def cells(path: str, count: int) -> list:
    return [SimpleNamespace(nodeid=f"{path}::Cell {i}") for i in range(count)]


def test_the_long_notebooks_go_first_and_each_keeps_its_cells_in_order():
    collected = (cells("notebooks/zh/04_block.ipynb", 2) + cells("notebooks/01_tokenizer.ipynb", 3)
                 + cells("notebooks/zh/07_sampling.ipynb", 12) + cells("notebooks/04_block.ipynb", 2)
                 + cells("notebooks/07_sampling.ipynb", 4))
    ordered = longest_notebooks_first(collected)
    assert sorted(map(id, ordered)) == sorted(map(id, collected))          # the same cells, each once
    files = list(dict.fromkeys(item.nodeid.split("::")[0] for item in ordered))
    # 07 (both editions, in collected order), then 01, then the notebooks it has no seconds for, as collected
    assert files == ["notebooks/zh/07_sampling.ipynb", "notebooks/07_sampling.ipynb", "notebooks/01_tokenizer.ipynb",
                     "notebooks/zh/04_block.ipynb", "notebooks/04_block.ipynb"]
    for path in files:
        mine = [item.nodeid for item in ordered if item.nodeid.startswith(path + "::")]
        assert mine == [item.nodeid for item in collected if item.nodeid.startswith(path + "::")]
        assert ordered.index(next(i for i in ordered if i.nodeid == mine[-1])) - len(mine) + 1 == \
            ordered.index(next(i for i in ordered if i.nodeid == mine[0]))       # together
    assert NOTEBOOK_SECONDS["07_sampling.ipynb"] > NOTEBOOK_SECONDS["01_tokenizer.ipynb"]
