"""The README's Python example runs as written."""

import os
import re

from conftest import REPO


def test_the_readme_example_runs():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    section = text[text.index("## Python\n") :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the Python section has one complete example"
    exec(compile(blocks[0], "README.md (Python example)", "exec"), {})
