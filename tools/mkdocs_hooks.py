"""MkDocs hooks (mkdocs.yml `hooks:`): the site gets the repository's `resources/` folder.

The docs pages link to the screenshots and example modules where they live, `resources/` beside
`docs/` (`../resources/screenshot.png` from `docs/getting-started.md`), so that the links work on
the repository's web view and in ftgui's own documentation window too. MkDocs only knows the
files of `docs/`: `on_files` adds those of `resources/` to the site as `resources/…`, and
`on_page_markdown` points each such link at them (`resources/screenshot.png` from a top-level
page). A link into `resources/` that names no file is left as it is, so the strict build
reports it.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

RESOURCES = "resources"
LINK = re.compile(r"(\]\()([^)\s#]+)")  # the target of a Markdown link or image


def _repository(config) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def on_files(files, config):
    root = _repository(config)
    for path in sorted((root / RESOURCES).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files.append(File(path.relative_to(root).as_posix(), str(root),
                              config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    root = _repository(config)
    docs = Path(config["docs_dir"]).resolve()
    folder = (docs / page.file.src_uri).parent

    def relink(match: re.Match) -> str:
        target = match.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return match.group(0)
        path = Path(os.path.normpath(folder / target))
        inside = path.relative_to(root).as_posix() if path.is_relative_to(root) else ""
        if not inside.startswith(RESOURCES + "/") or not path.is_file():
            return match.group(0)
        page_folder = posixpath.dirname(page.file.src_uri) or "."
        return match.group(1) + posixpath.relpath(inside, page_folder)

    return LINK.sub(relink, markdown)
