"""Drawing a sample, labelling it in a spreadsheet round trip or in the terminal."""

from __future__ import annotations

import codecs
import csv
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import Labels, load_cases
from judge.calibrate._sample import draw
from judge.cli import main
from tests.helpers import call, case


def many(tmp_path: Path) -> Path:
    rows = []
    for i in range(200):
        tool = "get_time" if i % 50 == 0 else "get_weather"  # a rare stratum: 4 of 200
        rows.append(
            case([call(tool, {"city": "Paris"})], expected_behavior="call") | {"id": f"c{i}"}
        )
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_draw_is_seeded_stratified_and_keeps_rare_strata(tmp_path: Path) -> None:
    cases = list(load_cases(many(tmp_path)))
    first = draw(cases, 20, ["tool"], seed=1)
    assert first == draw(cases, 20, ["tool"], seed=1)
    assert first.indices != draw(cases, 20, ["tool"], seed=2).indices
    assert len(first.indices) == 20 == len(set(first.indices))
    tools = Counter(cases[i].tool_calls[0].name for i in first.indices)
    assert tools["get_time"] >= 1  # 2% of the cases, still drawn
    assert (first.strata, first.left_out) == (2, 0)


def test_more_strata_than_room_is_said(tmp_path: Path) -> None:
    source = tmp_path / "cases.jsonl"
    rows = [
        case([call("get_weather", {})], meta={"k": f"s{i}"}) | {"id": f"c{i}"} for i in range(8)
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    drawn = draw(list(load_cases(source)), 5, ["meta.k"])
    assert (len(drawn.indices), drawn.strata, drawn.left_out) == (5, 8, 3)
    out = tmp_path / "sample.jsonl"
    done = CliRunner().invoke(
        main, ["sample", str(source), "--n", "5", "--stratify", "meta.k", "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    assert "warning: 8 strata for --n 5: 3 strata have no case in the sample" in done.stderr
    assert len(out.read_text().splitlines()) == 5


def test_draw_rejects_an_unknown_stratum(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot stratify by 'colour'"):
        draw(list(load_cases(many(tmp_path))), 5, ["colour"])


def test_sample_command_writes_the_original_lines(tmp_path: Path) -> None:
    source = many(tmp_path)
    out = tmp_path / "sample.jsonl"
    done = CliRunner().invoke(
        main,
        [
            "sample",
            str(source),
            "--n",
            "10",
            "--stratify",
            "tool,expected_behavior,failure",
            "-o",
            str(out),
        ],
    )
    assert done.exit_code == 0, done.output
    lines = out.read_text().splitlines()
    assert len(lines) == 10
    assert set(lines) <= set(source.read_text().splitlines())


def test_csv_round_trip(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl"
    rows = [
        case([call("get_weather", {"city": "Paris"})]) | {"id": "a"},
        case([]) | {"id": "b", "labels": {"selection": "correct"}},
    ]
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sheet = tmp_path / "labels.csv"
    assert (
        CliRunner().invoke(main, ["labels", "export", str(sample), "-o", str(sheet)]).exit_code == 0
    )
    with sheet.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [r["id"] for r in table] == ["a", "b"]
    assert "get_weather" in table[0]["calls"] and "weather in Paris" in table[0]["request"]
    assert table[1]["selection"] == "correct"
    table[0].update(selection="Correct", arguments="incorrect", note="Paris is right")
    table[1].update(answer="incorrect")
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    done = CliRunner().invoke(main, ["labels", "import", str(sample), str(sheet)])
    assert done.exit_code == 0, done.output
    loaded = load_cases(sample)
    assert loaded[0].labels is not None
    assert (loaded[0].labels.selection, loaded[0].labels.arguments) == ("correct", "incorrect")
    assert loaded[0].meta["label_note"] == "Paris is right"
    assert loaded[1].labels is not None and loaded[1].labels.selection == "correct"
    assert loaded[1].labels.answer == "incorrect"


def test_csv_import_refuses_an_off_menu_label(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl"
    sample.write_text(json.dumps(case([]) | {"id": "a"}) + "\n")
    sheet = tmp_path / "labels.csv"
    sheet.write_text("id,selection,arguments\na,maybe,\n")
    done = CliRunner().invoke(main, ["labels", "import", str(sample), str(sheet)])
    assert done.exit_code == 2
    assert "labels.csv:2: selection must be correct, incorrect or empty" in done.stderr


# Regression (issue 52): `labels export` wrote cells beginning with `=` raw, a formula to a
# spreadsheet (ids too), and `labels import` of a sheet saved as cp1252 was a traceback.
FORMULAS = ['=HYPERLINK("http://x")', "+1", "-1", "@SUM(A1)", "\tx", "\rx", "'=quoted"]


def test_cells_a_spreadsheet_would_run_are_quoted_and_come_back_the_same(tmp_path: Path) -> None:
    sample, sheet = tmp_path / "sample.jsonl", tmp_path / "labels.csv"
    rows = [
        case([call("get_weather", {"city": "-3"})])
        | {"id": text, "meta": {"label_note": text}, "labels": {"selection": "correct"}}
        for text in [*FORMULAS, "plain", "'quoted"]
    ]
    rows[0]["messages"] = [{"role": "user", "content": "=cmd|' /C calc'!A0"}]
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = [(c.id, c.labels, c.meta) for c in load_cases(sample)]
    done = CliRunner().invoke(main, ["labels", "export", str(sample), "-o", str(sheet)])
    assert done.exit_code == 0, done.output
    with sheet.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    cells = [cell for row in table for cell in row.values()]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert [row["id"] for row in table] == [f"'{t}" for t in FORMULAS] + ["plain", "'quoted"]
    assert table[0]["request"] == "[user] =cmd|' /C calc'!A0"  # begins with `[`: as it is
    done = CliRunner().invoke(main, ["labels", "import", str(sample), str(sheet)])
    assert done.exit_code == 0, done.output
    assert [(c.id, c.labels, c.meta) for c in load_cases(sample)] == before


def test_a_sheet_in_another_encoding_is_named_and_read_with_encoding(tmp_path: Path) -> None:
    sample, sheet = tmp_path / "sample.jsonl", tmp_path / "labels.csv"
    sample.write_text(json.dumps(case([]) | {"id": "a"}) + "\n")
    sheet.write_bytes('id,selection,note\na,correct,\n"x",,caf\u00e9\n'.encode("cp1252"))
    done = CliRunner().invoke(main, ["labels", "import", str(sample), str(sheet)])
    assert done.exit_code == 2
    assert f"{sheet} is not utf-8 (byte 0xE9 at offset 37, on line 3" in done.stderr
    assert "--encoding" in done.stderr and "Traceback" not in done.output
    done = CliRunner().invoke(
        main, ["labels", "import", str(sample), str(sheet), "--encoding", "cp1252"]
    )
    assert done.exit_code == 0, done.output
    assert load_cases(sample)[0].labels == Labels(selection="correct")
    done = CliRunner().invoke(
        main, ["labels", "import", str(sample), str(sheet), "--encoding", "x"]
    )
    assert done.exit_code == 2 and "unknown encoding 'x'" in done.stderr


def test_a_utf8_sheet_is_read_with_or_without_a_byte_order_mark(tmp_path: Path) -> None:
    sample, sheet = tmp_path / "sample.jsonl", tmp_path / "labels.csv"
    sample.write_text(json.dumps(case([]) | {"id": "a"}) + "\n")
    sheet.write_bytes(codecs.BOM_UTF8 + "id,selection,note\na,correct,caf\u00e9\n".encode())
    done = CliRunner().invoke(main, ["labels", "import", str(sample), str(sheet)])
    assert done.exit_code == 0, done.output
    [read] = load_cases(sample)
    assert read.labels == Labels(selection="correct") and read.meta["label_note"] == "caf\u00e9"


class Terminal:
    """`judge label` in a pseudo-terminal, answered like a person would."""

    def __init__(self, path: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "judge", "label", str(path)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; screen:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break
        self.seen = self.seen[self.seen.index(text) + len(text) :]

    def answer(self, prompt: str, keys: str) -> None:
        self.expect(prompt)
        os.write(self.master, keys.encode() + b"\r")

    def finish(self) -> str:
        self.process.wait(timeout=20)
        try:
            while True:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if not ready:
                    break
                self.seen += os.read(self.master, 4096).decode(errors="replace")
        except OSError:
            pass
        os.close(self.master)
        return self.seen


STAMP = ("reviewer", "labelled_at")


def labels(path: Path) -> list[Any]:
    """The labels of each line, without who gave them and when (`stamps`)."""
    found = [json.loads(line).get("labels") for line in path.read_text().splitlines()]
    return [None if f is None else {k: v for k, v in f.items() if k not in STAMP} for f in found]


def stamps(path: Path) -> list[Any]:
    found = [json.loads(line).get("labels") or {} for line in path.read_text().splitlines()]
    return [{k: f[k] for k in STAMP if k in f} for f in found]


def test_terminal_labeller_saves_every_answer_and_resumes(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl"
    rows = [
        case([call("get_weather", {"city": "Paris"})]) | {"id": "first"},
        case([]) | {"id": "second", "response": {"content": "Hi!", "tool_calls": []}},
        case([call("get_time", {})]) | {"id": "third"},
    ]
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))

    screen = Terminal(sample)
    screen.expect("first")
    screen.expect('get_weather {"city":"Paris"}')
    screen.answer("selection:", "c")
    screen.answer("arguments:", "x")  # not an answer: asked again
    screen.answer("please answer one of", "i")
    screen.expect("second")
    screen.answer("selection:", "i")  # no call: no arguments question
    screen.answer("answer (the final reply):", "i")  # a text reply: its answer label
    screen.expect("third")
    screen.answer("selection:", "q")
    assert "labelled 2 cases; 1 left" in screen.finish()
    assert labels(sample) == [
        {"selection": "correct", "arguments": "incorrect"},
        {"selection": "incorrect", "answer": "incorrect"},
        None,
    ]
    given = stamps(sample)  # who labelled and when, as `judge review` records it
    assert given[0]["reviewer"] and given[0]["labelled_at"].endswith("+00:00")
    assert given[2] == {}

    screen = Terminal(sample)  # resumes at the third case
    screen.expect("third")
    screen.answer("selection:", "i")
    screen.answer("arguments:", "n")
    assert "labelled 1 cases; 0 left" in screen.finish()
    assert labels(sample)[2] == {"selection": "incorrect", "arguments": None}


def test_quitting_at_the_arguments_question_asks_the_case_again(tmp_path: Path) -> None:
    # Regression: the selection label alone marked the case done, so its arguments label
    # was never asked again.
    sample = tmp_path / "sample.jsonl"
    sample.write_text(json.dumps(case([call("get_weather", {"city": "Paris"})]) | {"id": "a"}))
    screen = Terminal(sample)
    screen.answer("selection:", "c")
    screen.answer("arguments:", "q")
    assert "labelled 0 cases; 1 left" in screen.finish()
    assert labels(sample) == [{"selection": "correct"}]

    screen = Terminal(sample)  # only what the case lacks is asked
    screen.expect("=== [1/1] a ===")
    screen.answer("arguments:", "c")
    assert "labelled 1 cases; 0 left" in screen.finish()
    assert labels(sample) == [{"selection": "correct", "arguments": "correct"}]


def test_a_bad_line_in_a_sample_names_its_real_line_number(tmp_path: Path) -> None:
    # Regression: blank lines were skipped before numbering, so the reported line was wrong.
    sample = tmp_path / "sample.jsonl"
    sample.write_text(json.dumps(case([])) + "\n\n" + '{"id": "x", "tools": 3}\n')
    done = CliRunner().invoke(
        main, ["labels", "export", str(sample), "-o", str(tmp_path / "l.csv")]
    )
    assert done.exit_code == 2
    assert f"{sample}:3" in done.stderr
