"""docs/compatibility.md against the installed tilejit: every TileLang name
the table marks supported (or supported with a difference) exists on
tilejit.language, every name it marks not supported does not and gives the
error the table records, in a kernel too, and every unsupported name
TileLang's examples use has its reason written down below the table.

TileLang itself is not needed: the table is the record."""

import re
from pathlib import Path

import pytest

import tilejit.language as T

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
_LOCATION = re.compile(r"^.*?:\d+:\d+: ")


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def _table():
    """[(names, status, example counts {name: n})] of the table's name rows."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = _cells(line)
        assert len(cells) == 4, line
        names = re.findall(r"`([^`]+)`", cells[0])
        counts = {}
        if re.fullmatch(r"\d+", cells[3]):
            counts = {n: int(cells[3]) for n in names} if len(names) == 1 else {}
            assert len(names) == 1 or cells[3] == "0", line
        else:
            counts = {n: int(c) for n, c in re.findall(r"`([^`]+)` (\d+)", cells[3])}
            assert counts and set(counts) <= set(names), line
        rows.append((names, cells[2], counts))
    return rows


ROWS = _table()
SUPPORTED = [n for names, st, _ in ROWS if st.startswith("supported") for n in names]
UNSUPPORTED = [(n, st) for names, st, _ in ROWS if st.startswith("not supported") for n in names]


def _recorded_error(name, status):
    m = re.fullmatch(r'not supported: AttributeError "(.*)"', status)
    assert m, status
    return m.group(1).replace("<name>", name)


def test_table_is_whole():
    names = [n for names, _, _ in ROWS for n in names]
    assert len(names) == len(set(names)), "a name is listed twice"
    assert all(st.startswith(("supported", "not supported")) for _, st, _ in ROWS)
    assert all(st == "supported" or st.startswith("supported, with a difference: ")
               or st.startswith("not supported: ") for _, st, _ in ROWS)
    text = DOC.read_text(encoding="utf-8")
    totals = re.search(r"Totals: (\d+) names; \*\*(\d+) supported\*\*, \*\*(\d+) supported with "
                       r"a difference\*\*, \*\*(\d+) not supported\*\*", text)
    assert totals, "the totals line is missing"
    plain = sum(len(names) for names, st, _ in ROWS if st == "supported")
    assert [int(x) for x in totals.groups()] == \
        [len(names), plain, len(SUPPORTED) - plain, len(UNSUPPORTED)]
    for core in ("Kernel", "copy", "gemm", "Parallel", "Pipelined", "alloc_shared", "float16"):
        assert core in SUPPORTED, core


@pytest.mark.parametrize("name", SUPPORTED)
def test_supported_name_exists(name):
    assert hasattr(T, name), f"the table says T.{name} is supported; tilejit.language lacks it"


@pytest.mark.parametrize("name,status", UNSUPPORTED)
def test_unsupported_name_gives_the_recorded_error(name, status):
    with pytest.raises(AttributeError) as info:
        getattr(T, name)
    assert _LOCATION.sub("", str(info.value)) == _recorded_error(name, status)


def _kernel_using(name):
    def k(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            getattr(T, name)(A)
    return k


@pytest.mark.parametrize("name,status", [(n, st) for n, st in UNSUPPORTED
                                         if not n.startswith("__")])
def test_unsupported_name_in_a_kernel(name, status):
    """Used in a kernel body, the error comes when the body is traced, with
    the author's file:line:col in front."""
    with pytest.raises(AttributeError) as info:
        T.prim_func(_kernel_using(name))
    message = str(info.value)
    assert message.startswith(__file__ + ":"), message
    assert _LOCATION.sub("", message) == _recorded_error(name, status)


def test_names_examples_use_are_supported_or_explained():
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Used by TileLang's examples, not supported", 1)
    assert len(section) == 2, "the section of unsupported names the examples use is missing"
    listed = {}
    for bullet in re.findall(r"^- (.*)$", section[1], re.M):
        names, _, reason = bullet.partition("; in ")
        assert re.search(r": \S", reason), f"no reason given: {bullet}"
        for n, c in re.findall(r"`T\.([^`]+)` \((\d+)\)", names):
            assert n not in listed, n
            listed[n] = c
    wanted = {n: c for names, st, counts in ROWS if st.startswith("not supported")
              for n, c in counts.items() if c > 0}
    assert set(listed) == set(wanted)
    assert all(int(listed[n]) == wanted[n] for n in wanted)
