"""The real DUCC RM in the loop: the harness that builds a DUCC source tree's RM and runs it on a
simulated clock (build.sh, java/, run.py), and the commands that drive it from a recorded log."""
