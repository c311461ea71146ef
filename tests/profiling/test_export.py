"""Reading torch's exported traces: the malformed names torch writes now and then are read, not a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_nosync.profiling import export

# Two events as torch 2.13's export_chrome_trace wrote them in a guarded run of the docs' profile_library example: its
# profiler had recorded a Python frame named `"""` and wrote the name unescaped.
EVENT = """  {{
    "ph": "X",
    "cat": "python_function",
    "name": {name},
    "pid": 9824,
    "tid": 9824,
    "ts": 4830904697503.635,
    "dur": 309.380
    ,
    "args": {{
      "Python parent id": 8376, "Python id": 8377, "Ev Idx": 13183
    }}
  }}"""


def _trace(path: Path, *names: str) -> str:
    events = ",\n".join(EVENT.format(name=name) for name in names)
    path.write_text('{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + events + "\n  ]\n}\n")
    return str(path)


def test_a_name_torch_wrote_unescaped_is_read_as_it_was_meant(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json", '"torch/profiler/_cupti_monitor.py(0): """"', '"pipeline.py(12): __call__"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(Path(path).read_text())  # the twin is the real defect: not JSON
    names = [event["name"] for event in export.load_raw(path)["traceEvents"]]
    assert names == ['torch/profiler/_cupti_monitor.py(0): """', "pipeline.py(12): __call__"]


def test_names_torch_escaped_are_left_as_they_are(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json", r'"say \"hi\""', r'"C:\\temp"')
    assert [event["name"] for event in export.load_raw(path)["traceEvents"]] == ['say "hi"', "C:\\temp"]
    text = Path(path).read_text()
    assert json.loads(export.escape_event_names(text)) == json.loads(text)


def test_a_file_that_is_not_json_for_another_reason_still_fails(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [')
    with pytest.raises(json.JSONDecodeError):
        export.load_raw(str(path))
