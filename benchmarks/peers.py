"""natcoord against Pinocchio, MuJoCo and Exudyn (writes data/peers.csv, paper/figures/peers.png).

The experiment lives in :mod:`natcoord_bench.peers`; ``--quick`` is a
smoke run of a few seconds. Peers that are not installed are left out
(``pip install -e '.[peers]'``).
"""
import argparse

from natcoord_bench import peers

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=peers.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.configure(parser)
    raise SystemExit(peers.run(parser.parse_args()))
