"""``python -m course_lib.gpt2 [--download] [PATH]``: find (or fetch) GPT-2's weights and check them.

The README's "Getting the weights" (notebooks 05 and 07 use them where they exist).
"""
from __future__ import annotations

import os

from ..data import DamagedFileError, MissingFileError, UnreadableFileError
from .fetch import NoConnectionError, download_or_explain
from .loader import WEIGHTS_ENV, find_weights, load_gpt2


def main(argv: list[str] | None = None) -> None:
    """``python -m course_lib.gpt2 [--download] [PATH]``: find (or fetch) and check the weights."""
    import argparse

    parser = argparse.ArgumentParser(description="Find or download GPT-2 small's weights.")
    parser.add_argument("path", nargs="?", help="model.safetensors or its folder")
    parser.add_argument("--download", action="store_true", help="download if not found (548 MB)")
    args = parser.parse_args(argv)
    try:
        file = find_weights(args.path)
    except MissingFileError as err:
        if not args.download or args.path or os.environ.get(WEIGHTS_ENV):
            raise SystemExit(str(err))
        try:
            file = download_or_explain()
        except NoConnectionError as err:              # offline: one line, no retries, no traceback
            raise SystemExit(str(err)) from None
    except UnreadableFileError as err:
        raise SystemExit(str(err)) from None
    try:
        model = load_gpt2(file)
    except (DamagedFileError, UnreadableFileError) as err:   # a damaged file: the message, no traceback
        raise SystemExit(str(err)) from None
    print(f"GPT-2 small loaded from {file}: {model.num_parameters():,} parameters")
    print(f"to use it everywhere in the course:  export {WEIGHTS_ENV}={file}")


if __name__ == "__main__":
    main()
