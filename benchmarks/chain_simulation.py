"""chain(512) for 1 s: worst joint-point error vs wall time -> data/chain_simulation.csv."""
import argparse

from natcoord_bench import chain_simulation

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=chain_simulation.__doc__)
    chain_simulation.configure(parser)
    chain_simulation.run(parser.parse_args())
