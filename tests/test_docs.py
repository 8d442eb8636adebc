"""The documentation site: `mkdocs build --strict` passes, a broken link fails it, and the files
the pages link to in `resources/` (screenshots, example modules) are in the built site."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
ATTRIBUTE = re.compile(r'(?:src|href)="([^"]+)"')


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the project at `root` into `site`."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(root / "mkdocs.yml"), "--site-dir", str(site)],
        capture_output=True, text=True, env=env, cwd=root)


def copy_of_the_project(tmp_path: Path) -> Path:
    """What the docs build reads: the config, the pages, the hook and resources/."""
    copy = tmp_path / "project"
    copy.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", copy)
    for folder in ("docs", "resources", "tools"):
        shutil.copytree(ROOT / folder, copy / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def local_links(page: Path) -> list[str]:
    """The relative `src`/`href` targets of a built page, without their #anchors."""
    targets = []
    for target in ATTRIBUTE.findall(page.read_text(encoding="utf-8")):
        parsed = urlparse(target)
        if not parsed.scheme and not target.startswith(("#", "/", "mailto:")) and parsed.path:
            targets.append(unquote(parsed.path))
    return targets


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    done = build(ROOT, site)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr  # strict: a warning fails the build
    return site


def test_the_docs_build_strictly_with_a_page_per_nav_entry(site):
    for page in ("index", "getting-started", "faults", "clusters", "benchmarks", "glossary",
                 "run-directory", "notes/benchmark-history"):
        assert (site / f"{page}.html").is_file(), page


def test_every_relative_link_of_the_built_site_names_a_file_in_it(site):
    checked = 0
    for page in site.rglob("*.html"):
        for target in local_links(page):
            assert (page.parent / target).resolve().is_file(), f"{page.name}: {target}"
            checked += 1
    assert checked > 100  # pages, the theme's assets and the resources below


def test_the_pages_link_to_resources_where_they_lie_and_the_site_has_them(site):
    """`../resources/…` in docs/ (the repository's view and ftgui's window) becomes
    `resources/…` in the site, a copy of the repository's resources/."""
    assert "](../resources/screenshot.png)" in (ROOT / "docs/getting-started.md").read_text()
    started = local_links(site / "getting-started.html")
    assert "resources/screenshot.png" in started
    assert ((site / "resources/screenshot.png").read_bytes()
            == (ROOT / "resources/screenshot.png").read_bytes())
    assert "resources/screenshot-demo.png" in local_links(site / "presenting.html")
    assert "resources/examples/functional_dropout.py" in local_links(site / "own-model.html")
    assert (site / "resources/examples/functional_dropout.py").is_file()


@pytest.mark.parametrize("link", ["[gone](no-such-page.md)",
                                  "![gone](../resources/no-such-screenshot.png)",
                                  "[gone](faults.md#no-such-section)"])
def test_a_broken_link_fails_the_strict_build(tmp_path, link):
    project = copy_of_the_project(tmp_path)
    page = project / "docs" / "window.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\nSee {link}.\n", encoding="utf-8")
    done = build(project, tmp_path / "site")
    assert done.returncode != 0
    target = re.search(r"\]\(([^)#]+)", link).group(1)
    assert Path(target).name in done.stderr
    assert "window.md" in done.stderr


def test_a_page_left_out_of_the_nav_fails_the_strict_build(tmp_path):
    project = copy_of_the_project(tmp_path)
    (project / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    done = build(project, tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stderr
