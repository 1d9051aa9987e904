"""Leaderboard outputs and comparisons: build (byte-identical rebuilds, tables from the runs),
the statistics against hand-computed values, ``compare``, and the page in a real headless Chromium.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
import shutil
import sys
import tempfile
from html.parser import HTMLParser
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import AgentReply, AgentRequest
from ragen_bench.cli import main
from ragen_bench.leaderboard.build import build, newcombe_interval
from ragen_bench.leaderboard.figures import _pyplot
from ragen_bench.leaderboard.tables import ENTRY_COLUMNS, cell_text, cell_value, link_cell
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.stats import (
    compare_submissions, mcnemar_exact, p_text, paired_bootstrap_ci, paired_comparison,
)
from ragen_bench.leaderboard.verify import verify
from ragen_bench.leaderboard.viewer import VIEWER_SEEDS
from ragen_bench.plots import legend_label, plot_text

from .conftest import REPO_ROOT, in_ci
from .test_leaderboard import SUITE, edit_json, edit_record, make_submission, records, submission_info

CHROMIUM = Path("/usr/bin/chromium")
# Debian's Chromium, headless; without the networking flags it tries to reach update servers.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
OUTPUTS = ["README.md", "leaderboard.csv", "ranking.csv", f"success-suite-{SUITE}.png", "generalization.png",
           "learning_curves.png", "index.html"]


@pytest.fixture(scope="session")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two entries on the same suite slice (2 seeds x 2 samples of every test panel)."""
    folder = tmp_path_factory.mktemp("submissions")
    for agent in ("optimal", "random"):
        make_submission(folder / agent, agent, f"suite={SUITE}", f"agent={agent}", "limit=2", "samples=2")
    return folder


@pytest.fixture(scope="session")
def built(submissions: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("board")
    build(submissions, out)
    return out


HOSTILE = "</script><script>alert(1)</script> & <b>bold</b> <!-- x"


class HostileTextAgent:
    """The optimal agent thinking aloud in markup (test only): the page must show it as text."""

    name = "hostile-text"
    needs_live_env = True

    def __init__(self, **settings: Any) -> None:
        self.inner = OptimalAgent(**settings)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [AgentReply(re.sub("<think>.*</think>", f"<think>{HOSTILE}</think>", reply.text))
                for reply in self.inner.act(requests)]

    def close(self) -> None:
        pass


def make_hostile_agent(**settings: Any) -> HostileTextAgent:
    return HostileTextAgent(**settings)


@pytest.fixture(scope="session")
def hostile_board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    make_submission(folder / "subs" / "hostile", "hostile", "env=RAGEN/Sokoban-6x6-v0", "limit=2",
                    "agent.name=tests.test_leaderboard_build:make_hostile_agent")
    build(folder / "subs", folder / "board")
    return folder / "board"


def copy_tree(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "submissions"
    shutil.copytree(source, target)
    return target


# -- build --------------------------------------------------------------------------------


def test_rebuild_is_byte_identical(submissions: Path, built: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    written = build(submissions, again)
    assert [path.name for path in written] == [*OUTPUTS, "frames"]
    for name in OUTPUTS:
        assert (again / name).read_bytes() == (built / name).read_bytes(), name


def test_csv_holds_the_runs_numbers(submissions: Path, built: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((built / "leaderboard.csv").read_text())))
    assert len(rows) == 2 * 8
    for entry in ("optimal", "random"):
        # summary.json as the harness wrote it, read here without the leaderboard code.
        groups = json.loads((submissions / entry / "summary.json").read_text())["groups"]
        for group in groups:
            (row,) = [r for r in rows if r["entry"] == entry and r["env"] == group["env_id"]]
            assert float(row["success"]) == group["success_rate"]
            assert [float(row["success_low"]), float(row["success_high"])] == group["success_ci95"]
            assert float(row["mean_return"]) == group["mean_return"]
            assert row["coverage"] == "2/256 seeds x 2" and (row["k"], float(row["pass@k"])) == ("2", group["pass@2"])


def test_readme_tables(built: Path) -> None:
    text = (built / "README.md").read_text()
    assert f"## suite {SUITE}" in text and "## Generalization" in text
    table = [line for line in text.splitlines() if line.startswith("| optimal |")]
    # 8 envs in the main table, 6 held-out panels in the generalization table, 1 line in the entries table
    assert len(table) == 8 + 6 + 1
    assert "| optimal | scripted | scripted | no | 2026-11-30 | tests | - | 32 |" in text
    assert "| optimal | RAGEN/Sokoban-6x6-v0 | RAGEN/FrozenLake-4x4-v0 | environment |" in text


def test_markdown_cell_of_hostile_text_stays_one_cell() -> None:
    assert cell_text("a\rb\u2028c\x85d|e\r\n") == "a b c d\\|e"


# A cell as a GFM table row reads it: backslash pairs, then anything but a bare "|" or "\\".
_ESCAPED_CELL = re.compile(r"(?:\\.|[^\\|])*")


@given(st.text())
def test_markdown_cell_never_splits_a_row(text: str) -> None:
    cell = cell_text(text)
    assert len(cell.splitlines()) <= 1
    assert "|" not in cell.replace("\\|", "")
    # Every backslash escapes the next character: none is left to escape a "|" of ours ("\\|" used to split).
    assert _ESCAPED_CELL.fullmatch(cell)
    assert not re.search(r"(?<!\\)[][()`*_!#~$]", cell.replace("\\\\", ""))  # no unescaped Markdown punctuation


def test_png_plots_carry_no_version(built: Path) -> None:
    for name in (f"success-suite-{SUITE}.png", "generalization.png"):
        data = (built / name).read_bytes()
        assert data.startswith(b"\x89PNG") and b"matplotlib" not in data.lower()


def test_page_is_self_contained(built: Path) -> None:
    page = (built / "index.html").read_text()
    # Links a reader may follow (an entry's link, the paper) are fine; nothing is loaded from a URL.
    loaded = re.sub(r'<a href="https?://[^"]*">', "", page)
    assert "http://" not in loaded and "https://" not in loaded and "src=\"data:image/png;base64," in page
    assert page.count("<script") == 2  # the JSON data and the inline script, nothing loaded


def test_model_text_cannot_break_out_of_the_page(hostile_board: Path) -> None:
    page = (hostile_board / "index.html").read_text()
    assert page.count("</script>") == 2 and "<b>bold</b>" not in page and "<!--" not in page


def test_submission_text_is_text_in_the_markdown_too(submissions: Path, tmp_path: Path) -> None:
    """HTML in model / recipe / notes is escaped in README.md as on the page, and a cell stays one cell."""
    subs = copy_tree(submissions, tmp_path)
    edit_json(subs / "random" / "submission.json",
              lambda info: info.update(model=HOSTILE, recipe="<img src=x onerror=alert(1)>|a",
                                       notes=f"{HOSTILE}\n| x |", link="https://example.com/my_repo_(v2)|*x*"))
    build(subs, tmp_path / "board")
    readme = (tmp_path / "board" / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("|") and "&lt;/script&gt;" in line]
    # The ranking and the detail table show the model shortened, the entries table in full.
    assert len(rows) == 1 + 8 + 1 and sum(f"| random | {cell_text(HOSTILE)} |" in row for row in rows) == 1
    link = "<https://example.com/my_repo_(v2)%7C*x*>"  # the link an autolink, read as written
    for row in rows:
        text = row.replace(f" | {link} | ", " | ")
        assert "<" not in text and ">" not in text and "&lt;/script&gt;&lt;script&gt;" in row
        assert row.replace("\\|", "").count("|") == row.count(" | ") + 2  # no cell split
    (entry,) = [row for row in rows if "2026-11-30" in row]
    assert entry.startswith(f"| random | {cell_text(HOSTILE)} | &lt;img src=x onerror=alert\\(1\\)&gt;\\|a | no |")
    assert entry.endswith(f" | {cell_text(HOSTILE)} \\| x \\| |")
    assert f" | {link} | " in entry
    # The page escapes once: the text reads as typed, never as &amp;lt;.
    page = (tmp_path / "board" / "index.html").read_text()
    assert "&lt;img src=x onerror=alert(1)&gt;|a" in page and "&amp;lt;" not in page and "<b>bold</b>" not in page


def test_markdown_cell_escapes_html() -> None:
    assert cell_text("<b>a</b> & \"b\" 'c'") == "&lt;b&gt;a&lt;/b&gt; &amp; \"b\" 'c'"


def test_markdown_cell_escapes_markdown() -> None:
    """Links, images, code spans and emphasis in submission text stay text: their punctuation is backslash-escaped."""
    image = cell_text("![t](http://evil.example/p.png)")
    link = cell_text("[x](javascript:alert(1))")
    assert image == "\\!\\[t\\]\\(http://evil.example/p.png\\)"
    assert link == "\\[x\\]\\(javascript:alert\\(1\\)\\)"
    assert "](" not in image and "](" not in link  # no "](" a renderer would read as a link's end
    # No code span can form, so the entity reads as "<", never as "&lt;".
    assert cell_text("`<b>`") == "\\`&lt;b&gt;\\`"
    assert cell_text("*a* _b_ ~~c~~ $d$ # e \\") == "\\*a\\* \\_b\\_ \\~\\~c\\~\\~ \\$d\\$ \\# e \\\\"
    assert cell_text("sampling_seed (x)") == "sampling\\_seed \\(x\\)"


def test_markdown_link_cell_is_an_autolink() -> None:
    assert link_cell("https://example.com/a_b(c)") == "<https://example.com/a_b(c)>"
    assert link_cell("https://example.com/?q=<b>|x y\n") == "<https://example.com/?q=%3Cb%3E%7Cx%20y%0A>"


MARKDOWN_CASES = [
    "![t](http://evil.example/p.png)", "[x](javascript:alert(1))", "[x]: http://evil.example", "<https://evil.example>",
    "`<b>` & `&lt;`", "*em* **strong** _u_ __uu__ ~~s~~", "$x$ and $$y$$", "# heading", "a\\|b | c", "\\", "\\`x`",
    "http://evil.example/a_(b)", HOSTILE, "&amp; &#35; &copy;",
]


@pytest.mark.parametrize("text", MARKDOWN_CASES)
def test_a_markdown_renderer_reads_the_cell_as_text(text: str) -> None:
    """markdown-it (CommonMark with GFM tables) renders the cell as exactly the text: one cell, no markup."""
    markdown_it = pytest.importorskip("markdown_it")
    renderer = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    rendered = renderer.render(f"| a | b |\n|---|---|\n| {cell_text(text)} | end |\n")
    (row,) = re.findall(r"<tr>\n<td>(.*)</td>\n<td>end</td>\n</tr>", rendered)
    assert row == html.escape(cell_value(text).strip(), quote=False).replace('"', "&quot;")


# -- hostile submission text: plots and page ------------------------------------------------------

# Texts matplotlib would read as mathtext (two "$"), escapes, TeX specials, page breakers, and a
# label matplotlib leaves out of a legend (led by "_").
PLOT_TEXTS = ["val $x^{$", "$\\alpha$", "\\$", "a\\\\$b$", "$$", "$ \\$ $", "100% #_^{}~&", "\\", "$\\frac{1}{2}$ end\\",
              "_x", "</script><!--"]


def _pixels(**text: Any) -> bytes:
    """The RGBA pixels of a small figure holding one text (``s`` and matplotlib's text options)."""
    plt = _pyplot()
    figure = plt.figure(figsize=(4, 0.6), dpi=60)
    figure.text(0.02, 0.3, **text)
    figure.canvas.draw()
    pixels = bytes(figure.canvas.buffer_rgba())
    plt.close(figure)
    return pixels


@pytest.mark.parametrize("text", PLOT_TEXTS)
def test_plot_text_draws_the_text_as_written(text: str) -> None:
    """Pixel for pixel what matplotlib draws with math parsing off, which draws every character literally."""
    assert _pixels(s=plot_text(text)) == _pixels(s=text, parse_math=False)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="$\\ax{}^_%# ", max_size=12))
def test_plot_text_draws_any_dollars_and_backslashes_as_written(text: str) -> None:
    assert _pixels(s=plot_text(text)) == _pixels(s=text, parse_math=False)


def test_unescaped_dollars_would_draw_as_math() -> None:
    """Why plot_text exists: the same text drawn as it comes is mathtext (a Greek letter here, an error for `$x^{$`)."""
    assert _pixels(s="$\\alpha$") != _pixels(s="$\\alpha$", parse_math=False)
    with pytest.raises(ValueError):
        _pixels(s="val $x^{$")


def test_legend_label_keeps_a_label_led_by_an_underscore() -> None:
    plt = _pyplot()
    figure, axes = plt.subplots()
    axes.plot([0], [0], label="_x success")  # matplotlib's mark for "no legend entry"
    axes.plot([0], [1], label=legend_label("_x success"))
    assert [text.get_text() for text in axes.legend().get_texts()] == [" _x success"]
    plt.close(figure)


class TableCells(HTMLParser):
    """The text of each cell of the table ``table_id``, row by row, as an HTML parser reads the page,
    and every tag inside that table (a tag a cell's text made would show here)."""

    def __init__(self, table_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.table_id, self.inside = table_id, False
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("id", self.table_id) in attrs:
            self.inside = True
        elif self.inside:
            self.tags.add(tag)
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def table_cells(page: str, table_id: str) -> tuple[list[list[str]], set[str]]:
    parser = TableCells(table_id)
    parser.feed(page)
    parser.close()
    return parser.rows, parser.tags


@pytest.fixture(scope="module")
def solo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small entry (Bandit, 2 seeds) with a training log: the folder its hostile copies start from."""
    folder = tmp_path_factory.mktemp("solo")
    make_submission(folder / "solo", "solo", "env=RAGEN/Bandit-v0", "agent=random", "limit=2")
    logs = folder / "solo" / "training"
    logs.mkdir()
    (logs / "metrics.jsonl").write_text(json.dumps({"step": 1, "rollout/success": 0.5}) + "\n")
    return folder / "solo"


# Any character, lone surrogates too (JSON can escape one), and hand-picked texts that broke or could break a medium.
_CHARACTERS = st.characters() | st.characters(categories=["Cs"])
HOSTILE_TEXTS = [*PLOT_TEXTS, HOSTILE, "<!-- x", "]]>", "&amp; &lt;b&gt; &#60;", "\ud800", "a\x00b", "\u2028|\u2029",
                 "\r\n| x |", "'\"`", "\u202eevil", "x" * 300, "x" * 301, "\U0001f600", " ", "", "![t](http://e.x/p.png)"]
hostile_texts = st.sampled_from(HOSTILE_TEXTS) | st.text(_CHARACTERS, max_size=40)
# The fields a hostile text goes into: submission.json's free text (shown on the page, save the paths) and the
# validation split (a legend label); the rest keep what a clean run has.
CLEAN_FIELDS = {"model": "scripted", "recipe": "scripted", "contact": "tests", "notes": "", "link": None,
                "run_dir": ".", "training_metrics": "training/metrics.jsonl", "split": "val"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(hostile={"model": "$x^{$", "recipe": HOSTILE, "contact": "\\$", "notes": "<!-- </script>",
                  "link": "<b>", "split": "val $x^{$"})
@example(hostile={"training_metrics": "\r\n| x |"})  # a line break in a path named by the error
@given(hostile=st.dictionaries(st.sampled_from(sorted(CLEAN_FIELDS)), hostile_texts, min_size=1, max_size=3))
def test_hostile_submission_text_is_refused_cleanly_or_built_as_text(solo: Path, hostile: dict[str, str]) -> None:
    """Whatever text stands in submission.json's free-text fields or a validation split, verify passes or
    refuses with one line naming the submission; and a folder verify passes is one build takes, the
    page's entries table showing each text as it was written (an HTML parser reads the cells back)."""
    fields = {**CLEAN_FIELDS, **hostile}
    if "link" in hostile:
        fields["link"] = "https://" + hostile["link"]
    split = fields.pop("split")
    with tempfile.TemporaryDirectory() as folder:
        subs = Path(folder) / "subs"
        shutil.copytree(solo, subs / "solo")
        # json.dumps escapes a lone surrogate as \ud800, as a hostile file would.
        (subs / "solo" / "submission.json").write_text(json.dumps(submission_info("solo", **fields)))
        (subs / "solo" / "training" / "validation.jsonl").write_text(
            json.dumps({"step": 1, "split": split, "success_rate": 0.5}) + "\n")
        try:
            verify(subs / "solo")
        except LeaderboardError as error:
            assert "\n" not in str(error) and str(subs / "solo") in str(error), str(error)
            event(f"refused: {error.field}")
            return
        event("verified and built")
        build(subs, Path(folder) / "board")
        page = (Path(folder) / "board" / "index.html").read_text()
    rows, tags = table_cells(page, "entries")
    assert tags == {"thead", "tbody", "tr", "th", "td"}  # no markup came from the texts
    assert rows[0] == list(ENTRY_COLUMNS.values())
    shown = dict(zip(ENTRY_COLUMNS, rows[1]))
    for key in ("model", "recipe", "contact", "notes", "link"):
        assert shown[key] == cell_value(fields[key]), key
    # The viewer's JSON is data in its script element: nothing in it ends the element or opens a comment.
    assert page.count("<script") == 2 and page.count("</script>") == 2
    script = page.split('<script type="application/json" id="viewer-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in script and set(json.loads(script)["entries"]) == {"solo"}


def test_build_refuses_a_tampered_entry(submissions: Path, tmp_path: Path) -> None:
    subs = copy_tree(submissions, tmp_path)
    edit_record(subs / "random", 0, lambda r: r.update(success=not r["success"]))
    with pytest.raises(LeaderboardError) as caught:
        build(subs, tmp_path / "board")
    assert caught.value.file == str(subs / "random" / "episodes.jsonl") and caught.value.field == "success"
    assert not (tmp_path / "board").exists()


def test_build_refuses_a_name_that_is_not_the_folder(submissions: Path, tmp_path: Path) -> None:
    subs = copy_tree(submissions, tmp_path)
    edit_json(subs / "random" / "submission.json", lambda info: info.update(name="optimal"))
    with pytest.raises(LeaderboardError) as caught:
        build(subs, tmp_path / "board")
    assert (caught.value.field, caught.value.expected, caught.value.found) == ("name", "random", "optimal")


def test_build_refuses_a_symlinked_entry(submissions: Path, tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "random").symlink_to(submissions / "random", target_is_directory=True)
    with pytest.raises(LeaderboardError, match="symbolic link"):
        build(subs, tmp_path / "board")


def test_build_of_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "README.md").write_text("not an entry")
    with pytest.raises(LeaderboardError, match="holds no submission folders"):
        build(tmp_path / "subs", tmp_path / "board")


def _without_images(page: bytes) -> bytes:
    return re.sub(rb"data:image/png;base64,[A-Za-z0-9+/=]+", b"data:image/png;base64,", page)


def test_committed_leaderboard_is_up_to_date(tmp_path: Path) -> None:
    """leaderboard/ is what `ragen-bench leaderboard build` makes of the committed submissions.

    Text outputs compare exactly; the pixels are left out, since another matplotlib or
    FreeType release may anti-alias differently (same-version rebuilds are byte-identical,
    see test_rebuild_is_byte_identical).
    """
    build(REPO_ROOT / "leaderboard" / "submissions", tmp_path)
    for name in ("README.md", "leaderboard.csv", "ladder.csv", "games.csv"):
        assert (tmp_path / name).read_bytes() == (REPO_ROOT / "leaderboard" / name).read_bytes(), (
            f"leaderboard/{name} is stale: run `ragen-bench leaderboard build`")
    fresh, committed = ((folder / "index.html").read_bytes() for folder in (tmp_path, REPO_ROOT / "leaderboard"))
    assert _without_images(fresh) == _without_images(committed), "leaderboard/index.html is stale"


@pytest.mark.parametrize("module", ["pandas", "matplotlib"])
def test_missing_extra_is_one_line(submissions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what an install without the extra looks like
    assert main(["leaderboard", "build", "--submissions", str(submissions), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"ragen-bench leaderboard: error: the leaderboard needs {module}, which is "
                                       "not installed: pip install 'ragen-bench[leaderboard]'\n")


# -- statistics -----------------------------------------------------------------------------


@pytest.mark.parametrize(("only_a", "only_b", "p"), [
    (0, 0, 1.0),
    (1, 6, 2 * (1 + 7) / 2**7),  # 2 * P(X <= 1), X ~ Bin(7, 1/2) = 0.125
    (6, 1, 0.125),
    (0, 5, 2 / 2**5),
    (3, 3, 1.0),  # 2 * P(X <= 3 | n=6) = 2 * 42/64 > 1, capped
    (2, 8, 2 * (1 + 10 + 45) / 2**10),
])
def test_mcnemar_exact_hand_computed(only_a: int, only_b: int, p: float) -> None:
    assert mcnemar_exact(only_a, only_b) == pytest.approx(p, rel=1e-12)


def test_mcnemar_large_counts() -> None:
    # Exact arithmetic: 2 * 2**-60 is a float exactly; 60 + 1 summed binomial terms would not be.
    assert mcnemar_exact(0, 60) == 2.0**-59
    assert mcnemar_exact(1000, 1000) == 1.0


def test_bootstrap_hand_computed() -> None:
    assert paired_bootstrap_ci([0.5] * 7, seed=3) == (0.5, 0.5)
    # Two pairs {0, 1}: resampled means are 0, 0.5, 1 with chances 1/4, 1/2, 1/4, so
    # the 2.5% and 97.5% percentiles are the extremes.
    assert paired_bootstrap_ci([0.0, 1.0], seed=0) == (0.0, 1.0)


def test_bootstrap_is_seeded() -> None:
    values = [math.sin(i) for i in range(50)]
    assert paired_bootstrap_ci(values, seed=1) == paired_bootstrap_ci(values, seed=1)
    assert paired_bootstrap_ci(values, seed=1) != paired_bootstrap_ci(values, seed=2)
    low, high = paired_bootstrap_ci(values, seed=1)
    assert low < sum(values) / len(values) < high


def test_newcombe_interval_published_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, example 56/70 - 48/80, method 10.
    low, high = newcombe_interval(56, 70, 48, 80)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def _row(seed: int, success: bool, reward: float) -> dict[str, Any]:
    return {"env_id": "E", "split": "test", "seed": seed, "sample": 0, "success": success, "total_reward": reward}


def test_paired_comparison_hand_computed() -> None:
    a = [_row(0, True, 1.0), _row(1, True, 1.0), _row(2, False, 0.0), _row(3, True, 2.0)]
    b = [_row(0, False, 0.0), _row(1, True, 1.0), _row(2, False, 0.5), _row(3, False, 0.0)]
    (group, everything) = paired_comparison(a, b, seed=0)
    assert (group["env"], everything["env"]) == ("E:test", "all")
    assert (group["only_a"], group["only_b"], group["mcnemar_p"]) == (2, 0, 0.5)
    assert group["return_diff"] == (1.0 + 0.0 - 0.5 + 2.0) / 4
    assert group["success_a"] == 0.75 and group["success_b"] == 0.25


def test_paired_comparison_needs_the_same_episodes() -> None:
    with pytest.raises(LeaderboardError, match="do not hold the same episodes") as caught:
        paired_comparison([_row(0, True, 1.0), _row(2, True, 1.0)], [_row(1, True, 1.0), _row(2, True, 1.0)], seed=0)
    assert caught.value.episode == "E/test/0/0"  # the first episode only one entry holds


def test_p_value_below_float_range_is_a_bound_not_zero() -> None:
    # 2 * 2**-1300 underflows to 0.0 as a float; the table must not print p = 0.
    assert mcnemar_exact(0, 1300) == 0.0
    assert p_text(0.0) == "< 2.23e-308"
    assert p_text(mcnemar_exact(0, 5)) == "0.0625"


def test_compare_cli(submissions: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", "compare", str(submissions / "optimal"), str(submissions / "random")]) == 0
    out = capsys.readouterr().out
    assert "A = optimal, B = random" in out and "McNemar p" in out
    # An entry against itself: both success columns stay, nothing differs.
    assert main(["leaderboard", "compare", str(submissions / "optimal"), str(submissions / "optimal")]) == 0
    header, *_, everything = capsys.readouterr().out.splitlines()[1:]
    assert header.split()[:6] == ["env", "pairs", "success", "A", "success", "B"]
    name, pairs, success_a, success_b, only_a, only_b, p = everything.split()[:7]
    assert (name, pairs, success_a, only_a, only_b, p) == ("all", "32", success_b, "0", "0", "1")
    assert main(["leaderboard", "compare", "--seed", "-1", str(submissions / "optimal"), str(submissions / "random")]) == 2
    assert "field --seed: the bootstrap seed must be a non-negative int, got -1" in capsys.readouterr().err
    result = compare_submissions(submissions / "optimal", submissions / "random")
    everything = result["groups"][-1]
    rows_a, rows_b = records(submissions / "optimal"), records(submissions / "random")
    solved_a = {(r["env_id"], r["seed"], r["sample"]) for r in rows_a if r["success"]}
    solved_b = {(r["env_id"], r["seed"], r["sample"]) for r in rows_b if r["success"]}
    assert (everything["only_a"], everything["only_b"]) == (len(solved_a - solved_b), len(solved_b - solved_a))


def test_compare_refuses_other_panels(submissions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = make_submission(tmp_path / "sokoban", "sokoban", "env=RAGEN/Sokoban-6x6-v0", "agent=random", "limit=2")
    assert main(["leaderboard", "compare", str(submissions / "random"), str(other)]) == 2
    # Named by the first panel the entries do not share, with both sides' checksums.
    assert "field panels.RAGEN/Bandit-HeldOut-v0:test: cannot pair the entries: their panels differ (A has '" \
        in capsys.readouterr().err


def test_compare_refuses_other_chat_settings(submissions: Path, tmp_path: Path) -> None:
    other = make_submission(tmp_path / "penalty", "penalty", f"suite={SUITE}", "agent=random", "limit=2",
                            "samples=2", "chat.format_penalty=-0.2")
    with pytest.raises(LeaderboardError, match="template hash"):
        compare_submissions(submissions / "random", other)


# -- the page in a real browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if in_ci():
            raise
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    if not CHROMIUM.exists():
        if in_ci():
            pytest.fail("CI needs Debian's chromium (.ci/run installs it)")
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()


def open_page(browser: Any, path: Path) -> tuple[Any, list[str]]:
    """The page at ``path`` and the list its console errors and uncaught exceptions go to."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.resolve().as_uri())
    return page, errors


def column_values(page: Any, table: str, title: str) -> list[str]:
    titles = page.eval_on_selector_all(f"#{table} thead th", "cells => cells.map(c => c.textContent)")
    index = titles.index(title)
    return page.eval_on_selector_all(f"#{table} tbody tr", f"rows => rows.map(r => r.cells[{index}].dataset.sort)")


def test_page_sorts_and_steps_through_an_episode(browser: Any, built: Path, submissions: Path, tmp_path: Path) -> None:
    page, errors = open_page(browser, built / "index.html")
    # The ranking leads; the detail table opens below it.
    assert page.eval_on_selector_all("#ranking-0 tbody tr", "rows => rows.map(r => r.cells[1].textContent)")[:2] == [
        "optimal", "random"]
    assert not page.is_visible("#main-0")
    page.locator("summary", has_text="detail").first.click()
    # Sorting: ascending, then descending on a second click; numbers sort as numbers.
    page.click("#main-0 thead th:text-is('success')")
    values = [float(v) for v in column_values(page, "main-0", "success")]
    assert values == sorted(values) and values[0] < values[-1]
    page.click("#main-0 thead th:text-is('success')")
    assert [float(v) for v in column_values(page, "main-0", "success")] == sorted(values, reverse=True)
    page.click("#main-0 thead th:text-is('env')")
    envs = column_values(page, "main-0", "env")
    assert envs == sorted(envs)

    # The viewer: a real episode of the random entry with at least two turns.
    record = next(r for r in records(submissions / "random")
                  if r["sample"] == 0 and len(r["turns"]) >= 2 and r["env_id"] == "RAGEN/Sokoban-6x6-v0")
    page.select_option("#v-entry", "random")
    page.select_option("#v-episode", f"{record['env_id']} {record['split']} seed {record['seed']}")
    turns = len(record["turns"])
    assert page.text_content("#v-turn") == f"Turn 1 of {turns}"
    assert page.text_content("#v-board") == record["messages"][1]["content"]
    assert page.text_content("#v-think") == "I pick at random."
    assert page.is_disabled("#v-prev")
    page.click("#v-next")
    assert page.text_content("#v-turn") == f"Turn 2 of {turns}"
    assert page.text_content("#v-board") == record["messages"][3]["content"]
    assert record["turns"][1]["parsed_actions"][0] in page.text_content("#v-actions")
    reward = record["turns"][1]["env_rewards"][0]
    shown = str(int(reward)) if reward == int(reward) else repr(reward)  # as JavaScript prints numbers
    assert f"env rewards: [{shown}]" in page.text_content("#v-rewards")
    for _ in range(turns - 1):
        page.click("#v-next")
    assert page.text_content("#v-turn").startswith(f"Final state (after {turns} turns)")
    assert page.text_content("#v-board") == record["messages"][-1]["content"]
    assert page.is_disabled("#v-next")
    page.click("#v-prev")
    assert page.text_content("#v-turn") == f"Turn {turns} of {turns}"
    options = page.eval_on_selector_all("#v-episode option", "o => o.length")
    assert options == 8 * min(2, VIEWER_SEEDS)  # 8 panels, the 2 seeds of this slice
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    assert (tmp_path / "page.png").stat().st_size > 10_000
    assert errors == []


def test_committed_page_loads_without_errors(browser: Any) -> None:
    page, errors = open_page(browser, REPO_ROOT / "leaderboard" / "index.html")
    assert page.text_content("#v-turn").startswith("Turn 1 of ")
    assert errors == []


def test_committed_rankings_fit_the_window(browser: Any) -> None:
    """At 1280 px every suite's ranking (22 env columns for textarena-v0) shows without sideways scrolling."""
    page, errors = open_page(browser, REPO_ROOT / "leaderboard" / "index.html")
    widths = page.eval_on_selector_all("table.ranking", "ts => ts.map(t => [t.scrollWidth, t.parentNode.clientWidth])")
    assert len(widths) >= 4 and all(table <= room for table, room in widths), widths
    assert errors == []


def test_page_shows_model_markup_as_text(browser: Any, hostile_board: Path) -> None:
    page, errors = open_page(browser, hostile_board / "index.html")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message) or dialog.dismiss())
    assert page.text_content("#v-think") == HOSTILE
    assert page.eval_on_selector_all("#viewer b", "nodes => nodes.length") == 0
    page.click("#v-next")
    assert dialogs == [] and errors == []
