"""Unit test of sass_waits.waiters on hand-written instruction lists (address, stall, write
barrier, read barrier, wait mask, text), the tuples sass_waits.instructions reads from cuobjdump:
no cuobjdump or GPU needed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_waits  # noqa: E402


def code(*lines):
    """Instructions 16 bytes apart; a line is (text, wait mask)."""
    return [(16 * k, 0, 7, 7, mask, text) for k, (text, mask) in enumerate(lines)]


class Waiters(unittest.TestCase):
    def test_a_loops_next_trip_is_a_path(self):
        loop = code(("CS2R.32 R4, SR_GLOBALTIMERLO", 0b1),  # 0x00: waits on barrier 0
                    ("FFMA R0, R0, R1, R2", 0),
                    ("STG.E.64 desc[UR6][R2.64], R4", 0),  # 0x20: the store
                    ("IADD3 R7, R7, 0x1, RZ", 0),
                    ("@!P1 BRA 0x0", 0),                    # back edge to the top
                    ("LDC.64 R2, c[0x0][0x210]", 0b1),      # after the loop: waits too
                    ("EXIT", 0))
        found = sass_waits.waiters(loop, 2, 0)
        self.assertEqual([(d, c[0]) for d, c in found], [(3, 0x00), (3, 0x50)])

    def test_an_always_taken_branch_is_followed_and_exit_ends_a_path(self):
        jump = code(("STG.E desc[UR6][R2.64], R5", 0),
                    ("BRA 0x30", 0),
                    ("MOV R5, R6", 0b1),  # skipped: never executed after the store
                    ("EXIT", 0),
                    ("MOV R5, R7", 0b1))
        self.assertEqual(sass_waits.waiters(jump, 0, 0), [])

    def test_the_shortest_path_gives_the_distance(self):
        # Taken, the branch reaches the waiter in 2; falling through, in 5.
        fork = code(("STG.E desc[UR6][R2.64], R5", 0),
                    ("@P0 BRA 0x50", 0),
                    ("NOP", 0), ("NOP", 0), ("NOP", 0),
                    ("MOV R5, R6", 0b1),
                    ("EXIT", 0))
        self.assertEqual([(d, c[0]) for d, c in sass_waits.waiters(fork, 0, 0)], [(2, 0x50)])

    def test_dotted_branches_and_unknown_targets(self):
        # BRA.U.ANY and BRA.DIV with a register operand are branches; an always-taken branch to
        # an address outside the kernel ends its path.
        dotted = code(("STG.E desc[UR6][R2.64], R5", 0),
                      ("@P1 BRA.U.ANY 0x40", 0),
                      ("BRA.DIV UR4, 0x50", 0),
                      ("MOV R5, R6", 0b1),      # 0x30: never reached
                      ("MOV R5, R7", 0b1),      # 0x40: taken from 0x10
                      ("BRA 0x900", 0),         # 0x50: target unknown, path ends
                      ("MOV R5, R8", 0b1))      # 0x60: never reached
        self.assertEqual([(d, c[0]) for d, c in sass_waits.waiters(dotted, 0, 0)], [(2, 0x40)])

    def test_a_predicate_operand_branch_may_fall_through(self):
        # BRA.U !UP0 is conditional like a guarded branch: both ways are followed.
        uniform = code(("STG.E desc[UR6][R2.64], R5", 0),
                       ("BRA.U !UP0, 0x40", 0),
                       ("MOV R5, R6", 0b1),      # 0x20: falling through
                       ("EXIT", 0),
                       ("MOV R5, R7", 0b1))      # 0x40: taken
        self.assertEqual([(d, c[0]) for d, c in sass_waits.waiters(uniform, 0, 0)],
                         [(2, 0x20), (2, 0x40)])

    def test_a_barrier_nobody_waits_on(self):
        plain = code(("STG.E desc[UR6][R2.64], R5", 0), ("MOV R9, R8", 0b10), ("EXIT", 0))
        self.assertEqual(sass_waits.waiters(plain, 0, 0), [])
        self.assertEqual([d for d, _ in sass_waits.waiters(plain, 0, 1)], [1])


class Loops(unittest.TestCase):
    def test_the_shortest_back_edge_is_the_inner_loop(self):
        nest = code(("MOV R2, RZ", 0),
                    ("CS2R.32 R4, SR_GLOBALTIMERLO", 0),     # 0x10: outer loop's top
                    ("FFMA R0, R0, R1, R2", 0),              # 0x20: inner loop's top
                    ("@!P1 BRA 0x20", 0),                    # 0x30: inner back edge
                    ("@P0 BRA 0x60", 0),                     # forward: not a loop
                    ("@!P2 BRA 0x10", 0),                    # 0x50: outer back edge
                    ("EXIT", 0))
        self.assertEqual(sass_waits.loops(nest), [(0x20, 0x30), (0x10, 0x50)])

    def test_a_uniform_predicate_operand_closes_a_loop_too(self):
        uniform = code(("FFMA R0, R0, R1, R2", 0),
                       ("BRA.U !UP0, 0x0", 0),
                       ("EXIT", 0))
        self.assertEqual(sass_waits.loops(uniform), [(0x0, 0x10)])

    def test_no_loop(self):
        self.assertEqual(sass_waits.loops(code(("MOV R2, RZ", 0), ("EXIT", 0))), [])


if __name__ == "__main__":
    unittest.main()
