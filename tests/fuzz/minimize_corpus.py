#!/usr/bin/env python3
"""Picks a small corpus that keeps the coverage of a large one.

libFuzzer's -merge=1 keeps every input that adds a feature in the order it
meets them, which leaves hundreds of files. This reads the merge control file
that `-merge=1 -merge_control_file=FILE` writes (the edges each input covers,
"COV <index> <edge>...") and picks inputs greedily, most new edges first and
the smaller input on ties, until every edge is covered or `--max-files` are
picked; then copies them to OUT_DIR named by their SHA-1, as libFuzzer names
corpus files.

  minimize_corpus.py CONTROL_FILE OUT_DIR [--max-files N]
"""
import argparse
import hashlib
import os
import shutil
import sys


def read_control(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    count = int(lines[0])
    files = lines[2:2 + count]
    edges = [set() for _ in files]
    for line in lines[2 + count:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "COV":
            edges[int(parts[1])].update(parts[2:])
    return files, edges


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("control")
    parser.add_argument("out_dir")
    parser.add_argument("--max-files", type=int, default=150)
    args = parser.parse_args()

    files, edges = read_control(args.control)
    sizes = [os.path.getsize(f) if os.path.exists(f) else 1 << 30 for f in files]
    universe = set().union(*edges) if edges else set()
    covered, picked = set(), []
    while len(picked) < args.max_files:
        best, best_gain = None, 0
        for i, e in enumerate(edges):
            gain = len(e - covered)
            if gain > best_gain or (gain == best_gain and gain and sizes[i] < sizes[best]):
                best, best_gain = i, gain
        if best is None:
            break
        picked.append(best)
        covered |= edges[best]

    os.makedirs(args.out_dir, exist_ok=True)
    for i in picked:
        with open(files[i], "rb") as f:
            data = f.read()
        name = hashlib.sha1(data).hexdigest()
        shutil.copyfile(files[i], os.path.join(args.out_dir, name))
    print(f"minimize_corpus: {len(picked)} of {len(files)} inputs cover "
          f"{len(covered)} of {len(universe)} edges", file=sys.stderr)


if __name__ == "__main__":
    main()
