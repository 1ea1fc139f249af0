"""Stanford Sentiment Treebank (Socher et al. 2013) from its PTB-style
trees: a tree parser, phrase and root-sentence splits, a vocabulary and
`tf.data` pipelines for SST-5 and SST-2.

Each line of `train.txt`, `dev.txt` and `test.txt` is one sentence's tree,
`(label child child)` or `(label word)`, labels 0-4 from very negative to
very positive. SST-5 keeps the five labels; SST-2 drops neutral (2) and
maps 0-1 to negative (0) and 3-4 to positive (1). Heinsen (2019) trains on
every unique phrase of the training trees and tests on the root sentences.
"""

import collections
import os

import numpy as np
import tensorflow as tf

SPLIT_FILES = {
    "train": "train.txt",
    "validation": "dev.txt",
    "test": "test.txt",
}
TASKS = {"sst5": 5, "sst2": 2}
PADDING_ID, UNKNOWN_ID = 0, 1

Tree = collections.namedtuple("Tree", ["label", "children", "word"])


def parse_tree(text):
    """Parses one PTB-style tree, e.g. `(3 (2 It) (4 (4 works) (2 .)))`.

    Returns:
        A `Tree(label, children, word)`: leaves have a `word` and no
        children; inner nodes have children and `word` None.

    Examples:

        >>> tree = parse_tree("(3 (2 It) (4 (4 works) (2 .)))")
        >>> tree.label, [child.label for child in tree.children]
        (3, [2, 4])
    """
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    if not tokens:
        raise ValueError("`parse_tree` received an empty line.")
    position = 0

    def node():
        nonlocal position
        if tokens[position] != "(":
            raise ValueError(
                f"Expected '(' at token {position} of {text[:60]!r}..., "
                f"found {tokens[position]!r}."
            )
        label = int(tokens[position + 1])
        position += 2
        if tokens[position] != "(":  # A leaf: (label word).
            end = tokens.index(")", position)
            # A few leaves hold a space ("8 1\\/2"); slashes are escaped.
            word = " ".join(tokens[position:end]).replace("\\/", "/")
            position = end + 1
            return Tree(label, (), word)
        children = []
        while tokens[position] == "(":
            children.append(node())
        position += 1  # ')'.
        return Tree(label, tuple(children), None)

    tree = node()
    if position != len(tokens):
        raise ValueError(
            f"Trailing text after the tree in {text[:60]!r}...: "
            f"{' '.join(tokens[position:])!r}."
        )
    return tree


def leaves(tree):
    """The words of a tree, left to right."""
    if tree.word is not None:
        return [tree.word]
    return [word for child in tree.children for word in leaves(child)]


def phrases(tree):
    """Every subtree as `(words, label)`, the root first."""
    found = [(leaves(tree), tree.label)]
    for child in tree.children:
        found.extend(phrases(child))
    return found


def task_label(label, task):
    """The label of a 0-4 sentiment in `task`; None if SST-2 drops it."""
    if task == "sst5":
        return label
    if label == 2:
        return None
    return int(label > 2)


def load_sst(directory, split, task="sst5", all_phrases=False):
    """Returns `(sentences, labels)`: lists of word lists and int labels.

    Args:
        directory: the folder of `train.txt`, `dev.txt`, `test.txt`.
        split: `"train"`, `"validation"` or `"test"`.
        task: `"sst5"` or `"sst2"`.
        all_phrases: bool; True gives every unique phrase (word sequence)
            of the split's trees, with its label, instead of the roots.

    Examples:

        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with open(os.path.join(folder, "test.txt"), "w") as f:
        ...     _ = f.write("(3 (2 It) (4 (4 works) (2 .)))")
        >>> load_sst(folder, "test")
        ([['It', 'works', '.']], [3])
    """
    if split not in SPLIT_FILES:
        raise ValueError(
            f"Unknown SST split {split!r}. Expected one of "
            f"{tuple(SPLIT_FILES)}."
        )
    if task not in TASKS:
        raise ValueError(
            f"Unknown SST task {task!r}. Expected one of {tuple(TASKS)}."
        )
    path = os.path.join(directory, SPLIT_FILES[split])
    with open(path, encoding="utf-8") as file:
        trees = [parse_tree(line) for line in file if line.strip()]
    examples = []
    seen = set()
    for tree in trees:
        candidates = (
            phrases(tree) if all_phrases else [(leaves(tree), tree.label)]
        )
        for words, label in candidates:
            label = task_label(label, task)
            key = tuple(words)
            if label is None or (all_phrases and key in seen):
                continue
            seen.add(key)
            examples.append((words, label))
    return [w for w, _ in examples], [label for _, label in examples]


class Vocabulary:
    """Lower-cased words to ids; 0 is padding and 1 any unknown word.

    Examples:

        >>> vocabulary = Vocabulary([["It", "works"], ["it", "fails"]])
        >>> vocabulary.encode([["it", "works", "well"], ["fails"]]).tolist()
        [[3, 4, 1], [2, 0, 0]]
    """

    def __init__(self, sentences, min_count=1):
        counts = collections.Counter(
            word.lower() for sentence in sentences for word in sentence
        )
        words = sorted(w for w, c in counts.items() if c >= min_count)
        self.ids = {word: index + 2 for index, word in enumerate(words)}

    def __len__(self):
        return len(self.ids) + 2

    def encode(self, sentences):
        """Returns a `(n, longest)` int32 array of ids, 0-padded."""
        longest = max(len(sentence) for sentence in sentences)
        ids = np.full((len(sentences), longest), PADDING_ID, np.int32)
        for row, sentence in enumerate(sentences):
            ids[row, : len(sentence)] = [
                self.ids.get(word.lower(), UNKNOWN_ID) for word in sentence
            ]
        return ids


def sst_dataset(
    sentences,
    labels,
    vocabulary,
    num_classes,
    batch_size,
    shuffle=False,
    seed=0,
    static_shapes=False,
):
    """A `tf.data.Dataset` of `(token ids (batch, n), one-hot labels)`,
    each batch padded to its longest sentence; with `static_shapes`
    (TPUs), every batch padded to the longest sentence of all and a last
    partial batch left out, so that every batch has one static shape.

    Examples:

        >>> sentences = [["it", "works"], ["it", "fails", "badly"]]
        >>> data = sst_dataset(sentences, [4, 0], Vocabulary(sentences),
        ...                    num_classes=5, batch_size=2)
        >>> [(tuple(ids.shape), tuple(labels.shape)) for ids, labels in data]
        [((2, 3), (2, 5))]
    """
    ids = [
        vocabulary.encode([sentence])[0] if sentence else np.zeros(1, np.int32)
        for sentence in sentences
    ]
    data = tf.data.Dataset.from_generator(
        lambda: zip(ids, labels),
        output_signature=(
            tf.TensorSpec((None,), tf.int32),
            tf.TensorSpec((), tf.int64),
        ),
    )
    if shuffle:
        data = data.shuffle(len(ids), seed=seed, reshuffle_each_iteration=True)
    longest = max(len(sentence_ids) for sentence_ids in ids)
    data = data.padded_batch(
        batch_size,
        padded_shapes=((longest,) if static_shapes else (None,), ()),
        padding_values=(PADDING_ID, tf.constant(0, tf.int64)),
        drop_remainder=static_shapes,
    )
    data = data.map(
        lambda x, y: (x, tf.one_hot(y, num_classes)),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return data.prefetch(tf.data.AUTOTUNE)
