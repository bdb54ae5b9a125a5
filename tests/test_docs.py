"""The docs site (docs/, mkdocs.yml) and the README: the site builds strictly, no page repeats
another's text, every relative link leads to a file, the CLI reference names every command,
and the README stays short."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main
from judge.service._schema import SCHEMA_NAMES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MIN_PARAGRAPH = 120  # characters: shorter blocks (a heading, "Measured:") may recur
README_MAX_LINES = 200

_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^(\s*)([-*+]|\d+\.)\s")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a fence's lines become blank lines)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def paragraphs(text: str) -> list[str]:
    """Paragraphs of at least MIN_PARAGRAPH characters outside code blocks, whitespace
    normalised: blocks between blank lines, each list item its own."""
    blocks: list[list[str]] = [[]]
    for line in prose_lines(text):
        item = _ITEM.match(line)
        if not line.strip():
            blocks.append([])
        elif item and not item.group(1):  # a top-level list item starts a paragraph
            blocks.append([line])
        else:
            blocks[-1].append(line)
    joined = (" ".join(" ".join(block).split()) for block in blocks)
    return [p for p in joined if len(p) >= MIN_PARAGRAPH]


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_no_page_repeats_another() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for page in pages():
        for paragraph in paragraphs(page.read_text(encoding="utf-8")):
            where[paragraph].append(str(page.relative_to(ROOT)))
    repeated = {p[:80]: files for p, files in where.items() if len(files) > 1}
    assert not repeated, f"paragraphs that appear twice: {repeated}"
    # The README links into the docs; it repeats no paragraph of theirs (its two commands are
    # code blocks, which are not compared).
    in_readme = [p[:80] for p in paragraphs(README.read_text(encoding="utf-8")) if p in where]
    assert not in_readme, f"README paragraphs also in the docs: {in_readme}"


def test_paragraph_splitting() -> None:
    text = "\n".join(
        [
            "# Title",
            "",
            "x" * 130,
            "```sh",
            "y" * 200,
            "```",
            "- " + "z" * 130,
            "  continued",
            "- " + "w" * 130,
        ]
    )
    assert paragraphs(text) == ["x" * 130, "- " + "z" * 130 + " continued", "- " + "w" * 130]


@pytest.mark.parametrize("path", [README, *pages()], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files(path: Path) -> None:
    prose = _CODE_SPAN.sub("", "\n".join(prose_lines(path.read_text(encoding="utf-8"))))
    broken = []
    for target in _LINK.findall(prose):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)}: links to missing files: {broken}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the dev extra)")
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return out


def test_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    for page in pages():
        built = page.relative_to(DOCS).with_suffix("")
        html = site / built / "index.html" if built.name != "index" else site / built.parent
        assert html.exists(), f"{page.relative_to(ROOT)} was not built"


def test_cli_reference_names_every_command(site: Path) -> None:
    listed = CliRunner().invoke(main, ["--help"]).output
    commands = re.findall(r"^  (\S+)  ", listed.split("Commands:", 1)[1], re.MULTILINE)
    assert "check" in commands and "grade" in commands
    html = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    missing = [c for c in commands if f'id="judge-{c}"' not in html]
    assert not missing, f"the CLI reference lacks {missing}"


def test_formats_page_renders_every_schema(site: Path) -> None:
    html = (site / "reference" / "formats" / "index.html").read_text(encoding="utf-8")
    for name in SCHEMA_NAMES:
        assert f"judge schema {name}" in html
        assert f'id="{name}-' in html, f"no definitions rendered for {name}"
