"""pipescope_llm against the build's pipescope (PIPESCOPE_BINARY): documents as dicts, flags from
keywords, and a failure as one exception carrying the command's one-line message."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import pipescope_llm  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Flags(unittest.TestCase):
    def test_keywords_become_flags(self):
        self.assertEqual(pipescope_llm.flag_arguments({"gpu": "a100-80gb", "gbs": 64, "zero_shard": 8}),
                         ["--gpu", "a100-80gb", "--gbs", "64", "--zero-shard", "8"])
        self.assertEqual(pipescope_llm.flag_arguments({"sequence_parallel": True, "html": False, "vpp": None}),
                         ["--sequence-parallel"])
        self.assertEqual(pipescope_llm.flag_arguments({"split": [5, 6, 6, 5]}), ["--split", "5", "6", "6", "5"])


class Commands(unittest.TestCase):
    def test_a_plan_is_its_json_document(self):
        plan = pipescope_llm.plan(model="llama2-7b", gpu="h100-80gb", gpus=8, tp=2, pp=2, gbs=64, seq=4096,
                                  split=[16, 16])
        self.assertIn("uniform", plan)
        self.assertGreater(plan["uniform"]["iteration_s"], 0)
        self.assertEqual([s["layers"] for s in plan["uniform"]["stages"]], [16, 16])

    def test_a_search_ranks_configurations(self):
        ranked = pipescope_llm.search(model="llama2-7b", gpu="h100-80gb", gpus=8, gbs=64, seq=4096, top=3)
        self.assertTrue(ranked)

    def test_a_report_of_a_trace_directory(self):
        trace = os.path.join(SOURCE, "tests", "data", "gpu", "h200-llama-1b")
        doc = pipescope_llm.report(trace)
        self.assertIn("kernel_categories", doc)

    def test_bad_input_raises_with_the_commands_one_line(self):
        with self.assertRaises(pipescope_llm.PipescopeError) as caught:
            pipescope_llm.plan(model="no-such-model", gpu="h100-80gb", gpus=8, tp=1, pp=1, gbs=8, seq=2048)
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIn("no-such-model", caught.exception.message)
        self.assertNotIn("\n", caught.exception.message)

    def test_no_command_is_said_so(self):
        saved = os.environ.get("PIPESCOPE_BINARY")
        os.environ["PIPESCOPE_BINARY"] = "/nonexistent/pipescope"
        try:
            with self.assertRaises(pipescope_llm.PipescopeError) as caught:
                pipescope_llm.plan(model="llama2-7b")
            self.assertIn("cannot run /nonexistent/pipescope", caught.exception.message)
        finally:
            if saved is None:
                del os.environ["PIPESCOPE_BINARY"]
            else:
                os.environ["PIPESCOPE_BINARY"] = saved


if __name__ == "__main__":
    unittest.main()
