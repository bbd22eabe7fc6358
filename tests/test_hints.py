"""A NameError in a notebook cell says to run the notebook from the top."""
import pytest

from course_lib.ui.hints import explain_name_errors, hint_for


def test_hint_names_the_missing_name():
    try:
        undefined_in_this_test  # noqa: F821
    except NameError as error:
        text = hint_for(error)
    assert "`undefined_in_this_test`" in text and "Restart Kernel and Run All Cells…" in text


def test_an_ipython_cell_that_needs_an_earlier_cell_prints_the_hint(capsys):
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell.instance()
    try:
        explain_name_errors(shell)
        assert shell.custom_exceptions == (NameError,)
        result = shell.run_cell("check_values_from_an_earlier_cell")
    finally:
        shell.set_custom_exc((), None)
        interactive.InteractiveShell.clear_instance()
    assert isinstance(result.error_in_exec, NameError)
    out = capsys.readouterr()
    assert "NameError" in out.out + out.err
    assert "`check_values_from_an_earlier_cell` is defined by an earlier cell" in out.out


def test_outside_ipython_nothing_is_installed():
    from IPython import get_ipython
    assert get_ipython() is None
    assert explain_name_errors() is None      # no shell: nothing to install, no error
