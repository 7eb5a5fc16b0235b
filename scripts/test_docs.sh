#!/usr/bin/env bash
# The documentation, as CI checks it (scripts/test.sh runs this after the
# Python tests, which build the package into build-py/site):
# - installs the documentation tools (mkdocs, mkdocs-material,
#   pytest-markdown-docs) with pip, unless TILEJIT_SKIP_PIP=1;
# - builds the site from mkdocs.yml and docs/ with `mkdocs build --strict`
#   into build-docs/html (a warning, such as a broken link, fails it);
# - runs every ```python block of README.md and docs/*.md against the built
#   package (pytest-markdown-docs; blocks that need torch or a GPU skip
#   without them, tests/docs/doc_fixtures.py), and compiles every ```cpp
#   and ```c block against the in-tree headers and the build's outputs
#   (tests/docs/test_code_blocks.py).
#
#   bash scripts/test_docs.sh                         # extra arguments go to pytest
#   TILEJIT_SITE=/path/to/site bash scripts/test_docs.sh   # another build of the package
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python="${PYTHON:-python3}"
site="${TILEJIT_SITE:-$root/build-py/site}"

if [[ ! -d "$site/tilejit" ]]; then
  echo "no tilejit package under $site: run scripts/test_python.sh first" >&2
  exit 1
fi

if [[ "${TILEJIT_SKIP_PIP:-0}" != 1 ]]; then
  echo "== install the documentation tools"
  "$python" -m pip install -q --disable-pip-version-check \
    "mkdocs>=1.6" "mkdocs-material>=9.5" "pytest-markdown-docs>=0.9" 2>&1 |
    grep -v "as the 'root' user" || true
fi

echo "== mkdocs build --strict (build-docs/html)"
NO_MKDOCS_2_WARNING=1 "$python" -m mkdocs build --strict -q -f mkdocs.yml -d "$root/build-docs/html"

echo "== the code blocks of README.md and docs/*.md"
# --markdown-docs-syntax=superfences reads both `python fixture:x` (the
# README's fences) and `{.python fixture:x}` (the pages', as mkdocs renders
# them). -p doc_fixtures: the fixtures that skip a block without torch or a
# GPU, and a temporary kernel cache.
PYTHONPATH="$site:$root/tests/docs${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest \
  -p no:cacheprovider -p doc_fixtures --markdown-docs --markdown-docs-syntax=superfences \
  -q -rs README.md docs tests/docs/test_code_blocks.py "$@"
