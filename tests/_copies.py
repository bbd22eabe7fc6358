"""Copies the tests may change. ``shutil.copy`` and ``copytree`` keep the source's mode, so a
copy out of a read-only checkout (an instructor's shared install) is read-only too; these
copies are the user's own, writable files and folders, whatever the source's mode."""
import os
import shutil
from pathlib import Path


def writable_copy(source: Path, target: Path) -> Path:
    """Copy the file or folder ``source`` to ``target`` (contents only, not the mode); returns ``target``."""
    if Path(source).is_dir():
        shutil.copytree(source, target, copy_function=shutil.copyfile)
        for folder, _, _ in os.walk(target):              # copytree gives each folder its source's mode
            os.chmod(folder, 0o755)
    else:
        shutil.copyfile(source, target)
    return Path(target)
