"""Compiles every ```cpp and ```c block of README.md and docs/*.md, so that
no C or C++ example rots (the Python blocks run through
pytest-markdown-docs; scripts/test_docs.sh runs both).

A block is a compilable unit as it stands: `g++ -std=c++20 -fsyntax-only`
(`gcc -std=c11` for C) against the in-tree headers (include/, examples/)
and the build's outputs (the headers of the libraries ctest exports, under
build/tests/c/exported). A block that is a fragment says so in an HTML
comment on the line before its fence, which this test understands:

    <!-- cpp-fragment: wrapped in a function; includes tilejit/ir/tile_builder.h -->

The block is then compiled as the body of a function, after
`#include <tilejit/tilejit.h>`, the headers named after `includes`, and
`using namespace tilejit;`: the compiler still sees every line of it.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TILEJIT_DOCS_BUILD_DIR", ROOT / "build"))
FRAGMENT = re.compile(r"<!--\s*cpp-fragment:\s*wrapped in a function(?:;\s*includes\s+([^>]*?))?\s*-->")


def doc_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def blocks():
    """(file, line, language, code, fragment includes or None) per block."""
    found = []
    for path in doc_files():
        lines = path.read_text().split("\n")
        i = 0
        while i < len(lines):
            m = re.match(r"^```(\S*)", lines[i])
            if not m:
                i += 1
                continue
            lang, start = m.group(1), i
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            if lang in ("cpp", "c"):
                prev = lines[start - 1] if start > 0 else ""
                frag = FRAGMENT.search(prev)
                includes = None
                if frag:
                    includes = (frag.group(1) or "").split()
                found.append((path, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                               includes))
            i = j + 1
    return found


BLOCKS = blocks()


def test_the_docs_have_c_and_cpp_blocks():
    assert any(b[2] == "cpp" for b in BLOCKS) and any(b[2] == "c" for b in BLOCKS)


@pytest.mark.parametrize("path,line,lang,code,includes", BLOCKS,
                         ids=[f"{b[0].relative_to(ROOT)}:{b[1]}" for b in BLOCKS])
def test_block_compiles(path, line, lang, code, includes, tmp_path):
    compiler = shutil.which("g++" if lang == "cpp" else "gcc")
    if compiler is None:
        pytest.skip(f"no {'g++' if lang == 'cpp' else 'gcc'}")
    exported = BUILD / "tests" / "c" / "exported"
    if '#include "libsplitk_gemm.h"' in code and not (exported / "libsplitk_gemm.h").exists():
        pytest.skip(f"{exported}/libsplitk_gemm.h is made by ctest's export tests; build first")
    rel = path.relative_to(ROOT)
    if includes is not None:
        head = "#include <tilejit/tilejit.h>\n" + "".join(f"#include <{h}>\n" for h in includes)
        unit = (f"{head}using namespace tilejit;\nvoid docs_fragment() {{\n"
                f"#line {line + 1} \"{rel}\"\n{code}}}\n")
    else:
        unit = f"#line {line + 1} \"{rel}\"\n{code}"
    src = tmp_path / ("block.cpp" if lang == "cpp" else "block.c")
    src.write_text(unit)
    std = "-std=c++20" if lang == "cpp" else "-std=c11"
    cmd = [compiler, std, "-fsyntax-only", "-Wall", "-Werror=return-type",
           "-I", str(ROOT / "include"), "-I", str(ROOT / "examples"), "-I", str(exported), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{rel}:{line}: the {lang} block does not compile:\n{proc.stderr}"
