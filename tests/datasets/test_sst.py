"""The SST tree parser, splits, vocabulary and pipeline."""

import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_capsules.datasets import sst

_SHARED_SST = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "data", "sst"
)


class ParseTreeTest(tf.test.TestCase):
    def test_nested_tree(self):
        tree = sst.parse_tree("(3 (2 It) (4 (4 works) (2 .)))")
        self.assertEqual(tree.label, 3)
        self.assertEqual(sst.leaves(tree), ["It", "works", "."])
        self.assertEqual(
            sst.phrases(tree),
            [
                (["It", "works", "."], 3),
                (["It"], 2),
                (["works", "."], 4),
                (["works"], 4),
                (["."], 2),
            ],
        )

    def test_leaf_with_a_space_and_an_escaped_slash(self):
        tree = sst.parse_tree(r"(2 (2 8 1\/2) (2 .))")
        self.assertEqual(sst.leaves(tree), ["8 1/2", "."])

    def test_malformed_trees_are_refused(self):
        with self.assertRaisesRegex(ValueError, "Trailing"):
            sst.parse_tree("(2 (2 a)))")
        with self.assertRaisesRegex(ValueError, "Expected '\\('"):
            sst.parse_tree("2 a")


class LoadSstTest(tf.test.TestCase):
    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp()
        trees = [
            "(3 (2 It) (4 (4 works) (2 .)))",
            "(2 (2 It) (2 is))",
            "(0 (1 It) (0 fails))",
        ]
        for name in ("train.txt", "dev.txt", "test.txt"):
            with open(os.path.join(self.directory, name), "w") as file:
                file.write("\n".join(trees) + "\n")

    def test_roots_and_sst2_labels(self):
        sentences, labels = sst.load_sst(self.directory, "test", "sst5")
        self.assertEqual(labels, [3, 2, 0])
        sentences, labels = sst.load_sst(self.directory, "test", "sst2")
        self.assertEqual(sentences, [["It", "works", "."], ["It", "fails"]])
        self.assertEqual(labels, [1, 0])

    def test_unique_phrases(self):
        sentences, labels = sst.load_sst(
            self.directory, "train", "sst5", all_phrases=True
        )
        # "It" appears in three trees, once in the phrases (first label).
        self.assertEqual(sentences.count(["It"]), 1)
        self.assertLen(sentences, 9)

    def test_vocabulary_and_dataset(self):
        sentences, labels = sst.load_sst(self.directory, "train")
        vocabulary = sst.Vocabulary(sentences)
        ids = vocabulary.encode([["it", "WORKS"], ["unseen"]])
        self.assertEqual(ids.shape, (2, 2))
        self.assertEqual(ids[1, 0], sst.UNKNOWN_ID)
        self.assertEqual(ids[1, 1], sst.PADDING_ID)
        self.assertEqual(ids[0, 0], vocabulary.ids["it"])
        batch = next(
            iter(
                sst.sst_dataset(sentences, labels, vocabulary, 5, batch_size=3)
            )
        )
        self.assertEqual(batch[0].shape, (3, 3))
        self.assertAllEqual(np.argmax(batch[1], -1), labels)

    def test_bad_split_or_task(self):
        with self.assertRaisesRegex(ValueError, "split"):
            sst.load_sst(self.directory, "dev")
        with self.assertRaisesRegex(ValueError, "task"):
            sst.load_sst(self.directory, "test", "sst3")

    def test_shared_treebank_split_sizes(self):
        if not os.path.isdir(_SHARED_SST):
            self.skipTest("The shared treebank is not beside the project.")
        # The sizes the paper gives (sec. 5).
        for task, sizes in (
            ("sst5", (8544, 1101, 2210)),
            ("sst2", (6920, 872, 1821)),
        ):
            for split, size in zip(("train", "validation", "test"), sizes):
                self.assertLen(sst.load_sst(_SHARED_SST, split, task)[1], size)


if __name__ == "__main__":
    tf.test.main()
