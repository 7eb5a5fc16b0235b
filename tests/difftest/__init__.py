"""A differential tester of tilejit's tile language (issue 20 item 7).

Random tile programs in TileLang's Python, run on a tilejit target and
compared with a numpy interpreter of TileLang's semantics that knows
nothing of tilejit:

    program.py      the tester's own program representation (JSON too)
    render.py       a program as TileLang Python source text
    interpret.py    TileLang's semantics in numpy, with the checks that keep
                    a program well defined (races, unwritten reads, bounds)
    numerics.py     dtypes, inputs, tolerances, the comparison
    features.py     what the generator draws on, one switch per feature
    generator.py    random programs from a seed (motifs_tile.py,
                    motifs_thread.py: what a kernel is made of)
    detect.py       the features a program uses, read off the program
    runner.py       one program on a target against the interpreter, in a
                    child process that may crash or hang
    corpus.py       the regression corpus (regressions/*.json), the minimiser
    __main__.py     `python3 -m difftest` (from tests/): run for N seconds,
                    write what fails into the corpus

tests/python/test_difftest.py replays the corpus and runs the committed
seeds (seeds.txt) in CI; scripts/gpu_run.sh runs the generator on CUDA.
"""
