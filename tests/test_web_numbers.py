"""The numbers the web page prints: one function of its script, ``num`` in ``app.js``, rounds
every evaluation, disc count and time it shows, so no raw float (``29.400000000000002``) and no
negative zero (``-0.0``) reaches a player.

The function is taken out of the script and run under Node.js; without ``node`` the test skips.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "engine_server" / "serve" / "static" / "app.js"

CASES = [   # (value, digits, signed) -> text
    ((29.400000000000002, 1, False), "29.4"),     # a sum of losses 12.3 + 17.1
    ((12.3 + 17.1, 2, False), "29.4"),
    ((-0.04, 1, True), "0"),                        # a hint's "-0.0"
    ((-0.0, 1, False), "0"),
    ((-0.001, 2, False), "0"),
    ((0.05, 1, True), "+0.1"), ((-0.05, 1, True), "-0.1"),   # half away from zero, both ways
    ((3.14159, 2, False), "3.14"), ((2.5, 1, True), "+2.5"), ((-2.5, 1, True), "-2.5"),
    ((-12.4, 0, True), "-12"), ((9.96, 1, True), "+10"), ((7, 1, False), "7"),
    ((0.123, 2, False), "0.12"), ((1.0, 2, False), "1"),
]


def script_function(name: str) -> str:
    """The text of the top-level function ``name`` of the page's script."""
    m = re.search(rf"^  function {name}\(.*?^  }}$", APP.read_text(encoding="utf-8"),
                  re.M | re.S)
    assert m, f"app.js has no function {name}"
    return m.group(0)


@pytest.mark.skipif(shutil.which("node") is None, reason="no node (Node.js) to run app.js")
def test_num_rounds_to_its_decimals_and_never_writes_negative_zero():
    calls = json.dumps([list(args) for args, _ in CASES])
    js = (f"{script_function('num')}\n"
          f"console.log(JSON.stringify({calls}.map((a) => num(...a))));")
    out = subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    assert json.loads(out) == [text for _, text in CASES]


def test_the_page_prints_its_numbers_through_num():
    """Outside ``num`` the script writes ``toFixed`` only for drawing (SVG coordinates, widths,
    node counts), never for a value a player reads."""
    text = APP.read_text(encoding="utf-8").replace(script_function("num"), "")
    for line in text.splitlines():
        if ".toFixed(" in line:
            assert re.search(r"[xy]\(|\* 100\)|1e6", line), line
    note = next(line for line in text.splitlines() if "Discs lost" in line)
    assert 'num(side("black"))' in note and 'num(side("white"))' in note
