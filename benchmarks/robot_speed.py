"""nc.forward on real robots (ur5, panda, solo12) against Pinocchio's ABA -> data/robot_speed.csv."""
from natcoord_bench.robot_speed import main

if __name__ == "__main__":
    raise SystemExit(main())
